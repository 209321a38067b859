"""The benchmark tools moved out of ``benchmarks/results/`` (where each had been a copy beside one finding): the arm
and side-by-side runners (shell, run here against a stand-in ``text2sql``), the held-out split of what a change can
touch, a lint's firings on training answers, both scoring rules, issue 54's counted targets, two arms cut to the
turns both answered, and latency by kind of turn. Each reads records as ``text2sql evaluate`` writes them, gzipped
or not. Beside them, the keyword retriever's rankings of a split's questions."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import REPO, script
from tests.tiny_db import write_spider_folder

lint_on_training = script("benchmarks/lint_on_training.py")  # affected_split imports it: loaded first
affected_split = script("benchmarks/affected_split.py")
both_rules = script("benchmarks/both_rules.py")
target_counts = script("benchmarks/target_counts.py")
shared_turns = script("benchmarks/shared_turns.py")
split_by_turn = script("benchmarks/split_by_turn.py")
split_parts = script("benchmarks/split_parts.py")
keyword_rankings = script("benchmarks/keyword_rankings.py")
readings_table = script("benchmarks/readings_table.py")

OUTER = "SELECT email FROM users WHERE organization_id IN (SELECT organization_id FROM blocks)"  # always true
CLEAN = "SELECT email FROM users WHERE id IN (SELECT user_id FROM blocks)"


def write_run(folder: Path, rows: list[dict], *, packed: bool = True, program: str = "v2") -> Path:
    """An evaluate run's folder: ``records.jsonl.gz`` (as committed) or ``records.jsonl``, and a ``run.json``."""
    folder.mkdir(parents=True)
    text = "".join(json.dumps({"program": program, **row}) + "\n" for row in rows)
    if packed:
        (folder / "records.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    else:
        (folder / "records.jsonl").write_text(text)
    (folder / "run.json").write_text(json.dumps({"data": str(folder)}))
    return folder


def reading(sql: str, *kinds: str, chosen: bool = False, valid: bool = True) -> dict:
    return {"sql": sql, "chosen": chosen, "valid": valid, "findings": [{"kind": k, "message": k} for k in kinds]}


# --- affected_split.py and lint_on_training.py ---------------------------------------------------------------------


@pytest.fixture
def benchmarks(tmp_path: Path, tiny_db: Path) -> Path:
    """A stand-in for ../shared/benchmarks: Spider dev (three questions) and SParC dev (two conversations of two
    turns) over the tiny database, and spider-train with one gold query the outer-column lint fires on."""
    root = tmp_path / "benchmarks"
    write_spider_folder(root / "spider-public", tiny_db, {"dev": [(f"q{i}", "SELECT 1") for i in range(3)]})
    write_spider_folder(root / "spider-train", tiny_db, {"train": [("emails", OUTER), ("more", CLEAN)]})
    (root / "sparc-public").mkdir()
    conversations = [{"database_id": "tiny", "interaction": [{"utterance": f"c{c}t{t}", "query": "SELECT 1"}
                                                               for t in range(2)]} for c in range(2)]
    (root / "sparc-public" / "dev.json").write_text(json.dumps(conversations))
    return root


def spider_records() -> list[dict]:
    return [
        {"index": 0, "question": "q0", "db_id": "tiny", "readings": [reading("SELECT 1", "shows key")]},
        {"index": 1, "question": "q1", "db_id": "tiny", "readings": [reading(CLEAN)]},
        {"index": 2, "question": "q2", "db_id": "tiny",
         "readings": [reading(OUTER), {"sql": "x", "findings": [{"kind": "error", "message": "misuse of aggregate"}]}]},
    ]


@pytest.mark.parametrize(("rule", "chosen"), [
    (["--kind", "shows key"], [0]),
    (["--kind", "shows key", "--kind", "missing value"], [0]),
    (["--text", "misuse of aggregate"], [2]),
    (["--lint", "outer_column"], [2]),  # today's lint, run again on readings recorded before it
])
def test_affected_split_writes_the_questions_a_change_can_touch(
        tmp_path: Path, benchmarks: Path, capsys: pytest.CaptureFixture[str], rule: list[str], chosen: list[int],
) -> None:
    run = write_run(tmp_path / "run", spider_records())
    out = tmp_path / "sub"
    assert affected_split.main([str(out), f"spider-dev={run}", *rule, "--benchmarks", str(benchmarks)]) == 0
    written = json.loads((out / "spider-dev" / "affected.json").read_text())
    assert [q["question"] for q in written] == [f"q{i}" for i in chosen]
    assert (out / "spider-dev" / "database").resolve() == (benchmarks / "spider-public" / "database").resolve()
    assert f"spider-dev: {len(chosen)} questions {chosen}" in capsys.readouterr().out


def test_a_conversation_turn_brings_its_whole_conversation(tmp_path: Path, benchmarks: Path) -> None:
    steps = [{"kind": "rewrite", "note": "Which of the previous results are active?", "sql": ""}]
    collected = tmp_path / "cosql.jsonl.gz"  # a collector's file: the answer under "answer"
    rows = [{"index": 0, "interaction": 0, "turn": 1, "db_id": "tiny", "question": "c0t1", "answer": {"steps": []}},
            {"index": 1, "interaction": 1, "turn": 1, "db_id": "tiny", "question": "c1t1", "answer": {"steps": steps}}]
    collected.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    (benchmarks / "cosql-train").mkdir()
    (benchmarks / "cosql-train" / "train.json").write_text((benchmarks / "sparc-public" / "dev.json").read_text())
    out = tmp_path / "sub"
    assert affected_split.main([str(out), f"cosql={collected}", "--points-back", "--benchmarks", str(benchmarks)]) == 0
    written = json.loads((out / "cosql" / "affected.json").read_text())
    assert [[t["utterance"] for t in c["interaction"]] for c in written] == [["c1t0", "c1t1"]]


def test_affected_split_needs_one_rule_and_known_sets(tmp_path: Path, benchmarks: Path) -> None:
    run = write_run(tmp_path / "run", spider_records())
    with pytest.raises(SystemExit):
        affected_split.main([str(tmp_path / "o"), f"spider-dev={run}"])
    with pytest.raises(SystemExit):
        affected_split.main([str(tmp_path / "o"), f"spider-dev={run}", "--kind", "x", "--points-back"])
    with pytest.raises(SystemExit):
        affected_split.main([str(tmp_path / "o"), f"nowhere={run}", "--kind", "x"])


def test_lint_on_training_counts_distinct_readings_and_gold(tmp_path: Path, benchmarks: Path) -> None:
    collected = tmp_path / "spider-train.jsonl.gz"
    rows = [{"db_id": "tiny", "question": "emails", "readings_correct": [False, True],
             "answer": {"readings": [{"sql": OUTER}, {"sql": CLEAN}]}},
            {"db_id": "tiny", "question": "emails", "readings_correct": [False],  # the same reading again: once
             "answer": {"readings": [{"sql": OUTER}]}}]
    collected.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    lint = lint_on_training.lint_named("outer_column")
    assert lint_on_training.training(lint, [collected], benchmarks / "spider-train") == (
        "training readings (distinct): 2; the lint fires on 1, of which 0 right (0.0%); the others 1 of 1 right "
        "(100.0%)")
    assert lint_on_training.gold(lint, benchmarks / "spider-train", "train") == (
        f"spider-train gold: 1 of 2 fire\n  tiny: {OUTER}")
    database = benchmarks / "spider-train" / "database" / "tiny" / "tiny.sqlite"
    assert not lint_on_training.fires(lint, "SELECT FROM WHERE (", database)  # does not parse: says nothing
    with pytest.raises(SystemExit, match="no lint 'nothing'.*outer_column"):
        lint_on_training.lint_named("nothing")


# --- both_rules.py, target_counts.py, shared_turns.py, split_by_turn.py ---------------------------------------------


def test_both_rules_scores_each_run_by_spiders_and_birds_rule(
        tmp_path: Path, tiny_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_spider_folder(tmp_path / "data", tiny_db, {"dev": [("statuses", "SELECT status FROM users"),
                                                                    ("how many", "SELECT count(*) FROM users")]})
    def row(i: int, sql: str) -> dict:
        return {"index": i, "question": ["statuses", "how many"][i], "sql": sql, "correct": None}

    before = write_run(tmp_path / "before", [row(0, "SELECT DISTINCT status FROM users"), row(1, "SELECT 3")])
    after = write_run(tmp_path / "after", [row(0, "SELECT status FROM users"), row(1, "SELECT 2")], packed=False)
    assert both_rules.main([str(before), str(after), "--data", str(data)]) == 0
    spider, bird = capsys.readouterr().out.splitlines()
    assert spider.startswith("spider: before 1/2, after 1/2;") and "'gained': 1, 'lost': 1" in spider
    assert bird.startswith("bird: before 2/2, after 1/2;") and "'gained': 0, 'lost': 1" in bird  # a set: DISTINCT right


def test_target_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    redraft = [{"kind": "redraft"}]
    rows = [
        {"index": 0, "sql": "a", "steps": [], "readings": [reading("a", "empty result", chosen=True)]},  # kept empty
        {"index": 1, "sql": "b", "steps": redraft, "readings": [reading("b", "empty result", chosen=True)]},
        {"index": 2, "sql": "c", "steps": [], "readings": [reading("c", "cartesian join", chosen=True), reading("d")]},
        {"index": 3, "sql": "e", "steps": [], "readings": [reading("e", "off-key join", chosen=True),
                                                         reading("f", "off-key join")]},  # no clean one to take
        {"index": 4, "sql": "", "steps": [], "readings": []},
    ]
    assert target_counts.counts(rows) == {"answers": 5, "empty result, never redrafted": 1,
                                          "bad join chosen over a clean reading": 1, "no query": 1}
    run = write_run(tmp_path / "run", rows)
    assert target_counts.main([str(run)]) == 0 and "'no query': 1}" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no records of program 'baseline'"):
        target_counts.main([str(run), "--program", "baseline"])


def test_shared_turns_cuts_both_arms_to_the_turns_both_answered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_run(out / "before" / "sparc", [{"index": i, "question": f"t{i}"} for i in (0, 1, 2)])
    write_run(out / "after" / "sparc", [{"index": i, "question": f"t{i}"} for i in (2, 0)], packed=False)
    assert shared_turns.main([str(out), "sparc", str(tmp_path / "cut")]) == 0
    for arm in ("before", "after"):
        folder = tmp_path / "cut" / arm / "sparc"
        rows = [json.loads(line) for line in gzip.open(folder / "records.jsonl.gz", "rt")]
        assert [r["index"] for r in rows] == [0, 2] and (folder / "run.json").is_file()


def test_split_parts_cuts_a_tail_and_joins_the_parts_as_the_original_split(tmp_path: Path, benchmarks: Path) -> None:
    sparc, dest = benchmarks / "sparc-public", tmp_path / "tail"
    assert split_parts.main(["tail", str(sparc), "dev", "1", str(dest)]) == 0
    assert [c["interaction"][0]["utterance"] for c in json.loads((dest / "dev.json").read_text())] == ["c1t0"]
    head = write_run(tmp_path / "head", [{"index": i, "question": f"c0t{i}", "interaction": 0, "turn": i}
                                         for i in (0, 1)])
    rest = write_run(tmp_path / "rest", [{"index": 1, "question": "c1t1", "interaction": 0, "turn": 1}], packed=False)
    joined = tmp_path / "joined"
    assert split_parts.main(["join", str(sparc), "dev", str(joined), f"{head}@0", f"{rest}@1"]) == 0
    rows = [json.loads(line) for line in (joined / "records.jsonl").read_text().splitlines()]
    assert [(r["index"], r["interaction"], r["question"]) for r in rows] == [
        (0, 0, "c0t0"), (1, 0, "c0t1"), (3, 1, "c1t1")]
    assert (joined / "run.json").read_text() == (head / "run.json").read_text()
    with pytest.raises(SystemExit, match="is not question 1 of"):  # the tail's first item given wrong
        split_parts.join(sparc, "dev", tmp_path / "wrong", [(rest, 0)])
    with pytest.raises(SystemExit, match="answered by two parts"):
        split_parts.join(sparc, "dev", tmp_path / "twice", [(head, 0), (head, 0)])


def test_split_by_turn_groups_turns_by_kind_and_calls() -> None:
    def turn(i: int, db: str, turn: int, seconds: float, calls: int = 1) -> dict:
        return {"index": i, "db_id": db, "turn": turn, "metrics": {"latency_s": seconds, "lm_calls": calls}}

    v2 = [turn(0, "a", 0, 5.0), turn(1, "a", 1, 2.0, calls=3), turn(2, "a", 0, 1.0), turn(3, "a", 1, 1.5)]
    baseline = [turn(i, "a", r["turn"], 1.0) for i, r in enumerate(v2)]
    assert split_by_turn.by_kind(baseline, v2) == {
        "first turn, new database, one call": [(5.0, 1.0)],
        "follow-up, first in its database, more calls": [(2.0, 1.0)],
        "first turn, one call": [(1.0, 1.0)],
        "follow-up, one call": [(1.5, 1.0)],
    }


# --- the shell runners, against a stand-in text2sql ----------------------------------------------------------------

STAND_IN = """#!/bin/bash
echo "$(pwd)|${PYTHONPATH:-}|${TEXT2SQL_N_THREADS:-}|${TEXT2SQL_CACHE:+cache}|$*" >> "$CALLS"
[ -n "${TEXT2SQL_CACHE:-}" ] && ls "$TEXT2SQL_CACHE" | grep -v -e answer.json -e stderr.txt >> "$CALLS"
[ "$1" = ask ] && echo '{"sql": "SELECT 1", "verdict": "likely right", "tables": ["users"],
  "metrics": {"latency_s": 1.26, "lm_calls": 1, "prompt_tokens": 99}}'
exit 0
"""


def run_tool(tmp_path: Path, tool: str, *args: str, **env: str) -> tuple[str, list[str]]:
    """Run benchmarks/``tool`` with a stand-in for ``text2sql`` and for the interpreter that runs it (each call logged:
    folder, PYTHONPATH, threads, whether a cache was set, arguments); its output and the calls."""
    stand_in = tmp_path / "stand-in"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    calls = tmp_path / "calls.txt"
    environ = {k: v for k, v in os.environ.items() if k not in ("TEXT2SQL_CACHE", "PYTHONPATH")}  # the session's
    environ |= {"CALLS": str(calls), "TEXT2SQL": str(stand_in), "PYTHON": str(stand_in), "BENCHMARKS": "/sets", **env}
    done = subprocess.run(["bash", str(REPO / "benchmarks" / tool), *args], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, calls.read_text().splitlines() if calls.exists() else []


def test_evaluate_sets_runs_the_arms_snapshot_on_each_set(tmp_path: Path) -> None:
    _, calls = run_tool(tmp_path, "evaluate_sets.sh", "out", "before", "/snap/b", "bird-off", "sparc", "bundled",
                        LIMIT="5")
    folder = str((tmp_path / "out" / "before").resolve())
    assert calls == [
        f"{folder}|/snap/b|1||-m text2sql_dspy.cli evaluate --data /sets/bird-public --split dev --program v2 "
        "--evidence off --limit 5 --out bird-off",
        f"{folder}|/snap/b|1||-m text2sql_dspy.cli evaluate --data /sets/sparc-public --split dev --databases "
        "/sets/spider-public --program v2 --out sparc",
        f"{folder}|/snap/b|1||-m text2sql_dspy.cli evaluate --split test --program v2 --limit 5 --out bundled",
    ]
    with pytest.raises(AssertionError, match="unknown set"):
        run_tool(tmp_path, "evaluate_sets.sh", "out", "before", "/snap/b", "spider-test")


@pytest.mark.parametrize(("args", "options"), [
    (["bird", "30"], "--data /sets/bird-public --split dev --limit 30"),
    (["bird"], "--data /sets/bird-public --split dev"),
    (["sparc"], "--data /sets/sparc-public --databases /sets/spider-public --split dev --limit 60"),
    (["sparc", "all", "mine"], "--data mine --databases /sets/spider-public --split dev"),
])
def test_latency_ratio_runs_the_baseline_and_v2_side_by_side(tmp_path: Path, args: list[str], options: str) -> None:
    _, calls = run_tool(tmp_path, "latency_ratio.sh", "out", *args)
    assert sorted(calls) == [f"{tmp_path}||1||evaluate {options} --program {p} --out out/{p}"
                             for p in ("baseline", "v2")]


def test_latency_ratio_spreads_sparc_over_its_databases(tmp_path: Path) -> None:
    sets = tmp_path / "sets"
    (sets / "sparc-public").mkdir(parents=True)
    rows = [{"database_id": db, "interaction": [{"utterance": "u", "query": "q"}] * n} for db, n in
            (("a", 2), ("a", 1), ("a", 1), ("b", 3))]
    (sets / "sparc-public" / "dev.json").write_text(json.dumps(rows))
    output, calls = run_tool(tmp_path, "latency_ratio.sh", "out", "spread", "2", PYTHON=sys.executable,
                             BENCHMARKS=str(sets))
    assert "3 conversations, 6 turns, 2 databases" in output
    assert [r["database_id"] for r in json.loads((tmp_path / "out/data/dev.json").read_text())] == ["a", "a", "b"]
    assert all(f"--data out/data --databases {sets}/spider-public --split dev --program" in c for c in calls)


def test_merged_gap_builds_the_merged_benchmark_then_runs_both_sides(tmp_path: Path) -> None:
    _, calls = run_tool(tmp_path, "merged_gap.sh", "out", "10", "--table-order", "stored")
    assert calls[0].endswith(f"{REPO}/benchmarks/merge_schemas.py --spider /sets/spider-public --train "
                             "/sets/spider-train --out out/data --questions-per-db 10 --table-order stored")
    assert sorted(calls[1:]) == [
        f"{tmp_path}||1||evaluate --data out/data --split dev --program v2 --out out/merged",
        f"{tmp_path}||1||evaluate --data out/data --split own --databases /sets/spider-public --program v2 "
        "--out out/own",
    ]


def test_first_ask_gives_each_question_a_fresh_cache_with_only_the_model(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_text("weights")
    output, calls = run_tool(tmp_path, "first_ask.sh", "How many users?", PYTHON=sys.executable, MODEL=str(model),
                             ASK_ARGS="--top-k 3")
    line = json.loads(output)
    assert (line["question"], line["rc"], line["answer s"], line["lm calls"], line["tables shown"]) == (
        "How many users?", 0, 1.3, 1, 1)
    assert line["ask args"] == "--top-k 3" and line["verdict"] == "likely right"
    assert calls[0].endswith("|cache|ask How many users? --json --top-k 3") and calls[1:] == ["model.gguf"]


# --- keyword_rankings.py -------------------------------------------------------------------------------------------


def test_keyword_rankings_ranks_each_question_over_its_tables_and_compares_two_files(tmp_path: Path,
                                                                                     tiny_db: Path) -> None:
    data = write_spider_folder(tmp_path / "data", tiny_db, {"train": [
        ("Which organizations are on the free plan?", "SELECT name FROM organizations WHERE plan = 'free'"),
        ("How many login attempts failed?", "SELECT count(*) FROM login_attempts WHERE success = 0"),
    ]})
    lines = keyword_rankings.rankings(data, "train", 2)
    assert [line.split("\t")[:2] for line in lines] == [["0", "tiny"], ["1", "tiny"]]
    best = [line.split("\t")[2].split("=")[0] for line in lines]
    assert best == ["organizations", "login_attempts"]

    index, db_id, ranking = lines[1].split("\t")
    first, *rest = ranking.split()
    reordered = f"{index}\t{db_id}\t{' '.join([*rest, first])}"
    rescored = f"{index}\t{db_id}\t{first.rsplit('=', 1)[0]}=0.0001 {' '.join(rest)}".rstrip()
    assert keyword_rankings.compare(lines, lines) == ["2 questions: 0 rankings differ in their order of tables, 0 only "
                                                      "in their scores, 2 are the same"]
    report = keyword_rankings.compare(lines, [lines[0], reordered])
    assert report[0].startswith("2 questions: 1 rankings differ in their order") and report[1] == "1 tiny (order)"
    assert keyword_rankings.compare(lines, [lines[0], rescored])[1] == "1 tiny (scores)"


# --- readings_table.py ------------------------------------------------------------------------------------------


def test_readings_table_counts_any_right_reading_and_the_chosen_generators(tmp_path: Path, tiny_db: Path) -> None:
    root = write_spider_folder(tmp_path / "spider", tiny_db, {"dev": []})
    gold = "SELECT count(*) FROM users WHERE status = 'suspended'"
    ran = {"columns": ["n"], "rows": [[1]], "row_count": 1}

    def row(i: int, chosen: str, other: str, correct: bool, generator: str, calls: int, latency: float) -> dict:
        return {"index": i, "question": f"q{i}", "db_id": "tiny", "gold": gold, "sql": chosen, "correct": correct,
                "metrics": {"lm_calls": calls, "latency_s": latency},
                "readings": [{"sql": chosen, "chosen": True, "valid": True, "preview": ran, "generator": generator},
                             {"sql": other, "chosen": False, "valid": True, "preview": ran, "generator": "pairs"}]}

    run = write_run(tmp_path / "run", [
        row(0, gold, "SELECT 1", True, "draft", 1, 1.0),
        row(1, "SELECT count(*) FROM users", gold, False, "sample", 3, 4.0),  # a right reading not chosen
        row(2, "SELECT count(*) FROM users", "SELECT 2", False, "pairs", 2, 2.0),
    ])
    found = readings_table.figures(readings_table.records(run, "v2"), (root,))
    assert (found["right"], found["any reading right"], found["one model call"]) == (1, 2, 1)
    assert found["median latency s"] == 2.0
    assert found["chosen by generator"] == {"draft": (1, 1), "sample": (1, 0), "pairs": (1, 0)}
