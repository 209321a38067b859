"""A user's question, checked before any model sees it."""

from __future__ import annotations

from typing import Any

from text2sql_dspy.programs.errors import QuestionError

__all__ = ["MAX_QUESTION_CHARS", "check_question"]

MAX_QUESTION_CHARS = 4000


def check_question(question: Any) -> str:
    """The question, stripped; :class:`QuestionError` if it is empty, not UTF-8, or too long to be a question."""
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty. Ask something about the data, e.g. 'How many users are blocked?'")
    question = question.strip()
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:  # e.g. argv bytes from a non-UTF-8 terminal, kept as lone surrogates
        raise QuestionError(
            f"the question holds bytes that are not valid UTF-8 (character {exc.start + 1}). Retype it, or save it as UTF-8."
        ) from None
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. Shorten it."
        )
    return question
