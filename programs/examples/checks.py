"""The checks a pair or a note passes before it is stored; a refusal is an :class:`ExampleError` naming the fix.

A pair's question must be a question (:func:`~..answer.check_question`). Its SQL must pass the
database's validator (it parses in the database's dialect, is one read-only statement, names only
tables and columns of the catalog, and its dry run succeeds), parse there as a query, and then run
read-only to the end (up to :data:`RUN_TIMEOUT_S`). A source without a database has nothing to run
the SQL on: the pair is then checked statically, and :attr:`Verified.checked` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.answer import check_question
from text2sql_dspy.programs.errors import ExampleError, QuestionError
from text2sql_dspy.programs.source import DataSource

RUN_TIMEOUT_S = 30.0
MAX_NOTE_CHARS = 2000
STATIC_ONLY = "validated against the catalog only (no database to run it on)"


@dataclass(frozen=True)
class Verified:
    """A pair that passed every check: the cleaned question and SQL, and how the SQL was checked."""

    question: str
    sql: str
    checked: str


def verify_pair(source: DataSource, question: object, sql: object) -> Verified:
    """``question`` and ``sql`` as the store keeps them, or :class:`ExampleError` with the reason and the fix."""
    if not isinstance(question, str) or not question.strip():
        raise ExampleError("pair refused: the question is empty. Give the question the SQL answers.")
    try:
        question = check_question(question)
    except QuestionError as exc:
        raise ExampleError(f"pair refused: {exc}") from None
    if not isinstance(sql, str) or not sql.strip():
        raise ExampleError("pair refused: the SQL is empty. Give the one SELECT that answers the question.")
    result = source.validator.validate(sql)
    if result.dangerous:
        raise ExampleError(
            f"pair refused, the SQL is not a read: {'; '.join(result.errors)}. Store the "
            "SELECT that answers the question."
        )
    if not result.valid:
        advice = f" ({'; '.join(result.suggestions)})" if result.suggestions else ""
        raise ExampleError(
            f"pair refused, the SQL is invalid for database {source.db_id!r}: {'; '.join(result.errors)}{advice}. "
            "Fix the SQL, or pass --db for the database it was written for."
        )
    _require_query(result.sql, source.dialect)
    return Verified(question, result.sql, _run(source, result.sql))


def verify_note(text: object) -> str:
    """A note's text, stripped, or :class:`ExampleError` if it is empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise ExampleError(
            "note refused: it is empty. Write what a term means here, e.g. "
            "'a failed login is a login_attempts row with success = 0'."
        )
    text = " ".join(text.split())
    if len(text) > MAX_NOTE_CHARS:
        raise ExampleError(f"note refused: it is {len(text):,} characters; the limit is {MAX_NOTE_CHARS:,}. "
                           "Shorten it.")
    return text


def _require_query(sql: str, dialect: str) -> None:
    """The validator's verdict, checked once more on sqlglot's own tree: exactly one query."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        raise ExampleError(f"pair refused, the SQL does not parse as {dialect} SQL: {str(exc)[:300]}. "
                           "Fix the SQL.") from None
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        raise ExampleError("pair refused, the SQL is not a read. Store the one SELECT that answers the question.")


def _run(source: DataSource, sql: str) -> str:
    """Run ``sql`` read-only to the end; how it went, or :class:`ExampleError` if it failed."""
    if source.database is None:
        return STATIC_ONLY
    outcome = source.database.execute(sql, timeout_s=RUN_TIMEOUT_S)
    if outcome.timed_out:
        raise ExampleError(
            f"pair refused, the SQL did not finish within {RUN_TIMEOUT_S:g}s on database {source.db_id!r}. "
            "Store a query that runs in reasonable time."
        )
    if not outcome.ok:
        raise ExampleError(
            f"pair refused, the SQL fails to run on database {source.db_id!r}: {outcome.error}. Fix the SQL."
        )
    rows = f"{len(outcome.rows)}{'+' if outcome.truncated else ''} row{'' if len(outcome.rows) == 1 else 's'}"
    return f"ran read-only on {source.dialect}: {rows}"
