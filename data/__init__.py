"""The bundled ``saas`` dataset: Spider-format ``train/dev/test.json`` and its database builder.

Installed as ``text2sql_dspy.data``; the schema files it builds from are in ``schemas/saas``
beside it (``text2sql_dspy/schemas`` once installed).
"""
