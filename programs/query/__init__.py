"""A query: the SQL taken out of a model's reply, checked against the catalog by the validator's rules, mended
where only one reading exists, described in words, and its result compared with another's."""
