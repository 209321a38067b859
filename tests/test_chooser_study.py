"""The chooser study (benchmarks/chooser_study.py): how results stand to one another, as a table; a pairwise ranker
that learns what separates one question's right result from its wrong ones; and the study on the committed ensemble
sample and a verifier fixture, with held-out sets refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import REPO, script
from tests.test_fit_verifier import fixture
from text2sql_dspy.programs.answer import Preview, Reading
from text2sql_dspy.programs.errors import ConfigurationError

study = script("benchmarks/chooser_study.py")
SAMPLE = REPO / "tests" / "data" / "ensemble-sample"


def reading(columns: list[str], rows: list[list], row_count: int | None = None, truncated: bool = False) -> Reading:
    preview = Preview(columns=columns, rows=rows, row_count=len(rows) if row_count is None else row_count,
                      truncated=truncated)
    return Reading(sql=f"SELECT {', '.join(columns) or 1}", valid=True, preview=preview)


NAMES = reading(["name"], [["Ann"], ["Bo"]])
NAMES_AND_IDS = reading(["id", "name"], [[1, "Ann"], [2, "Bo"]])
OTHER_NAMES = reading(["id", "name"], [[1, "Cy"], [2, "Di"]])
TWICE = reading(["name"], [["Ann"], ["Ann"], ["Bo"]])
EMPTY = reading(["name"], [])
CUT = reading(["name"], [["Ann"], ["Ann"], ["Bo"]], row_count=900, truncated=True)
NONE = dict.fromkeys(study.RELATIONS, 0.0)


@pytest.mark.parametrize(("readings", "expected"), [
    ([NAMES, NAMES_AND_IDS], [{**NONE, "narrows another": 1.0}, {**NONE, "widens another": 1.0}]),
    ([NAMES, OTHER_NAMES], [NONE, NONE]),  # other rows: no projection of one another
    ([NAMES, TWICE], [{**NONE, "dedups another": 1.0}, {**NONE, "duplicates another": 1.0}]),
    ([NAMES, CUT], [NONE, NONE]),  # a preview cut short says nothing of duplicates
    ([EMPTY, NAMES], [NONE, NONE]),  # a result of nothing stands to none
    ([NAMES], [NONE]),
])
def test_relations(readings: list[Reading], expected: list[dict]) -> None:
    assert study.relations(readings) == expected


def test_a_pairwise_ranker_learns_what_separates_one_questions_results() -> None:
    # Right results have more "agreement" than the wrong ones of their own question, whatever their level overall.
    questions = [[({"agreement": base + 0.2, "tokens": 5.0}, True), ({"agreement": base, "tokens": 5.0}, False)]
                 for base in (0.0, 0.3, 0.6, 0.9)]
    score = study.pairwise_model(questions, ("agreement", "tokens"))
    assert score({"agreement": 0.5, "tokens": 1.0}) > score({"agreement": 0.4, "tokens": 9.0})


def test_folds_hold_out_whole_databases_and_differ_by_draw() -> None:
    dbs = [f"db{i % 7}" for i in range(40)]
    for seed in (0, 1):
        parts = study.folds(dbs, seed)
        assert sorted(i for _, test in parts for i in test) == list(range(40))
        for train, test in parts:
            assert not {dbs[i] for i in train} & {dbs[i] for i in test}
    assert study.folds(dbs, 0) != study.folds(dbs, 1)


def test_the_study_prints_each_design_against_shipped(tiny_db: Path, tmp_path: Path, capsys) -> None:
    singles, turns = fixture(tiny_db, tmp_path)
    assert study.main(["--generators", str(SAMPLE / "spider-train.jsonl.gz"),
                       "--generators", str(SAMPLE / "cosql-train.jsonl.gz"), "--samples", str(singles),
                       "--samples", str(turns), "--data-root", str(tmp_path), "--draws", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("generators: ") and out[0].endswith("2 draws of folds")
    policies = [line for line in out if line.startswith("  budget")]
    assert len(policies) == 3
    shipped = [line for line in out if line.strip().startswith("shipped ")]
    assert len(shipped) == 4 and all("0 gained, 0 lost, p = 1.00" in line for line in shipped)
    samples = out.index(next(line for line in out if line.startswith("samples: ")))
    assert [line.split()[0] for line in out[samples + 1:]] == ["shipped", "+", "+", "+", "pairwise", "pairwise"]
    assert len(out) == 1 + 3 * (1 + len(study.DESIGNS)) + 1 + len(study.DESIGNS)


def test_the_study_refuses_a_held_out_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="held-out"):
        study.main(["--samples", str(tmp_path / "spider-public" / "x.jsonl.gz")])
