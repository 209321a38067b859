"""What a database is: its tables, columns, keys and comments (the catalog), the documentation people keep for
it, a few sample values per column, and the index of the values its name and category columns hold."""
