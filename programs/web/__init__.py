"""``text2sql serve``: a web page and a JSON API for asking a database questions (see :mod:`.app`)."""
