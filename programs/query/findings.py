"""What a validation finds: each :class:`Finding` is typed by its :class:`Kind`; errors invalidate a query,
warnings never do. The lists a result shows (errors, warnings, suggestions) are views of its findings."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import BaseModel, field_validator

__all__ = ["BLOCKING", "LINTS", "Finding", "Kind", "distinct", "messages", "one_line", "suggestions"]


class Kind(StrEnum):
    """What a finding is about; :attr:`is_error` tells the errors from the warnings."""

    # errors: the query is refused, or cannot run as written
    NOT_TEXT = "not text"  # not a string, undecodable bytes, a NUL, lone surrogates
    TOO_BIG = "too big"  # characters, tokens, nesting, set-operation terms
    EMPTY_QUERY = "empty query"
    SYNTAX = "syntax"
    REFUSED = "refused"  # the read-only policy, or the database, refused it (dangerous)
    MULTIPLE_STATEMENTS = "multiple statements"  # refused (dangerous)
    NOT_A_QUERY = "not a query"  # one statement, but no SELECT
    UNKNOWN_TABLE = "unknown table"
    UNKNOWN_ALIAS = "unknown alias"  # a qualifier that no source of the query level names
    UNKNOWN_COLUMN = "unknown column"
    AMBIGUOUS_COLUMN = "ambiguous column"
    COMPOUND_ORDER_BY = "compound order by"  # ORDER BY of UNION/INTERSECT/EXCEPT naming no result column
    UNGROUPED_AGGREGATE = "ungrouped aggregate"  # an aggregate in ORDER BY or WHERE of a query that has no group
    DATABASE_ERROR = "database error"  # the dry run failed
    NOT_ANALYSED = "not analysed"  # the validator itself failed
    # warnings: advice, the query stays valid
    UNCHECKED = "unchecked"  # names that could not be checked
    QUOTED_NAME = "quoted name"  # an unknown "name" that SQLite reads as a string
    SELECT_STAR = "select star"
    LIMIT_WITHOUT_ORDER = "limit without order"
    CARTESIAN_JOIN = "cartesian join"
    SLOW = "slow"  # the dry run timed out
    EMPTY_RESULT = "empty result"
    MISSING_VALUE = "missing value"  # a literal the column does not hold
    SHOWS_KEY = "shows key"  # the answer shows a key where the question asks for no id
    # warnings the lints give: a defect that needs no model to see
    # a join condition that compares a column with itself, or not the joined table
    ALWAYS_TRUE_JOIN = "always true join"
    FAN_OUT = "fan-out"  # COUNT/SUM of the one side's rows over a one-to-many join, without DISTINCT
    UNUSED_JOIN = "unused join"  # a one-to-many join whose table nothing reads: rows repeat and some drop out
    NEGATION_OVER_JOIN = "negation over join"  # "not" asked, but a row filter over a one-to-many join
    BOTH_VALUES = "both values"  # "both" asked, but one row must hold either value
    UNASKED_LIMIT = "unasked limit"  # a LIMIT the question does not ask for
    SUM_OF_KEY = "sum of key"  # SUM over an id column
    VALUE_NOT_ROW = "value not row"  # "which ... most" asked, but the answer is the extreme value, not its row
    OPAQUE_ID = "opaque id"  # a literal compared with a column of opaque ids, which the question does not quote
    DROPPED_FILTER = "dropped filter"  # a follow-up drops a filter of the query it continues
    UNASKED_FILTER = "unasked filter"  # a filter whose literal and column no word of the question (or hint) names
    OFF_KEY_JOIN = "off-key join"  # a foreign key joined to a key other than the one it references
    COUNTED_JOIN_KEY = "counted join key"  # COUNT of a foreign-key column over a join, without DISTINCT
    SUM_FOR_COUNT = "sum for count"  # "how many" asked, answered with SUM of a measure
    NAME_AS_KEY = "name as key"  # a name compared with a key column, where the table it references holds the name
    MONTH_NAME_DATE = "month name date"  # a date column matched with a month name, where it stores ISO dates
    UNLINKED_JOIN = "unlinked join"  # two tables joined that no chain of declared foreign keys links
    OUTER_COLUMN = "outer column"  # a subquery selects a column only an enclosing query's tables have
    REGROUPED = "regrouped"  # a reading the program grouped, from a draft with no group to count: not drafted
    REPAIRED = "repaired"  # a reading the program mended from a refused draft (a name, the dialect): not drafted

    @property
    def is_error(self) -> bool:
        """Whether a finding of this kind invalidates the query."""
        return self not in _WARNINGS


_WARNINGS = frozenset(
    {
        Kind.UNCHECKED, Kind.QUOTED_NAME, Kind.SELECT_STAR, Kind.LIMIT_WITHOUT_ORDER, Kind.CARTESIAN_JOIN,
        Kind.SLOW, Kind.EMPTY_RESULT, Kind.MISSING_VALUE, Kind.SHOWS_KEY, Kind.ALWAYS_TRUE_JOIN, Kind.FAN_OUT,
        Kind.UNUSED_JOIN, Kind.NEGATION_OVER_JOIN, Kind.BOTH_VALUES, Kind.UNASKED_LIMIT, Kind.SUM_OF_KEY,
        Kind.VALUE_NOT_ROW, Kind.OPAQUE_ID, Kind.DROPPED_FILTER, Kind.UNASKED_FILTER, Kind.OFF_KEY_JOIN,
        Kind.COUNTED_JOIN_KEY, Kind.SUM_FOR_COUNT, Kind.NAME_AS_KEY, Kind.MONTH_NAME_DATE, Kind.UNLINKED_JOIN,
        Kind.OUTER_COLUMN, Kind.REGROUPED, Kind.REPAIRED,
    }
)  # fmt: skip


LINTS = (  # the kinds the lints give: a defect that needs no model to see (lints.py, join_lints.py, question_lints.py,
    # filter_lints.py)
    Kind.ALWAYS_TRUE_JOIN, Kind.CARTESIAN_JOIN, Kind.FAN_OUT, Kind.UNUSED_JOIN, Kind.NEGATION_OVER_JOIN,
    Kind.BOTH_VALUES, Kind.UNASKED_LIMIT, Kind.SUM_OF_KEY, Kind.VALUE_NOT_ROW, Kind.OPAQUE_ID, Kind.DROPPED_FILTER,
    Kind.UNASKED_FILTER, Kind.OFF_KEY_JOIN, Kind.COUNTED_JOIN_KEY, Kind.SUM_FOR_COUNT, Kind.NAME_AS_KEY,
    Kind.MONTH_NAME_DATE, Kind.UNLINKED_JOIN, Kind.OUTER_COLUMN,
)
# Findings that the result cannot be right as it stands: a reading with one never beats a reading without.
BLOCKING = frozenset({Kind.CARTESIAN_JOIN, Kind.ALWAYS_TRUE_JOIN, Kind.OFF_KEY_JOIN, Kind.NAME_AS_KEY,
                      Kind.MONTH_NAME_DATE, Kind.OUTER_COLUMN})


class Finding(BaseModel, frozen=True):
    """One thing found: its kind, its message, the SQL it is about as written ("" when none), and hints."""

    kind: Kind
    message: str
    where: str = ""
    suggestions: tuple[str, ...] = ()  # empty hints are dropped

    @field_validator("suggestions")
    @classmethod
    def _drop_empty(cls, hints: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(hint for hint in hints if hint)

    @property
    def is_error(self) -> bool:
        """Whether this finding invalidates the query (by its kind)."""
        return self.kind.is_error


def distinct(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` in order, less each that repeats an earlier one's message and brings no hint not given before
    (so the message and hint lists stay the same)."""
    said: set[tuple[bool, str]] = set()
    hints: set[str] = set()
    kept = []
    for finding in findings:
        if (finding.is_error, finding.message) in said and hints.issuperset(finding.suggestions):
            continue
        kept.append(finding)
        said.add((finding.is_error, finding.message))
        hints.update(finding.suggestions)
    return kept


def messages(findings: Iterable[Finding], *, errors: bool) -> list[str]:
    """The messages of the errors (or of the warnings), in order of first mention, each once."""
    return list(dict.fromkeys(f.message for f in findings if f.is_error == errors))


def suggestions(findings: Iterable[Finding]) -> list[str]:
    """Every finding's hints, in order of first mention, each once."""
    return list(dict.fromkeys(hint for f in findings for hint in f.suggestions))


def one_line(text: str) -> str:
    """``text`` with every run of whitespace, newlines included, made one space."""
    return " ".join(text.split())
