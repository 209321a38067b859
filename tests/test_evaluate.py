"""``text2sql evaluate`` (``python evaluate.py``) end to end with scripted replies: scoring, reports, a failing
question, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import draft
from tests.tiny_db import write_spider_folder
from text2sql_dspy.optimize import evaluation

QUESTIONS = [
    ("How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'"),
    ("How many organizations are there?", "SELECT count(*) FROM organizations"),
    ("List user emails.", "SELECT email FROM users"),
]


def spider_folder(tmp_path: Path, tiny_db: Path) -> Path:
    return write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS})


def test_evaluate_scores_reports_and_survives_a_bad_reply(tmp_path: Path, tiny_db: Path) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    answers = [
        draft(QUESTIONS[0][1]),  # correct
        {"junk": 1},  # unparseable: one call (there is no JSON-formatted retry)
        draft("SELECT id, email FROM users"),  # executes, right rows with an extra column: wrong, relaxed right
    ]
    with dspy.context(lm=DummyLM(answers)):
        code = evaluation.main(["--data", str(data), "--program", "baseline", "--retrieval", "keyword", "--out",
                                str(out)])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    summary = results["programs"]["baseline"]
    assert summary["questions"] == 3 and summary["correct"] == 1
    assert abs(summary["execution_accuracy"] - 1 / 3) < 1e-9
    assert abs(summary["relaxed_accuracy"] - 2 / 3) < 1e-9
    records = results["records"]["baseline"]
    assert "malformed model reply" in records[1]["reason"] and not records[1]["correct"]
    assert (out / "report.md").read_text().count("| Execution accuracy | 33.3% |") == 1
    assert (out / "comparison.png").stat().st_size > 0


def test_rerun_with_the_same_out_resumes_without_new_calls(tmp_path: Path, tiny_db: Path) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    argv = ["--data", str(data), "--program", "baseline", "--retrieval", "keyword", "--out", str(out)]
    with dspy.context(lm=DummyLM([draft(sql) for _, sql in QUESTIONS])):
        assert evaluation.main([*argv, "--limit", "2"]) == 0
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 2
    old = [json.loads(line) for line in lines]  # as an older comparison scored them: no relaxed match, wrong
    for record in old:
        del record["correct_relaxed"], record["scored_with"]
        record["correct"] = False
    (out / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    with dspy.context(lm=DummyLM([draft(QUESTIONS[2][1])])):  # only the third question is left to answer
        assert evaluation.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["programs"]["baseline"]["correct"] == 3  # scored again without a model call
    assert results["programs"]["baseline"]["relaxed_accuracy"] == 1.0
    rewritten = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(rewritten) == 3 and all(r["correct"] and r["scored_with"] == 2 for r in rewritten)


def test_a_different_dataset_cannot_be_mixed_into_a_run(tmp_path: Path, tiny_db: Path, capsys) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    (out).mkdir()
    (out / "run.json").write_text(json.dumps({"data": "/elsewhere", "split": "test"}))
    code = evaluation.main(["--data", str(data), "--out", str(out)])
    assert code == 2 and "use another --out" in capsys.readouterr().err


def test_records_hold_the_answer_as_the_program_built_it(tmp_path: Path, tiny_db: Path) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    with dspy.context(lm=DummyLM([draft(QUESTIONS[0][1])])):
        assert evaluation.main(["--data", str(data), "--program", "v1", "--retrieval", "keyword", "--limit", "1",
                              "--out", str(out)]) == 0
    record = json.loads((out / "records.jsonl").read_text().splitlines()[0])
    assert [s["kind"] for s in record["steps"]] == ["draft", "check", "run"] and record["correct"]
    assert evaluation.answer_of(record).sql == QUESTIONS[0][1] == record["sql"]


def test_the_report_compares_programs_question_by_question(tmp_path: Path, tiny_db: Path) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    baseline = [draft(QUESTIONS[0][1]), draft("SELECT 1"), draft("SELECT id, email FROM users")]  # right, wrong, wrong
    v1 = [draft("SELECT count(*) FROM users"), draft(QUESTIONS[1][1]), draft(QUESTIONS[2][1])]  # wrong, right, right
    with dspy.context(lm=DummyLM(baseline + v1)):
        assert evaluation.main(["--data", str(data), "--program", "baseline", "--program", "v1",
                                "--retrieval", "keyword", "--out", str(out)]) == 0
    paired = json.loads((out / "results.json").read_text())["meta"]["paired"]["v1"]
    assert paired == {"questions": 3, "reference_correct": 1, "other_correct": 2, "gained": 2, "lost": 1,
                      "sign_test_p": 1.0}
    assert "| v1 | 2 | 1 | 1.000 |" in (out / "report.md").read_text()


def test_sign_test_of_a_one_sided_difference() -> None:
    from text2sql_dspy.optimize.report import paired_comparison

    reference = [{"index": i, "correct": i >= 8} for i in range(20)]
    other = [{"index": i, "correct": True} for i in range(20)] + [{"index": 99, "correct": True}]  # 99: not in both
    paired = paired_comparison(reference, other)
    assert paired["questions"] == 20 and paired["gained"] == 8 and paired["lost"] == 0
    assert abs(paired["sign_test_p"] - 2 * 0.5**8) < 1e-12


def test_roc_auc_of_confidence_and_judge_scores() -> None:
    from text2sql_dspy.optimize.report import summarize

    rows = [{"correct": c, "confidence": p, "judge_score": j, "metrics": {"latency_s": 1.0}}
            for c, p, j in [(True, 0.9, 0.2), (True, 0.7, 0.9), (False, 0.8, 0.5), (False, 0.1, 0.6)]]
    summary = summarize(rows)
    assert summary["confidence_auc"] == 0.75  # of 4 (right, wrong) pairs, 3 rank the right answer higher
    assert summary["judge_auc"] == 0.5
    assert summarize(rows[:2])["confidence_auc"] is None  # all right: no ranking to measure


@pytest.mark.parametrize(("cuts", "total", "cell"), [
    ([0, 2, 1], 3, "| LM replies cut at their cap or in a loop | 3 |"),
    ([0, 0], 0, "| LM replies cut at their cap or in a loop | 0 |"),
    ([None, None], None, "| LM replies cut at their cap or in a loop | – |"),  # records from before the metric
])
def test_the_report_counts_the_replies_cut(cuts: list, total: int | None, cell: str) -> None:
    from text2sql_dspy.optimize.report import markdown_report, summarize

    rows = [{"correct": True, "metrics": {"latency_s": 1.0, **({} if c is None else {"cut_replies": c})}} for c in cuts]
    summary = summarize(rows)
    assert summary["cut_replies"] == total and cell in markdown_report({"v2": summary}, {"written_at": "now"}, [])


@pytest.mark.parametrize(("pairs", "cut", "expected"), [
    ([(0.9, True), (0.8, False), (0.5, True), (0.1, False)], 0.9, (1, 1)),
    ([(0.9, True), (0.8, False), (0.5, True), (0.1, False)], 0.5, (3, 2)),
    ([(0.9, True), (0.8, False), (0.5, True), (0.1, False)], 0.0, (4, 2)),
    ([(0.9, True), (0.8, False)], 0.95, (0, 0)),  # nothing that sure: no answer kept
])
def test_answers_kept_at_a_confidence_cut_off(pairs, cut: float, expected: tuple[int, int]) -> None:
    from text2sql_dspy.optimize.report import answered_at

    assert answered_at(pairs, cut) == expected


def test_risk_coverage_keeps_the_most_confident_first_and_ties_together() -> None:
    from text2sql_dspy.optimize.report import risk_coverage

    coverage, accuracy = risk_coverage([(0.9, True), (0.7, True), (0.7, False), (0.2, False)])
    assert coverage == [0.25, 0.75, 1.0]
    assert accuracy == [1.0, 2 / 3, 0.5]


def test_the_report_shows_answers_at_each_confidence_and_draws_the_curves(tmp_path: Path) -> None:
    from text2sql_dspy.optimize.report import summarize, write_report

    rows = [{"index": i, "correct": c, "confidence": p, "judge_score": p, "metrics": {"latency_s": 1.0}}
            for i, (c, p) in enumerate([(True, 0.95), (True, 0.75), (False, 0.72), (False, 0.2)])]
    write_report(tmp_path, {"v2": summarize(rows)}, {"v2": rows}, {"data": "d", "split": "s", "questions": 4})
    report = (tmp_path / "report.md").read_text()
    assert "| 0.9 | 1 (25%), 1 right (100%) |" in report
    assert "| 0.7 | 3 (75%), 2 right (67%) |" in report
    assert "| 0.0 | 4 (100%), 2 right (50%) |" in report
    for plot in ("confidence_reliability.png", "risk_coverage.png", "judge_reliability.png"):
        assert (tmp_path / plot).stat().st_size > 0 and f"![{plot}]({plot})" in report


def test_the_report_names_the_code_that_answered_each_part_of_a_resumed_run(tmp_path: Path) -> None:
    from text2sql_dspy.optimize.report import summarize, write_report

    codes = [{"digest": "aaaa", "commit": "1111111"}, {"digest": "bbbb"}, {"digest": "aaaa", "commit": "1111111"}]
    rows = [{"index": i, "correct": True, "code": code, "metrics": {"latency_s": 1.0}} for i, code in enumerate(codes)]
    write_report(tmp_path, {"v2": summarize(rows)}, {"v2": rows}, {"data": "d", "split": "s", "questions": 3})
    assert "Answered by the code aaaa at 1111111, bbbb (" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "results.json").read_text())["meta"]["code"] == ["aaaa at 1111111", "bbbb"]


def test_a_tiny_sign_test_p_is_written_as_below_a_thousandth() -> None:
    from text2sql_dspy.optimize.report import markdown_report, summarize

    rows = [{"correct": True, "metrics": {"latency_s": 1.0}}]
    paired = {"questions": 13, "reference_correct": 0, "other_correct": 13, "gained": 13, "lost": 0,
              "sign_test_p": 2 * 0.5**13}
    text = markdown_report({"a": summarize(rows), "b": summarize(rows)},
                           {"paired": {"b": paired}, "written_at": "now"}, [])
    assert "| b | 13 | 0 | < 0.001 |" in text


def test_evidence_reaches_the_prompt_as_a_hint_and_the_report_says_so(tmp_path: Path, tiny_db: Path) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    records = json.loads((data / "test.json").read_text())[:1]
    records[0]["evidence"] = "suspended refers to status = 'suspended'"
    (data / "test.json").write_text(json.dumps(records))
    argv = ["--data", str(data), "--program", "baseline", "--retrieval", "keyword"]
    for evidence, out in (("on", tmp_path / "on"), ("off", tmp_path / "off")):
        lm = DummyLM([draft(QUESTIONS[0][1])])
        with dspy.context(lm=lm):
            assert evaluation.main([*argv, "--evidence", evidence, "--out", str(out)]) == 0
        prompt = [m for m in lm.history[-1]["messages"] if m["role"] == "user"][-1]["content"]
        shown = "Hint: suspended refers to status = 'suspended'" in prompt
        assert shown == (evidence == "on")
        record = json.loads((out / "records.jsonl").read_text().splitlines()[0])
        assert record.get("hint", "") == ("suspended refers to status = 'suspended'" if evidence == "on" else "")
        assert f"Evidence (the data's per-question hints): {evidence};" in (out / "report.md").read_text()


SPARC = [
    {"database_id": "tiny", "interaction": [
        {"utterance": "How many users are suspended?",
         "query": "SELECT count(*) FROM users WHERE status = 'suspended'"},
        {"utterance": "Which ones?", "query": "SELECT email FROM users WHERE status = 'suspended'"},
    ]},
    {"database_id": "tiny", "interaction": [
        {"utterance": "List user emails.", "query": "SELECT email FROM users"},
    ]},
]


def test_sparc_conversations_are_answered_in_order_with_their_own_history(tmp_path: Path, tiny_db: Path) -> None:
    databases = spider_folder(tmp_path, tiny_db)
    sparc = tmp_path / "sparc"
    sparc.mkdir()
    (sparc / "dev.json").write_text(json.dumps(SPARC))
    argv = ["--data", str(sparc), "--split", "dev", "--databases", str(databases), "--program", "baseline",
            "--retrieval", "keyword"]
    wrong_second = "SELECT email FROM users"
    for history, out in (("on", tmp_path / "on"), ("off", tmp_path / "off")):
        lm = DummyLM([draft(SPARC[0]["interaction"][0]["query"]), draft(wrong_second),
                      draft("SELECT email FROM users")])
        with dspy.context(lm=lm):
            assert evaluation.main([*argv, "--history", history, "--out", str(out)]) == 0
        second_prompt = [m for m in lm.history[1]["messages"] if m["role"] == "user"][-1]["content"]
        assert ("- Question: How many users are suspended?" in second_prompt) == (history == "on")
        assert "- Question" not in [m for m in lm.history[2]["messages"] if m["role"] == "user"][-1]["content"]
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert [(r["interaction"], r["turn"], r["correct"]) for r in records] == [(0, 0, True), (0, 1, False),
                                                                                  (1, 0, True)]
        assert [r["history_turns"] for r in records] == ([0, 1, 0] if history == "on" else [0, 0, 0])
        report = (out / "report.md").read_text()
        assert "| Conversations: later turns right | 0.0% |" in report
        assert "| Conversations: every turn right (interaction accuracy) | 50.0% |" in report
        assert f"each turn shown the program's own earlier turns: {history}." in report


def test_a_resumed_conversation_rebuilds_its_history_from_the_kept_answers(tmp_path: Path, tiny_db: Path) -> None:
    databases, sparc, out = spider_folder(tmp_path, tiny_db), tmp_path / "sparc", tmp_path / "run"
    sparc.mkdir()
    (sparc / "dev.json").write_text(json.dumps(SPARC))
    argv = ["--data", str(sparc), "--split", "dev", "--databases", str(databases), "--program", "baseline",
            "--retrieval", "keyword", "--out", str(out)]
    with dspy.context(lm=DummyLM([draft(SPARC[0]["interaction"][0]["query"])])):
        assert evaluation.main([*argv, "--limit", "1"]) == 0
    lm = DummyLM([draft(SPARC[0]["interaction"][1]["query"]), draft("SELECT email FROM users")])
    with dspy.context(lm=lm):  # the first turn is kept: only the other two are asked
        assert evaluation.main(argv) == 0
    prompt = [m for m in lm.history[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert ("- Question: How many users are suspended?\n  SQL: SELECT count(*) FROM users WHERE status = 'suspended'"
            in prompt)
    assert len(lm.history) == 2


def bird_folder(tmp_path: Path, tiny_db: Path, records: list[dict]) -> Path:
    """A BIRD download as it unpacks: dev.json (gold SQL as ``SQL``), dev_databases/<db>/<db>.sqlite."""
    import shutil

    folder = tmp_path / "bird"
    (folder / "dev_databases" / "tiny").mkdir(parents=True)
    shutil.copy(tiny_db, folder / "dev_databases" / "tiny" / "tiny.sqlite")
    (folder / "dev.json").write_text(json.dumps([{"db_id": "tiny", "evidence": "", **r} for r in records]))
    return folder


STATUSES = "SELECT status FROM users ORDER BY status"  # active, active, suspended
DISTINCT_STATUSES = "SELECT DISTINCT status FROM users ORDER BY status DESC"  # suspended, active


def test_a_bird_download_is_scored_as_birds_evaluator_does(tmp_path: Path, tiny_db: Path) -> None:
    bird, out = bird_folder(tmp_path, tiny_db,
                            [{"question": "Which statuses do users have?", "SQL": STATUSES}]), tmp_path / "b"
    spider = write_spider_folder(tmp_path / "spider", tiny_db, {"dev": [("Which statuses do users have?", STATUSES)]})
    argv = ["--split", "dev", "--program", "baseline", "--retrieval", "keyword"]
    with dspy.context(lm=DummyLM([draft(DISTINCT_STATUSES)])):  # the same set of rows: no duplicates, another order
        assert evaluation.main([*argv, "--data", str(bird), "--out", str(out)]) == 0
    record = json.loads((out / "records.jsonl").read_text())
    assert record["correct"] and record["scored_as"] == "bird"
    assert json.loads((out / "run.json").read_text())["scoring"] == "bird"
    assert "Scored as BIRD's evaluator: rows as sets" in (out / "report.md").read_text()
    with dspy.context(lm=DummyLM([draft(DISTINCT_STATUSES)])):  # Spider's folder, the same question: a multiset
        assert evaluation.main([*argv, "--data", str(spider), "--out", str(tmp_path / "s")]) == 0
    record = json.loads((tmp_path / "s" / "records.jsonl").read_text())
    assert not record["correct"] and record["scored_as"] == "spider"
    assert "Scored as Spider's test-suite evaluation: rows as a multiset" in (tmp_path / "s" / "report.md").read_text()


def test_a_run_scored_by_another_rule_is_scored_again_when_resumed(tmp_path: Path, tiny_db: Path, capsys) -> None:
    questions = [{"question": "Which statuses do users have?", "SQL": STATUSES},
                 {"question": "How many organizations are there?", "SQL": "SELECT count(*) FROM organizations"}]
    bird, out = bird_folder(tmp_path, tiny_db, questions), tmp_path / "run"
    argv = ["--data", str(bird), "--split", "dev", "--program", "baseline", "--retrieval", "keyword", "--out", str(out)]
    with dspy.context(lm=DummyLM([draft(DISTINCT_STATUSES)])):
        assert evaluation.main([*argv, "--limit", "1"]) == 0
    # as a run before the rule was kept: run.json without it, the record scored by Spider's rule
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({"data": run["data"], "split": run["split"]}))
    old = json.loads((out / "records.jsonl").read_text())
    del old["scored_as"]
    old["correct"] = False
    (out / "records.jsonl").write_text(json.dumps(old) + "\n")
    capsys.readouterr()
    with dspy.context(lm=DummyLM([draft("SELECT count(*) FROM organizations")])):  # only the second is asked
        assert evaluation.main(argv) == 0
    printed = capsys.readouterr().out
    assert "1 earlier answers scored again" in printed and "as BIRD's evaluator" in printed
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [(r["correct"], r["scored_as"]) for r in records] == [(True, "bird"), (True, "bird")]
    assert json.loads((out / "run.json").read_text())["scoring"] == "bird"


def test_a_run_on_other_data_is_refused_whatever_its_rule(tmp_path: Path, tiny_db: Path, capsys) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"data": "/elsewhere", "split": "test", "scoring": "bird"}))
    assert evaluation.main(["--data", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds a run on /elsewhere (test) with other settings (data: /elsewhere there" in err
    assert "use another --out" in err and "scoring" not in err  # the rule is no reason to refuse


def test_per_database_answers_each_databases_first_questions_and_resumes_only_with_the_same(
        tmp_path: Path, tiny_db: Path, capsys) -> None:
    data, out = spider_folder(tmp_path, tiny_db), tmp_path / "run"
    questions = json.loads((data / "test.json").read_text())
    other = data / "database" / "other"
    other.mkdir()
    (other / "other.sqlite").write_bytes((data / "database" / "tiny" / "tiny.sqlite").read_bytes())
    (data / "test.json").write_text(json.dumps([*questions, *({**q, "db_id": "other"} for q in questions)]))
    argv = ["--data", str(data), "--program", "baseline", "--retrieval", "keyword", "--out", str(out)]
    with dspy.context(lm=DummyLM([draft(QUESTIONS[0][1]), draft(QUESTIONS[0][1])])):
        assert evaluation.main([*argv, "--per-database", "1"]) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [(r["db_id"], r["question"], r["correct"]) for r in records] == [
        ("tiny", QUESTIONS[0][0], True), ("other", QUESTIONS[0][0], True)]
    assert json.loads((out / "run.json").read_text())["per database"] == 1
    capsys.readouterr()
    assert evaluation.main([*argv, "--per-database", "2"]) == 2
    assert "per database: 1 there, 2 here" in capsys.readouterr().err


@pytest.mark.parametrize("packed", [False, True])
def test_a_runs_records_are_read_as_written_or_as_committed_gzipped(tmp_path: Path, packed: bool) -> None:
    import gzip

    lines = [json.dumps({"program": "v2", "index": 0, "correct": True}),
             json.dumps({"program": "v2", "index": 1, "correct": False}), '{"program": "v2", "ind']  # cut short
    text = "\n".join(lines).encode()
    path = tmp_path / "records.jsonl"
    if packed:
        path.with_name("records.jsonl.gz").write_bytes(gzip.compress(text))
    else:
        path.write_bytes(text)
    assert {k: r["correct"] for k, r in evaluation.load_records(path).items()} == {("v2", 0): True, ("v2", 1): False}
    assert evaluation.load_records(tmp_path / "elsewhere" / "records.jsonl") == {}
