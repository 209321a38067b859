"""The SQL inside a model's reply: fences, tags, prose and DSPy field markers removed.

:func:`clean_sql` is what every caller runs on a reply before it validates or executes it. Fences
and prose are markdown and English, so they are handled as text; where statement boundaries
matter (prose after a ``;``) sqlglot's tokenizer decides. Text that may hide a second statement is
kept, so that the read-only policy refuses it.
"""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from text2sql_dspy.programs.db.policy import ALARM_WORDS, QUERY_START_WORDS, SQL_START_WORDS, WRITE_KEYWORDS
from text2sql_dspy.programs.llm.fields import FIELD_OPEN

__all__ = ["clean_sql"]

_TAG_LINES = frozenset({"sql", "sqlite", "sql:", "query:", "sql query:"})


def clean_sql(text: str) -> str:
    """The SQL inside ``text``: markdown fences, a ``sql`` tag, prose around it, a DSPy field marker
    (``[[ ## completed ## ]]``) and what follows it, and trailing ``;`` removed.

    Fences and prose are markdown/English, so they are handled as text; where statement
    boundaries matter (prose after a ``;``) sqlglot's tokenizer decides.
    """
    if not isinstance(text, str):
        return ""
    body = text.replace("\r\n", "\n").replace("\r", "\n")
    body = body.split(FIELD_OPEN, 1)[0].strip()  # a field marker after the SQL; SQLite would read a [quoted] alias
    body = _unfence(body)
    body = _drop_leading_prose(body)
    body = _drop_trailing_prose(body)
    body = body.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body


def _unfence(body: str) -> str:
    start = body.find("```")
    if start < 0:
        if len(body) > 1 and body.startswith("`") and body.endswith("`") and "`" not in body[1:-1]:
            inner = body[1:-1].strip()
            if _first_word(inner) in SQL_START_WORDS:
                return inner
        return body
    after = body[start + 3 :]
    newline = after.find("\n")
    first_line = after if newline < 0 else after[:newline]
    tag = first_line.strip()
    # "```sql" (a language tag alone on the fence line) vs "```SELECT 1```" (code on it)
    if tag and len(tag.split()) == 1 and _first_word(tag) not in SQL_START_WORDS and "`" not in tag:
        after = "" if newline < 0 else after[newline + 1 :]
    elif not tag and newline >= 0:
        after = after[newline + 1 :]
    end = after.find("```")
    return (after if end < 0 else after[:end]).strip()


def _first_word(line: str) -> str:
    words = line.strip().lstrip("(").split(None, 1)
    return words[0].upper().rstrip(";") if words else ""


def _drop_leading_prose(body: str) -> str:
    """Drop lines before the first ``SELECT``/``WITH`` line if they read as prose, not statements."""
    lines = body.split("\n")
    if lines and lines[0].strip().lower() in _TAG_LINES:
        lines = lines[1:]
    if not lines:
        return ""
    first = lines[0].strip()
    # "SQL: SELECT ..." / "Query: SELECT ..." on one line
    head, sep, rest = first.partition(":")
    if (sep and len(head.split()) <= 3 and _first_word(rest) in QUERY_START_WORDS
            and _first_word(head) not in SQL_START_WORDS):
        lines[0] = rest.strip()
        return "\n".join(lines)
    for i, line in enumerate(lines):
        word = _first_word(line)
        if word in QUERY_START_WORDS:
            return "\n".join(lines[i:])
        if word in WRITE_KEYWORDS:
            break  # a statement, not prose: keep everything for the policy check
    return "\n".join(lines)


def _drop_trailing_prose(body: str) -> str:
    """Cut English after the query: after a top-level ``;``, or after a blank line."""
    if ";" not in body:
        return _drop_trailing_paragraphs(body)
    try:
        tokens = Dialect.get_or_raise("sqlite").tokenize(body)
    except Exception:  # prose with apostrophes, unterminated strings: leave it to the parser
        return body
    for i, token in enumerate(tokens):
        if token.token_type != TokenType.SEMICOLON:
            continue
        rest = tokens[i + 1 :]
        rest_words = {t.text.upper() for t in rest}
        if not rest:
            return body[: token.start]  # only comments follow: drop them with the ';'
        if rest[0].text.upper() not in SQL_START_WORDS and rest[0].token_type == TokenType.VAR and not (
            rest_words & ALARM_WORDS
        ):
            return body[: token.start]
        return body  # another statement follows: the policy check refuses it
    return _drop_trailing_paragraphs(body)


def _drop_trailing_paragraphs(body: str) -> str:
    """Drop paragraphs after a blank line that start like a sentence ("This query ...", "Note: ...")."""
    paragraphs = body.split("\n\n")
    if len(paragraphs) > 1:
        kept = [paragraphs[0]]
        for para in paragraphs[1:]:
            word = para.strip().split(None, 1)[0] if para.strip() else ""
            bare = word.rstrip(":,.")
            if (bare[:1].isupper() and bare[1:].islower() and bare.upper() not in SQL_START_WORDS
                    and _is_plain_word(word)):
                break
            kept.append(para)
        return "\n\n".join(kept)
    return body


def _is_plain_word(word: str) -> bool:
    """True for an English-looking word the tokenizer reads as a bare name, not a SQL keyword."""
    try:
        tokens = Dialect.get_or_raise("sqlite").tokenize(word.rstrip(":,."))
    except Exception:
        return False
    return len(tokens) == 1 and tokens[0].token_type == TokenType.VAR

