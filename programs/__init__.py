"""text2sql-dspy programs: the LM runtime (``llm/``), the database world (``db/``), table retrieval
(``retrieval/``) and the programs themselves (``agents/``)."""
