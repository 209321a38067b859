"""What a follow-up's query keeps, adds and drops of the query before it: the verifier's features of a conversation.

A follow-up is most often the query before it, changed a little: a filter added, a column swapped, an order put on.
A reading that keeps nothing of the query before it, drops its filters or reads other tables has left the
conversation; one that changes nothing has not answered the new turn. The features read both queries' parts
(:func:`~..query.difference.parts`, off their sqlglot trees): pure functions of the two texts, no model call, all 0
for a question with no query before it.
"""

from __future__ import annotations

from text2sql_dspy.programs.query.difference import READS, ROW_FILTER, parts

__all__ = ["FOLLOW_UP", "follow_up_features"]

FOLLOW_UP = ("follow-up", "follow-up: unchanged", "follow-up: kept", "follow-up: added", "follow-up: filters dropped",
             "follow-up: tables dropped")


def follow_up_features(sql: str, previous: str, dialect: str = "sqlite") -> dict[str, float]:
    """The features of :data:`FOLLOW_UP` for ``sql`` drafted after ``previous`` ("" for a first question): whether
    there is a query before; whether ``sql`` has all its parts and no other; the share of its parts kept; how many
    parts ``sql`` adds; the share of its filters and of its tables ``sql`` drops. A follow-up either of whose queries
    does not parse has the first feature only."""
    found = dict.fromkeys(FOLLOW_UP, 0.0)
    if not previous.strip():
        return found
    found["follow-up"] = 1.0
    before, after = parts(previous, dialect), parts(sql, dialect)
    if not before or not after:
        return found
    kept = [p for p in before if p in after]
    found["follow-up: unchanged"] = float(set(before) == set(after))
    found["follow-up: kept"] = len(kept) / len(before)
    found["follow-up: added"] = float(sum(p not in before for p in after))
    found["follow-up: filters dropped"] = _dropped(before, after, ROW_FILTER)
    found["follow-up: tables dropped"] = _dropped(before, after, READS)
    return found


def _dropped(before: list[str], after: list[str], kind: str) -> float:
    """The share of ``before``'s parts of ``kind`` that ``after`` lacks (0 where ``before`` has none)."""
    mine = [p for p in before if p.startswith(kind)]
    return sum(p not in after for p in mine) / len(mine) if mine else 0.0
