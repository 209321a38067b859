"""The example store: verified question -> SQL pairs and short notes, kept per database (``text2sql learn``)."""
