"""The database world: the catalog (tables, columns, keys, sample values), read-only connections, the validator."""
