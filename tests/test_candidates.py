"""Result groups (``candidates.group_by_result``): one representative per result, its votes the group's, and the
cleanest query of the group as its representative."""

from __future__ import annotations

import pytest

from text2sql_dspy.programs.agents.candidates import Candidate, group_by_result
from text2sql_dspy.programs.agents.drafting import Draft
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.validator import ValidationResult

ROWS = {"a": [(1,)], "b": [(1,)], "c": [(2,)], "d": [(1,)]}  # a, b and d return the same rows


def candidate(name: str, *kinds: Kind) -> Candidate:
    findings = [Finding(kind=k, message=k.value) for k in kinds]
    return Candidate(Draft(sql=name, confidence=0.5), ValidationResult.of(findings, name), p=0.1 * len(name))


def run(sql: str) -> QueryResult:
    return QueryResult(columns=["x"], rows=ROWS[sql])


@pytest.mark.parametrize(
    ("drafted", "representatives"),
    [
        ([candidate("a"), candidate("b"), candidate("c")], ["a", "c"]),  # equals: the first drafted
        ([candidate("a", Kind.FAN_OUT), candidate("b"), candidate("c")], ["b", "c"]),  # the clean one
        ([candidate("a", Kind.FAN_OUT, Kind.UNUSED_JOIN), candidate("b", Kind.FAN_OUT), candidate("d")], ["d"]),
        ([candidate("a", Kind.OFF_KEY_JOIN), candidate("b", Kind.FAN_OUT, Kind.UNUSED_JOIN)], ["b"]),  # blocking first
        ([candidate("a", Kind.OUTER_COLUMN), candidate("b", Kind.FAN_OUT)], ["b"]),  # the outer row's column blocks
        ([candidate("a", Kind.EMPTY_RESULT), candidate("b", Kind.EMPTY_RESULT)], ["a"]),  # not a lint: equals
    ],
)
def test_a_groups_representative_is_its_cleanest_query(drafted: list[Candidate], representatives: list[str]) -> None:
    groups = group_by_result(run, drafted)
    assert sorted(g.sql for g in groups) == representatives
    assert sum(g.votes for g in groups) == len(drafted)


def test_the_representative_keeps_its_own_validation_and_probability() -> None:
    [group] = group_by_result(run, [candidate("a", Kind.FAN_OUT), candidate("b")])
    assert group.sql == "b" and group.validation.findings == [] and group.votes == 2
    assert group.p == candidate("b").p
