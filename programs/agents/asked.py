"""What a question asks for, read against what its query does: the verifier's features that need both texts.

Each feature is 1.0 where the question asks for something the query's parse (sqlglot) shows no sign of doing, else
0.0; ``named_share`` is the share of the query's column names that some word of the question names. Pure functions
over the question and the AST; they say nothing of whether the result is right, only that the two disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

__all__ = ["ASKED", "asked_features"]

ASKED = ("unmet: extreme", "unmet: each", "unmet: negation", "unmet: number", "unmet: distinct", "unmet: order",
         "unmet: average", "named_share")

WORD = re.compile(r"[a-z0-9]+")
EXTREME = re.compile(r"\b(most|least|highest|lowest|largest|smallest|biggest|fewest|greatest|maximum|minimum|"
                     r"max|min|top|oldest|youngest|earliest|latest|longest|shortest)\b", re.IGNORECASE)
EACH = re.compile(r"\b(each|per|for every|every one of|by each)\b", re.IGNORECASE)
NEGATION = re.compile(r"\b(not|never|without|no|none|except|other than|excluding)\b|n't\b", re.IGNORECASE)
DISTINCT = re.compile(r"\b(distinct|different|unique)\b", re.IGNORECASE)
ORDER = re.compile(r"\b(order|sorted|sort|ascending|descending|alphabetical(ly)?|ranked)\b", re.IGNORECASE)
AVERAGE = re.compile(r"\b(average|mean)\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def asked_features(question: str, sql: str) -> dict[str, float]:
    """The features of :data:`ASKED` for ``question`` and its query ``sql``; all 0 (``named_share`` 1) where ``sql``
    does not parse, so that a parse failure, which the validator reports, is not counted twice."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        tree = None
    if tree is None:
        return {name: 1.0 if name == "named_share" else 0.0 for name in ASKED}
    checks: dict[str, tuple[re.Pattern[str], Callable[[exp.Expression], bool]]] = {
        "unmet: extreme": (EXTREME, _ranks),
        "unmet: each": (EACH, _groups),
        "unmet: negation": (NEGATION, _negates),
        "unmet: distinct": (DISTINCT, _distinct),
        "unmet: order": (ORDER, lambda t: t.find(exp.Order) is not None),
        "unmet: average": (AVERAGE, lambda t: t.find(exp.Avg) is not None),
    }
    found = {name: float(bool(pattern.search(question)) and not does(tree)) for name, (pattern, does) in checks.items()}
    found["unmet: number"] = float(bool(_numbers(question) - _literals(tree)))
    found["named_share"] = _named_share(question, tree)
    return found


def _ranks(tree: exp.Expression) -> bool:
    return any(tree.find(kind) is not None for kind in (exp.Order, exp.Max, exp.Min))


def _groups(tree: exp.Expression) -> bool:
    return tree.find(exp.Group) is not None or tree.find(exp.Window) is not None


def _negates(tree: exp.Expression) -> bool:
    kinds = (exp.Not, exp.NEQ, exp.Except, exp.Is)
    return any(tree.find(kind) is not None for kind in kinds)


def _distinct(tree: exp.Expression) -> bool:
    return tree.find(exp.Distinct) is not None or tree.find(exp.Group) is not None


def _numbers(question: str) -> set[str]:
    return {_number(n) for n in NUMBER.findall(question)}


def _literals(tree: exp.Expression) -> set[str]:
    """The numbers the query writes, as numbers and inside strings ('2014-05-01' holds 2014, 5 and 1)."""
    found: set[str] = set()
    for literal in tree.find_all(exp.Literal):
        found.update(_number(n) for n in re.findall(r"\d+(?:\.\d+)?", literal.this))
    return found


def _number(text: str) -> str:
    return str(float(text)).removesuffix(".0")


def _named_share(question: str, tree: exp.Expression) -> float:
    """The share of the query's distinct column names that a word of the question names; 1.0 where the query names
    no column. A column is named where a word names one of its parts (``song_release_year``: song, release, year;
    ``OwnerName``: owner, name), whole or as a prefix of three letters or more (``ages`` names ``age``)."""
    words = set(WORD.findall(question.lower()))
    columns = {c.name for c in tree.find_all(exp.Column) if c.name and c.name != "*"}
    if not columns:
        return 1.0

    def named(column: str) -> bool:
        parts = [p.lower() for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", column) if p]
        return any(_names(word, part) for part in (column.lower(), *parts) for word in words)

    return sum(named(c) for c in columns) / len(columns)


def _names(word: str, part: str) -> bool:
    short, long = sorted((word, part), key=len)
    return word == part or (len(short) >= 3 and len(long) - len(short) <= 3 and long.startswith(short))
