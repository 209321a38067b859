"""Drafting: from a question and table schemas to one SQL query."""

import dspy


# Field order is prompt order: the schemas come first, so every question on one database shares
# the prompt prefix up to its question, which the local engine's KV cache serves. The reply is the
# SQL alone: its confidence comes from the model's token probabilities, not from more text.
class DraftSQL(dspy.Signature):
    """Write one read-only SQL query that answers the question over the given tables.

    Use only tables and columns that appear in the schemas, and the dialect named there.
    Match filter values to the stored values shown in the facts and schema comments (case and spelling);
    follow the user's hint where one is given.
    The values in schema comments are samples of what a column holds, not filters: filter on a value only where the
    question or hint names it.
    Return exactly the columns the question asks for. Never modify data.
    """

    table_schemas: str = dspy.InputField(desc="CREATE TABLE statements; comments give descriptions and stored values")
    facts: str = dspy.InputField(
        desc="the user's hint on the question's terms, and stored values like its words; may be empty", default="")
    question: str = dspy.InputField(desc="the user's question, in natural language")
    hints: str = dspy.InputField(desc="feedback on an earlier attempt, or empty", default="")
    sql: str = dspy.OutputField(desc="a single SELECT statement, without markdown")


class EditSQL(dspy.Signature):
    """Change the previous query so that it answers the follow-up question.

    The follow-up continues the conversation: keep every table, join and condition of the previous query that the
    follow-up does not change, and change only what it asks (add or change a filter, show other columns, group,
    order, count). Write a new query only when the follow-up asks about something else entirely.
    Use only tables and columns that appear in the schemas, and the dialect named there.
    Match filter values to the stored values shown in the facts and schema comments (case and spelling).
    The values in schema comments are samples of what a column holds, not filters: add a filter on a value only
    where the follow-up names it.
    Never modify data.
    """

    table_schemas: str = dspy.InputField(desc="CREATE TABLE statements; comments give descriptions and stored values")
    facts: str = dspy.InputField(desc="the conversation so far, and stored values like the question's words",
                                 default="")
    previous_sql: str = dspy.InputField(desc="the query that answered the question before this one")
    question: str = dspy.InputField(desc="the follow-up question")
    hints: str = dspy.InputField(desc="feedback on an earlier attempt, or empty", default="")
    sql: str = dspy.OutputField(desc="the changed query: a single SELECT statement, without markdown")


class ColumnsFirstSQL(dspy.Signature):
    """Name the tables and columns the answer needs, then write one read-only SQL query that answers the question
    over the given tables.

    Use only tables and columns that appear in the schemas, and the dialect named there.
    Match filter values to the stored values shown in the facts and schema comments (case and spelling);
    follow the user's hint where one is given.
    Return exactly the columns the question asks for. Never modify data.
    """

    table_schemas: str = dspy.InputField(desc="CREATE TABLE statements; comments give descriptions and stored values")
    facts: str = dspy.InputField(
        desc="the user's hint on the question's terms, and stored values like its words; may be empty", default="")
    question: str = dspy.InputField(desc="the user's question, in natural language")
    columns: str = dspy.OutputField(desc="table.column for each column the query reads, comma-separated; no SQL")
    sql: str = dspy.OutputField(desc="a single SELECT statement, without markdown")
