"""The ensemble's fit on collected answers: readings grouped by generator subsets, the policy replayed and chosen,
the files it writes (twice the same bytes), the compile that builds and ships them, and held-out sets refused."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from text2sql_dspy.optimize import ensemble_fit
from text2sql_dspy.optimize.collected import collected, refuse_held_out
from text2sql_dspy.optimize.compile_ensemble import EnsembleConfig, compile_ensemble, ship
from text2sql_dspy.programs.agents.ensemble import FIRST, Ensemble
from text2sql_dspy.programs.agents.verifier import Verifier
from text2sql_dspy.programs.answer import Answer, Metrics, Preview, Reading, Status, Step
from text2sql_dspy.programs.errors import ConfigurationError

RIGHT, WRONG, OTHER = ("SELECT count(*) FROM users WHERE status = 'suspended'", "SELECT count(*) FROM users",
                       "SELECT count(id) FROM users")
ORDER = ("draft", "pairs", "columns", "sample", "sample")


def record(i: int, db: str) -> dict:
    """Question ``i``: the first draft is right on even questions; ``pairs`` is right on every third one, also where
    the first draft is not; the rest write the first draft's query, or one that returns its rows."""
    first = RIGHT if i % 2 == 0 else WRONG
    pairs = RIGHT if i % 3 == 0 else first
    drafts = [("draft", first), ("pairs", pairs), ("columns", first), ("sample", OTHER if first == WRONG else first),
              ("sample", first)]
    queries = list(dict.fromkeys(sql for _, sql in drafts))
    rows = {RIGHT: [[1]], WRONG: [[3]], OTHER: [[3]]}
    readings = [Reading(sql=q, valid=True, confidence=0.9 if q == RIGHT else 0.6, weakest=0.5, tokens=10,
                        preview=Preview(columns=["n"], rows=rows[q], row_count=1)) for q in queries]
    steps = [Step(kind="draft" if n == 0 else g, generator=g, sql=sql) for n, (g, sql) in enumerate(drafts)]
    spent = {g: {"drafts": [d for d, _ in drafts].count(g), "seconds": 2.0 * [d for d, _ in drafts].count(g)}
             for g in dict.fromkeys(d for d, _ in drafts)}
    answer = Answer(question="How many users are suspended?", sql=first, status=Status.ANSWERED, readings=readings,
                    steps=steps, metrics=Metrics(by_generator=spent))
    return {"index": i, "db_id": db, "question": answer.question, "gold": RIGHT, "scoring": "spider",
            "answer": answer.model_dump(mode="json"), "readings_correct": [q == RIGHT for q in queries],
            "correct": first == RIGHT, "result_groups": [{RIGHT: 0, WRONG: 1, OTHER: 1}[q] for q in queries]}


def collection(folder: Path, name: str = "spider-train", n: int = 48) -> Path:
    path = folder / f"{name}.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(record(i, f"db{i % 8}")) + "\n")
    return path


def test_a_question_is_replayed_for_any_set_of_its_generators(tmp_path: Path) -> None:
    questions = list(collected([collection(tmp_path)]))
    q3 = next(q for q in questions if q.key[1] == 3)  # the first draft wrong, pairs right
    assert q3.generators == ORDER and not q3.any_right(["draft"]) and q3.any_right(["draft", "pairs"])
    groups = q3.groups(["draft", "sample", "sample"])
    assert len(groups) == 1 and groups[0].reading.votes == 3 and groups[0].reading.generators == ["draft", "sample"]
    assert groups[0].reading.sql == WRONG  # the first drafted of the group's queries
    assert q3.cost(["draft", "pairs"]) == pytest.approx(4.0)


def test_a_ranker_apart_from_the_probability_chooses_and_the_probability_of_its_choice_stops(tmp_path: Path) -> None:
    q3 = next(q for q in collected([collection(tmp_path)]) if q.key[1] == 3)
    # after draft and pairs: the group of WRONG first, then RIGHT's
    likelier_wrong = lambda q, k: [0.9, 0.4][: len(q.groups(ORDER[:k]))]  # noqa: E731
    ranks_right = lambda q, k: [0.1, 0.8][: len(q.groups(ORDER[:k]))]  # noqa: E731
    policy = ensemble_fit.Policy(ORDER, budget=2, stop=None)
    assert not ensemble_fit.replay(q3, policy, None, 1.0, likelier_wrong).right
    chosen = ensemble_fit.replay(q3, policy, None, 1.0, likelier_wrong, ranks_right)
    assert chosen.right and chosen.p == pytest.approx(0.4)  # the probability is the chosen group's own
    stopping = ensemble_fit.Policy(ORDER, budget=5, stop=0.5)
    assert ensemble_fit.replay(q3, stopping, None, 1.0, likelier_wrong).drafts == 2  # WRONG's 0.9 stops
    assert ensemble_fit.replay(q3, stopping, None, 1.0, likelier_wrong, ranks_right).drafts > 2  # RIGHT's 0.4 does not


def test_the_fit_chooses_a_policy_and_writes_the_same_bytes_twice(tmp_path: Path) -> None:
    files = [str(collection(tmp_path))]
    base = Path(__file__).resolve().parents[1] / "programs" / "agents" / "verifier.json"
    outs = []
    for name in ("one", "two"):
        v, e = tmp_path / f"{name}.verifier.json", tmp_path / f"{name}.ensemble.json"
        assert ensemble_fit.main([*files, "--base", str(base), "--order", ",".join(ORDER), "--order",
                                  "draft,sample,sample", "--out-verifier", str(v), "--out-ensemble", str(e),
                                  "--pool", f"{FIRST}=first.npz"]) == 0
        outs.append((v.read_bytes(), e.read_bytes()))
    assert outs[0] == outs[1]
    ensemble = Ensemble.from_json(json.loads(outs[0][1]))
    assert ensemble.order[0] == "draft" and ensemble.budget >= 2 and ensemble.pools == {FIRST: "first.npz"}
    assert ensemble.fitted_on["databases"] == 8 and ensemble.fitted_on["questions"] == 48
    verifier = Verifier.from_json(json.loads(outs[0][0]))
    assert verifier.early == Verifier.read(base).early and "full" in verifier.fitted_on


@pytest.mark.parametrize(("path", "refused"), [
    ("../shared/benchmarks/spider-train", False),
    ("benchmarks/results/generators-2026-12-07/cosql-train.jsonl.gz", False),
    ("../shared/benchmarks/spider-public", True),
    ("../shared/benchmarks/bird-public/dev.json", True),
    ("runs/sparc-public/records.jsonl", True),
    ("benchmarks/results/whole-sets/spider-dev/records.jsonl.gz", True),
    ("data/test.json", True),
])
def test_held_out_sets_are_refused(path: str, refused: bool) -> None:
    if refused:
        with pytest.raises(ConfigurationError, match="held-out"):
            refuse_held_out([path])
    else:
        refuse_held_out([path])


def test_compile_builds_the_ensemble_and_ship_puts_it_in_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_db: Path
) -> None:
    monkeypatch.setattr("text2sql_dspy.programs.examples.carried_pairs.encode_texts",
                        lambda texts: np.eye(len(texts), 4)[:, :4] + 0.01)
    spider = tmp_path / "spider-train"
    (spider / "database" / "tiny").mkdir(parents=True)
    shutil.copy(tiny_db, spider / "database" / "tiny" / "tiny.sqlite")
    (spider / "train.json").write_text(json.dumps([{"db_id": "tiny", "question": "How many users?",
                                                    "query": "SELECT count(*) FROM users"}]))
    (spider / "tables.json").write_text(json.dumps([{"db_id": "tiny", "table_names_original": ["users"],
                                                     "column_names_original": [[-1, "*"], [0, "id"]]}]))
    out = tmp_path / "compiled" / "v2-ensemble.json"
    meta = compile_ensemble(EnsembleConfig(data=str(spider), out=str(out), orders=(ORDER,),
                                           collected=(str(collection(tmp_path)),)))
    assert meta["ensemble"] == "v2-ensemble.ensemble.json" and meta["pools"] == {FIRST: "v2-ensemble.pools/first.npz"}
    from text2sql_dspy.programs.agents.registry import make_program

    program = make_program(str(out), db_path=tiny_db)
    assert program.ensemble.order == tuple(meta["order"]) and program.verifier is not None
    assert len(program.carried_for(follow_up=False)) == 1 and program.carried_for(follow_up=True) is None
    package = tmp_path / "package"
    package.mkdir()
    written = ship(out, package)
    assert {p.name for p in written} == {"first.npz", "ensemble.json", "verifier.json"}
    shipped = Ensemble.from_json(json.loads((package / "ensemble.json").read_text()), package)
    assert shipped.pools == {FIRST: str(package / "pools" / "first.npz")} and len(shipped.pool(FIRST)) == 1


SAMPLE = Path(__file__).resolve().parent / "data" / "ensemble-sample"
BASE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "generators-2026-12-07" / "base-verifier.json"


def without_commit(text: str) -> str:
    """A fitted file's text less the commit it names (the code's, which moves with every commit)."""
    return "\n".join(line for line in text.splitlines() if '"commit":' not in line)


def test_the_fit_rebuilds_its_committed_output_on_a_committed_sample(tmp_path: Path) -> None:
    """40 spider-train questions and 40 cosql-train turns of the shipped fit's collection, fitted by the shipped
    command's flags (two orders here): the bytes committed beside them, but for the commit each file names. A change
    to the fit, the features or the lints fails here until the expected files are written again by the same command
    (tests/data/ensemble-sample/README)."""
    out_v, out_e = tmp_path / "verifier.json", tmp_path / "ensemble.json"
    assert ensemble_fit.main([
        str(SAMPLE / "spider-train.jsonl.gz"), str(SAMPLE / "cosql-train.jsonl.gz"), "--base", str(BASE),
        "--order", "draft,standalone,sample,sample", "--order", "draft,standalone,pairs,sample,sample,columns,linked",
        "--pool", "first=pools/first.npz", "--pool", "follow-up=pools/follow-up.npz",
        "--out-verifier", str(out_v), "--out-ensemble", str(out_e)]) == 0
    for found, expected in ((out_v, "expected.verifier.json"), (out_e, "expected.ensemble.json")):
        assert without_commit(found.read_text()) == without_commit((SAMPLE / expected).read_text()), expected
