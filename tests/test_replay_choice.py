"""V2's choice replayed on recorded readings (benchmarks/replay_choice.py), as a table: the first draft where the
early model is sure of it, none where the run stopped at one draft and the verifier would sample, else the reading
the full model prefers, a blocked one never before a clean one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.scripts import script
from tests.test_verifier import constant, verifier
from text2sql_dspy.programs.agents.verifier import FULL
from text2sql_dspy.programs.answer import Preview, Reading

replay = script("benchmarks/replay_choice.py")

SUSPENDED = "SELECT count(*) FROM users WHERE status = 'suspended'"
EVERYONE = "SELECT count(*) FROM users"
CROSSED = "SELECT count(*) FROM users u JOIN blocks b ON u.id = u.id"  # always true: blocked by its finding


def record(*queries: tuple[str, int], drafts: int) -> dict:
    """An answer whose first query was the greedy draft; each query a reading that returned its number of rows."""
    readings = [Reading(sql=q, valid=True, votes=1, preview=Preview(columns=["n"], rows=[[1]] * n, row_count=n))
                for q, n in queries]
    return {"question": "How many users are suspended?", "sql": queries[0][0], "drafts": drafts,
            "readings": [r.model_dump(mode="json") for r in readings],
            "steps": [{"kind": "draft", "sql": queries[0][0]}]}


FEWER_ROWS = replace(verifier(early=0.5), full=constant(FULL, 0.5, rows=-3.0))  # prefers the smaller count


@pytest.mark.parametrize(("found", "queries", "drafts", "chosen"), [
    (verifier(early=0.95), [(SUSPENDED, 1)], 1, SUSPENDED),  # sure of the first draft: it answers alone
    (verifier(early=0.5), [(SUSPENDED, 1)], 1, None),  # would sample; the run drew nothing more
    (FEWER_ROWS, [(EVERYONE, 3), (SUSPENDED, 1)], 3, SUSPENDED),  # the full model's preference, in either order
    (FEWER_ROWS, [(SUSPENDED, 1), (EVERYONE, 3)], 3, SUSPENDED),
    (FEWER_ROWS, [(CROSSED, 1), (EVERYONE, 3)], 3, EVERYONE),  # the cross join is blocked, however likely
])
def test_the_replayed_choice(found, queries: list, drafts: int, chosen: str | None, tiny_db: Path) -> None:
    assert replay.choice(record(*queries, drafts=drafts), found, "", tiny_db) == chosen
