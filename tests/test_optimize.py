"""Metrics, the judge-reward function and the compile entry point, with scripted replies (DummyLM, and an LM
with token log-probabilities where the judge's P(True) is the score)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from tests.fakes import logprob_lm, scripted_draft, scripted_verdict, verdict
from tests.tiny_db import write_spider_folder
from text2sql_dspy.optimize.compile_command import main as optimize_main
from text2sql_dspy.optimize.demos import compact_reflections, keep_tables
from text2sql_dspy.optimize.metrics import execution_match, make_metric
from text2sql_dspy.optimize.reward import llm_as_judge_reward
from text2sql_dspy.optimize.trace_audit import TraceAudit
from text2sql_dspy.programs.agents.registry import make_program, metadata_path
from text2sql_dspy.programs.answer import Answer, Status
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.query.tables_read import tables_read

GOOD = "SELECT count(*) FROM users WHERE status = 'suspended'"
WRONG = "SELECT count(*) FROM users"
QUESTION = "How many users are suspended?"
TRAIN = [
    (QUESTION, GOOD),
    ("How many organizations are there?", "SELECT count(*) FROM organizations"),
    ("List the emails of all users.", "SELECT email FROM users"),
]
DEV = [("How many blocks are there?", "SELECT count(*) FROM blocks")]
JUDGE_KEY = "[[ ## sql_query ## ]]"  # only judge prompts carry this field


def example(tiny_db: Path, question: str = QUESTION, gold: str | None = GOOD) -> dspy.Example:
    fields: dict[str, Any] = {"question": question, "db_id": "tiny", "db_path": str(tiny_db)}
    if gold is not None:
        fields["gold_sql"] = gold
    return dspy.Example(**fields).with_inputs("question", "db_id", "db_path")


def answer(sql: str) -> dspy.Prediction:
    return dspy.Prediction(answer=Answer(question="How many users are suspended?", sql=sql, status=Status.ANSWERED,
                                         explanation="counts suspended users"))


# --------------------------------------------------------------------------- metrics


def test_execution_metric_is_a_float_or_a_bool_when_tracing(tiny_db: Path) -> None:
    ex = example(tiny_db)
    assert execution_match(ex, answer(GOOD)) == 1.0 and execution_match(ex, answer(WRONG)) == 0.0
    assert execution_match(ex, answer(GOOD), trace=[]) is True
    assert execution_match(ex, answer(WRONG), trace=[]) is False
    assert execution_match(ex, None) == 0.0


def test_judge_metric_speaks_each_optimizers_convention_with_one_judge_call(tiny_db: Path) -> None:
    issues = ["ignores unblocked users"]
    judge = logprob_lm([scripted_verdict(0.8, issues, [f"fix {i}" for i in issues])])  # a second call finds no reply
    metric = make_metric("judge", judge_model=judge)
    ex, pred = example(tiny_db, gold=None), answer(GOOD)
    assert metric(ex, pred) == pytest.approx(0.8)  # the judge model's P(True)
    assert metric(ex, pred, trace=[]) is True
    gepa = metric(ex, pred, None, "draft", [])
    assert isinstance(gepa, dspy.Prediction) and gepa.score == pytest.approx(0.8)
    assert "Issue: ignores unblocked users" in gepa.feedback and "Fix: fix ignores unblocked users" in gepa.feedback
    assert metric.for_gepa()(ex, pred).score == pytest.approx(0.8)
    assert len(judge.history) == 1
    judge_prompt = str(judge.history[0]["messages"])  # judged on what the query returned, not on its schemas
    assert "[[ ## execution_result ## ]]\\ncolumns: count(*)\\n1 row\\n| 1 |" in judge_prompt


def test_judge_metric_without_token_probabilities_scores_the_written_verdict(tiny_db: Path) -> None:
    ex = example(tiny_db, gold=None)
    assert make_metric("judge", judge_model=DummyLM([verdict(True)]))(ex, answer(GOOD)) == 1.0
    assert make_metric("judge", judge_model=DummyLM([verdict(False)]))(ex, answer(GOOD)) == 0.0


def test_judge_metric_scores_an_invalid_query_zero_without_asking(tiny_db: Path) -> None:
    judge = DummyLM([])
    result = make_metric("judge", judge_model=judge).score(example(tiny_db), answer("SELECT nope FROM users"))
    assert result.value == 0.0 and "invalid" in result.feedback[0] and "nope" in result.feedback[0]
    assert judge.history == []


def test_combined_metric_averages_and_bootstraps_on_the_threshold(tiny_db: Path) -> None:
    metric = make_metric("judge+execution",
                         judge_model=logprob_lm([scripted_verdict(0.4, ["misses the status filter"])]))
    ex = example(tiny_db)
    assert metric(ex, answer(GOOD)) == pytest.approx(0.7)
    assert metric(ex, answer(GOOD), trace=[]) is True
    feedback = metric(ex, answer(GOOD), None, "draft", None).feedback
    assert "Judge score 0.40" in feedback and "returns the expected rows" in feedback


def test_trace_audit_counts_where_the_metric_and_execution_disagree(tiny_db: Path) -> None:
    fooled = TraceAudit(threshold=0.7)  # a judge that accepts everything: it accepts the wrong count too
    metric = fooled.watch(make_metric("judge", judge_model=logprob_lm([scripted_verdict(0.9)] * 2)))
    assert metric(example(tiny_db), answer(GOOD), trace=[]) is True
    assert metric(example(tiny_db), answer(WRONG), trace=[]) is True
    assert metric(example(tiny_db, gold=None), answer(GOOD), trace=[]) is True  # no gold: counted, not graded
    assert fooled.summary() == {
        "traces": 3, "execution_matches": 1, "graded_by_execution": 2,
        "metric_accepted": 3, "metric_accepts_execution_rejects": 1, "metric_rejects_execution_accepts": 0,
        "judge_alone_accepted": 3, "judge_alone_accepts_execution_rejects": 1,
        "judge_alone_rejects_execution_accepts": 0,
    }
    doubting = TraceAudit(threshold=0.7)  # with execution in the metric, the judge's doubt alone rejects nothing right
    metric = doubting.watch(make_metric("judge+execution", judge_model=logprob_lm([scripted_verdict(0.45)] * 2)))
    assert metric(example(tiny_db), answer(GOOD), trace=[]) is True
    assert metric(example(tiny_db), answer(WRONG), trace=[]) is False
    summary = doubting.summary()
    assert summary["metric_accepts_execution_rejects"] == 0 and summary["metric_rejects_execution_accepts"] == 0
    assert summary["judge_alone_accepted"] == 0 and summary["judge_alone_rejects_execution_accepts"] == 1
    assert doubting.rows[0]["scores"] == {"judge": pytest.approx(0.45), "execution": 1.0}


def test_gepa_feedback_carries_the_execution_facts(tiny_db: Path) -> None:
    result = make_metric("execution")(example(tiny_db), answer("SELECT missing FROM users"), None, "draft", None)
    assert result.score == 0.0 and "failed to execute" in result.feedback


def test_metric_names_and_gold_are_checked(tiny_db: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown metric 'bleu'"):
        make_metric("bleu")
    with pytest.raises(ConfigurationError, match="needs gold SQL"):
        make_metric("execution")(example(tiny_db, gold=None), answer(GOOD))


# --------------------------------------------------------------------------- llm_as_judge_reward


@pytest.mark.parametrize(
    ("reply", "expected"),
    [({"score": 0.85}, {"reward": 0.85, "raw_score": 0.85}),
     ({"score": 1.7}, {"reward": 1.0, "raw_score": 1.7}),
     ({"score": -2}, {"reward": 0.0, "raw_score": -2.0}),
     ({"score": "excellent"}, {"reward": 0.0, "raw_score": 0.0})],
)
def test_reward_clamps_and_gives_zero_when_unparseable(reply: dict, expected: dict) -> None:
    assert llm_as_judge_reward("SELECT 1", "SELECT 1", DummyLM([reply, reply])) == expected


def test_reward_takes_its_judge_from_llm_judge_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEXT2SQL_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("LLM_JUDGE_MODEL", "anthropic/claude-haiku-4-5")
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        llm_as_judge_reward("Paris", "Paris is the capital of France")


def test_judge_gold_metric_uses_the_reward_judge(tiny_db: Path) -> None:
    metric = make_metric("judge-gold", judge_model=DummyLM([{"score": 0.9}]))
    assert metric(example(tiny_db), answer(GOOD)) == pytest.approx(0.9)


# --------------------------------------------------------------------------- demos


def test_demo_schemas_keep_only_the_tables_their_sql_uses() -> None:
    rendered = ("-- SQLite database 'x'\n\nCREATE TABLE users (id INTEGER)\n\n"
                "-- relevance 0.2\nCREATE TABLE blocks (id INTEGER)")
    kept = keep_tables(rendered, tables_read("SELECT u.id FROM users AS u"))
    assert kept == "-- SQLite database 'x'\n\nCREATE TABLE users (id INTEGER)"
    assert tables_read("not sql at all (") == set()


SCHEMAS = "-- SQLite database 'x'\n\nCREATE TABLE users (id INTEGER)\n\nCREATE TABLE blocks (id INTEGER)"


@pytest.mark.parametrize(("outputs", "shown"), [
    ({"sql": "SELECT id FROM users"}, "-- SQLite database 'x'\n\nCREATE TABLE users (id INTEGER)"),
    ({"sql": "SELECT 1"}, "-- SQLite database 'x'"),
    ("Couldn't parse the output as per the expected output format.", "-- SQLite database 'x'"),
])  # fmt: skip
def test_reflective_examples_show_only_the_tables_their_sql_reads(outputs: Any, shown: str) -> None:
    example = {"Inputs": {"table_schemas": SCHEMAS, "question": "q"}, "Generated Outputs": outputs, "Feedback": "f"}
    compacted = compact_reflections({"draft": [example]})["draft"][0]
    assert compacted == {**example, "Inputs": {"table_schemas": shown, "question": "q"}}


# --------------------------------------------------------------------------- compile


def compile_folder(tmp_path: Path, tiny_db: Path) -> Path:
    return write_spider_folder(tmp_path / "data", tiny_db, {"train": TRAIN, "dev": DEV})


def scripted(pairs: list[tuple[str, str]], judge_score: float = 0.9) -> dspy.LM:
    """Replies by prompt content: any judge prompt gets a verdict with P(True) = ``judge_score``, a drafting
    prompt the gold SQL of its question."""
    replies = {JUDGE_KEY: scripted_verdict(judge_score)}
    replies.update({q: scripted_draft(sql, 0.9) for q, sql in pairs})
    return logprob_lm(replies)


def test_bootstrap_compile_saves_state_and_sidecar_and_loads_back(tmp_path: Path, tiny_db: Path) -> None:
    data, out = compile_folder(tmp_path, tiny_db), tmp_path / "compiled" / "v2.json"
    argv = ["--program", "v2", "--optimizer", "bootstrap", "--metric", "judge+execution", "--data", str(data),
            "--out", str(out), "--retrieval", "keyword", "--train-limit", "3", "--dev-limit", "1", "--max-demos", "2"]
    with dspy.context(lm=scripted(TRAIN + DEV)):
        assert optimize_main(argv) == 0
    meta = json.loads(metadata_path(out).read_text())
    assert meta["program"] == "v2" and meta["optimizer"] == "bootstrap" and meta["metric"] == "judge+execution"
    assert meta["train_size"] == 3 and meta["dev_size"] == 1 and meta["seed"] == 0 and meta["date"]
    assert meta["dev_before"] == {"metric": 0.95, "execution_accuracy": 1.0, "n": 1}
    assert meta["demos"]["draft"] == 2
    assert meta["demos"]["judge"] == meta["demos"]["repair.react"] == meta["demos"]["repair.extract.predict"] == 0
    assert not state_of(out)["judge"]["demos"], "a judge demo would be the judge's own verdict, not the truth"
    audit = meta["trace_audit"]  # every training trace the optimizer scored, set against execution
    assert audit["traces"] == len(meta["traces"]) >= 2 and audit["metric_accepts_execution_rejects"] == 0
    assert all(row["execution_match"] and row["accepted"] for row in meta["traces"])
    state = state_of(out)
    demo = state["draft"]["demos"][0]
    assert demo["sql"] in {sql for _, sql in TRAIN}
    assert tables_read(demo["sql"]) >= {t.lower() for t in _created(demo["table_schemas"])}
    program = make_program(str(out), db_path=tiny_db, retrieval_type="keyword")
    assert [d["question"] for d in program.draft.demos] == [d["question"] for d in state["draft"]["demos"]]


def state_of(compiled: Path) -> dict[str, Any]:
    return json.loads(compiled.read_text())


def _created(schemas: str) -> set[str]:
    return {line.split()[2] for line in schemas.splitlines() if line.startswith("CREATE TABLE")}


def test_gepa_and_mipro_wiring(
    tmp_path: Path, tiny_db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    data = compile_folder(tmp_path, tiny_db)
    instruction = "Write one SQLite query over the given tables that answers the question."
    proposer = DummyLM({"": {"new_instruction": instruction, "proposed_instruction": instruction}})
    monkeypatch.setattr("text2sql_dspy.optimize.compile._reflection_lm", lambda config, student: proposer)
    common = ["--program", "baseline", "--metric", "execution", "--data", str(data), "--retrieval", "keyword",
              "--train-limit", "2", "--dev-limit", "1"]
    wrong_on_train = scripted([(q, "SELECT 1") for q, _ in TRAIN] + DEV)  # failures give GEPA something to reflect on
    with dspy.context(lm=wrong_on_train):
        out = tmp_path / "gepa.json"
        assert optimize_main([*common, "--optimizer", "gepa", "--out", str(out), "--max-metric-calls", "6"]) == 0
        assert json.loads(metadata_path(out).read_text())["optimizer"] == "gepa"
        reflection_prompts = [str(entry["messages"] or entry["prompt"]) for entry in proposer.history]
        assert any("Execution: the query returns 1 rows" in p for p in reflection_prompts), "feedback reached GEPA"
        assert not any("CREATE TABLE" in p for p in reflection_prompts), "`SELECT 1` reads no table: none is shown"
    proposer.history.clear()
    monkeypatch.setattr(proposer, "copy", lambda **_: proposer)  # MIPROv2 proposes on a copy: keep one history
    with dspy.context(lm=scripted(TRAIN + DEV)):  # right on train: bootstrapped traces, each with its schema
        out = tmp_path / "mipro.json"
        assert optimize_main([*common, "--optimizer", "mipro", "--out", str(out), "--num-trials", "2"]) == 0
        assert json.loads(metadata_path(out).read_text())["dev_after"]["n"] == 1
        assert instruction in caplog.text, "MIPROv2's prompt model proposed a candidate instruction"
    proposals = [str(entry["messages"] or entry["prompt"]) for entry in proposer.history]
    assert proposals and not any("CREATE TABLE" in p for p in proposals), "no schema-sized demos in a proposal prompt"


def test_compile_refuses_bad_flags(tmp_path: Path, tiny_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = compile_folder(tmp_path, tiny_db)
    code = optimize_main(["--program", "v1", "--optimizer", "bootstrap", "--metric", "bleu", "--data", str(data),
                          "--out", str(tmp_path / "x.json"), "--retrieval", "keyword"])
    assert code == 2 and "unknown metric 'bleu'" in capsys.readouterr().err
    code = optimize_main(["--program", "v1", "--optimizer", "bootstrap", "--data", str(data),
                          "--out", str(tmp_path / "x.txt"), "--retrieval", "keyword"])
    assert code == 2 and ".json" in capsys.readouterr().err


def test_compile_survives_malformed_replies(tmp_path: Path, tiny_db: Path) -> None:
    data, out = compile_folder(tmp_path, tiny_db), tmp_path / "junk.json"
    argv = ["--program", "v2", "--optimizer", "bootstrap", "--metric", "judge+execution", "--data", str(data),
            "--out", str(out), "--retrieval", "keyword", "--train-limit", "2", "--dev-limit", "1"]
    with dspy.context(lm=DummyLM({"": {"junk": "not a field of any signature"}})):
        assert optimize_main(argv) == 0
    meta = json.loads(metadata_path(out).read_text())
    assert meta["dev_before"]["metric"] == 0.0 and meta["dev_after"]["execution_accuracy"] == 0.0
    assert meta["demos"]["draft"] == 0, "no reply was usable, so no demo was bootstrapped"


def test_labeled_demos_teach_the_gold_sql_when_nothing_bootstraps(tmp_path: Path, tiny_db: Path) -> None:
    data, out = compile_folder(tmp_path, tiny_db), tmp_path / "labeled.json"
    argv = ["--program", "v2", "--optimizer", "bootstrap", "--metric", "judge+execution", "--data", str(data),
            "--out", str(out), "--retrieval", "keyword", "--train-limit", "3", "--dev-limit", "1",
            "--max-labeled-demos", "2"]
    always_wrong = scripted([(q, "SELECT 1") for q, _ in TRAIN + DEV], judge_score=0.2)
    with dspy.context(lm=always_wrong):
        assert optimize_main(argv) == 0
    meta = json.loads(metadata_path(out).read_text())
    assert meta["budget"]["max_labeled_demos"] == 2
    assert meta["demos"]["draft"] == 2 and meta["demos"]["judge"] == 0, "gold demos go to the drafting step only"
    demos = json.loads(out.read_text())["draft"]["demos"]
    for demo in demos:
        gold = dict(TRAIN)[demo["question"]]
        assert demo["sql"] == gold and "explanation" not in demo
        assert {t.lower() for t in _created(demo["table_schemas"])} == tables_read(gold)

    program = make_program(str(out), db_path=tiny_db, retrieval_type="keyword")
    lm = scripted(DEV)
    with dspy.context(lm=lm):
        program(question=DEV[0][0])
    drafting_prompt = next(str(e["messages"]) for e in lm.history if JUDGE_KEY not in str(e["messages"]))
    assert f"[[ ## sql ## ]]\\n{demos[0]['sql']}" in drafting_prompt  # shown as a worked answer
    assert "Not supplied for this particular example" not in drafting_prompt  # the SQL is a draft's only output


def test_a_drafting_demo_written_over_another_database_is_not_shown(tiny_db: Path) -> None:
    program = make_program("v2", db_path=tiny_db, retrieval_type="keyword")
    here = dspy.Example(question="How many users are there?", table_schemas="", hints="",
                        sql="SELECT count(*) FROM users")
    elsewhere = dspy.Example(question="How many dogs are there?", table_schemas="", hints="",
                             sql="SELECT count(dog_id) FROM Dogs")
    program.draft.demos = [here, elsewhere]
    lm = scripted(DEV)
    with dspy.context(lm=lm):
        program(question=DEV[0][0])
    drafting_prompts = [str(e["messages"]) for e in lm.history if JUDGE_KEY not in str(e["messages"])]
    assert drafting_prompts and all(here.sql in p and "Dogs" not in p for p in drafting_prompts)
    assert program.draft.demos == [here, elsewhere]  # the compiled program keeps both for other databases
