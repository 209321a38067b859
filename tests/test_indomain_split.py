"""The in-domain split (benchmarks/make_indomain_split.py): wordings of one gold query stay on one side."""

from __future__ import annotations

import pytest

from tests.scripts import script

split_module = script("benchmarks/make_indomain_split.py")


@pytest.mark.parametrize(("a", "b", "same"), [
    ("SELECT count(*) FROM singer", "select  COUNT(*)\nfrom singer", True),
    ("SELECT name FROM singer", "SELECT name FROM singer WHERE age > 30", False),
    ("SELECT name FROM singer WHERE", "select name   from singer where", True),  # unparsable: spacing and case folded
])
def test_gold_key(a: str, b: str, same: bool) -> None:
    assert (split_module.gold_key(a) == split_module.gold_key(b)) is same


def test_half_of_each_databases_gold_queries_with_their_wordings_on_one_side() -> None:
    examples = [{"db_id": db, "question": f"{db} q{i} wording {w}", "query": f"SELECT {i} FROM t"}
                for db, n in (("a", 6), ("b", 3)) for i in range(n) for w in (1, 2)]
    train, test = split_module.split(examples, seed=3)
    key = lambda e: (e["db_id"], e["query"])  # noqa: E731
    assert {key(e) for e in train}.isdisjoint({key(e) for e in test})
    assert sorted(e["question"] for e in train + test) == sorted(e["question"] for e in examples)
    # 3 of 6 and 1 of 3 queries, two wordings each
    assert [sum(e["db_id"] == db for e in train) for db in "ab"] == [6, 2]
    assert [e["db_id"] for e in test[:4]] == ["a", "b", "a", "b"]  # the databases in turn
    assert split_module.split(examples, seed=3) == (train, test)
