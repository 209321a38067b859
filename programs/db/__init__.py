"""Connections: where a database lives, opening it read-only on each engine, and the read-only policy a query
must pass. What the database holds is :mod:`..catalog`'s; reading and checking a query is :mod:`..query`'s."""
