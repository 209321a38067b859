"""Table retrieval: which tables of the catalog a question needs (keyword, semantic, hybrid)."""
