"""Drafting: from a question and table schemas to one SQL query."""

import dspy


# Field order is prompt order: schemas come first, so questions on the same tables share a
# prompt prefix that the local engine's KV cache can reuse.
class DraftSQL(dspy.Signature):
    """Write one read-only SQL query that answers the question over the given tables.

    Use only tables and columns that appear in the schemas, and the dialect named there.
    Match filter values to the stored values shown in the schema comments (case and spelling).
    Return exactly the columns the question asks for. Never modify data.
    """

    table_schemas: str = dspy.InputField(desc="CREATE TABLE statements; comments give descriptions and stored values")
    question: str = dspy.InputField(desc="the user's question, in natural language")
    hints: str = dspy.InputField(desc="feedback on an earlier attempt, or empty", default="")
    sql: str = dspy.OutputField(desc="a single SELECT statement, without markdown")
    explanation: str = dspy.OutputField(desc="one sentence: how the query answers the question")
    confidence: float = dspy.OutputField(desc="how sure you are that the query is right, from 0.0 to 1.0")
