"""The product against a real OpenAI-compatible server: llama-cpp-python's, over the embedded GGUF, on 127.0.0.1.

The ``served_model`` fixture (conftest) starts the server once per session. Questions are asked
on the tests' four-table database: the bundled 31-table schema is ~8k prompt tokens, which a
2-core CPU reads in ~3 minutes per process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest
import sqlglot

from tests.served_model import MODEL_ALIAS, ServedModel
from tests.tiny_db import write_spider_folder

pytestmark = pytest.mark.served_model

QUESTION = "How many organizations are there?"  # one table, one aggregate: greedy decoding has one obvious reply
QUESTIONS = [
    (QUESTION, "SELECT count(*) FROM organizations"),
    ("How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'"),
    ("List user emails.", "SELECT email FROM users"),
    ("How many login attempts failed?", "SELECT count(*) FROM login_attempts WHERE success = 0"),
]
REPO = Path(__file__).resolve().parents[1]
ROUTED = f"hosted_vllm/{MODEL_ALIAS}"  # how DSPy addresses `--model openai/<name>` on a self-hosted server


@pytest.fixture
def served_env(served_model: ServedModel, monkeypatch: pytest.MonkeyPatch) -> ServedModel:
    """The environment the README gives: TEXT2SQL_API_BASE at the server."""
    monkeypatch.setenv("TEXT2SQL_API_BASE", served_model.api_base)
    return served_model


def rows_of(db: Path, sql: str) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return sorted(conn.execute(sql).fetchall())


def canonical(sql: str) -> str:
    return sqlglot.parse_one(sql, read="sqlite").sql(dialect="sqlite", normalize=True)


def test_text2sql_ask_answers_through_the_server(served_env: ServedModel, tiny_db: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    from text2sql_dspy import cli

    before = served_env.completions_served()
    code = cli.main(["ask", QUESTION, "--db", str(tiny_db), "--model", served_env.model])  # the docs' command
    out = capsys.readouterr()
    assert code == 0, out.err
    query, _, summary = out.out.strip().partition("\n\n")
    assert rows_of(tiny_db, query) == [(2,)]
    calls = int(summary.split(" LM calls")[0].rsplit("| ", 1)[1])
    assert served_env.completions_served() - before == calls >= 2  # draft and judge, all on the server
    assert "judge score" in summary and "$" not in summary  # priced at 0: the embedded model, served


def test_ask_json_counts_the_servers_tokens_and_names_the_judges_source(served_env: ServedModel, tiny_db: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    from text2sql_dspy import cli

    code = cli.main(["ask", QUESTION, "--db", str(tiny_db), "--model", served_env.model, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    answer = json.loads(out.out)  # the Answer, as JSON
    metrics = answer["metrics"]
    usage = metrics["by_model"][ROUTED]
    assert usage["calls"] == metrics["lm_calls"] and usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0
    assert metrics["cost_usd"] == 0.0 and answer["status"] == "answered"
    judged = [s["note"] for s in answer["steps"] if s["kind"] == "judge"]
    assert judged and "judge model's probability of 'True'" in judged[0]  # the score came from the server's logprobs


def test_v2_through_the_server_gives_the_in_process_engines_answer(served_env: ServedModel, tiny_db: Path,
                                                                   tiny_schemas: Path) -> None:
    from text2sql_dspy.programs.agents.registry import make_program

    answers = {}
    for model in (served_env.model, "local"):
        program = make_program("v2", db_path=tiny_db, schema_path=tiny_schemas, model_id=model,
                               retrieval_type="keyword")
        answers[model] = program.run(QUESTION)
    served, local = answers[served_env.model], answers["local"]
    assert served.valid and local.valid
    assert rows_of(tiny_db, served.sql) == rows_of(tiny_db, local.sql) == [(2,)]
    # Greedy on the same weights: the same query. The prompts differ by the prefilled field marker (the embedded
    # engine's alone) and the server's default repeat_penalty 1.1 (1.0 in process), which a one-line count survives.
    assert canonical(served.sql) == canonical(local.sql)
    assert served.judge_score == pytest.approx(local.judge_score, abs=0.15)


def test_the_judge_scores_from_the_servers_token_probabilities(served_env: ServedModel) -> None:
    from text2sql_dspy.programs.agents.drafting import NEUTRAL_CONFIDENCE, draft_sql
    from text2sql_dspy.programs.agents.judge import judge_sql
    from text2sql_dspy.programs.llm.factory import build_lm, supports_logprobs, supports_prefill
    from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
    from text2sql_dspy.signatures import DraftSQL, JudgeSQL

    lm = build_lm(served_env.model)
    assert lm.model == ROUTED and supports_logprobs(lm) and not supports_prefill(lm)
    with dspy.context(adapter=StablePrefixAdapter()):
        verdict = judge_sql(dspy.Predict(JudgeSQL), lm, question=QUESTION, sql="SELECT count(*) FROM organizations",
                            execution_result="1 row: count(*) = 2", explain=False)
        draft = draft_sql(dspy.Predict(DraftSQL), lm, question=QUESTION,
                          table_schemas="CREATE TABLE organizations (id INTEGER PRIMARY KEY, name TEXT, plan TEXT);")
    assert "judge model's probability of 'True'" in verdict.reasoning
    assert 0.0 <= verdict.correctness_score <= 1.0
    assert draft.error is None and "organizations" in draft.sql.lower()
    assert draft.confidence != NEUTRAL_CONFIDENCE and 0.0 < draft.confidence <= 1.0
    sent = lm.history[-1]["kwargs"]
    assert sent["logprobs"] is True and sent["stop"] == ["\n\n[["] and sent["max_tokens"] == 320


def test_v2_samples_on_the_server_follow_their_seeds(served_env: ServedModel) -> None:
    from text2sql_dspy.programs.agents.drafting import draft_sql
    from text2sql_dspy.programs.llm.factory import build_lm
    from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
    from text2sql_dspy.signatures import DraftSQL

    lm = build_lm(served_env.model)
    schema = "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT, status TEXT, last_login_at TEXT);"
    question = "Which users have not logged in since 2024, newest first, with their status?"

    def sample(seed: int) -> str:
        with dspy.context(adapter=StablePrefixAdapter()):
            return draft_sql(dspy.Predict(DraftSQL), lm, question=question, table_schemas=schema,
                             temperature=1.2, seed=seed).sql

    # the server keeps this prompt's state: the next two reuse it alike (a fresh prompt's logits differ slightly)
    sample(1)
    first, again = sample(1), sample(1)
    assert first and first == again  # a seed gives the same sample: the server got it (no client cache here)
    assert any(sample(seed) != first for seed in (2, 3, 4))  # and other seeds other samples
    assert [(h["kwargs"]["seed"], h["kwargs"]["temperature"]) for h in lm.history[:3]] == [(1, 1.2)] * 3


def test_evaluate_with_four_threads_against_the_server_keeps_every_record_once(
    served_env: ServedModel, tiny_db: Path, tmp_path: Path,
) -> None:
    from text2sql_dspy.optimize import evaluation

    data, out = write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS}), tmp_path / "run"
    code = evaluation.main(["--data", str(data), "--program", "v2", "--model", served_env.model, "--threads", "4",
                            "--out", str(out)])  # the docs' command
    assert code == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in records) == [0, 1, 2, 3]  # every question once
    assert not [r["error"] for r in records if "error" in r]
    assert all(r["metrics"]["lm_calls"] >= 2 and r["metrics"]["by_model"][ROUTED]["prompt_tokens"] > 0 for r in records)
    assert sum(r["correct"] for r in records) >= 2


def test_an_interrupted_evaluation_resumes_with_only_what_was_missing(
    served_env: ServedModel, tiny_db: Path, tmp_path: Path,
) -> None:
    from text2sql_dspy.optimize import evaluation

    data, out = write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS}), tmp_path / "run"
    argv = ["--data", str(data), "--program", "baseline", "--model", served_env.model, "--retrieval", "keyword",
            "--out", str(out)]
    records_file = out / "records.jsonl"
    # A terminal's Ctrl-C: SIGINT handled as Python's default, even where these tests run as a background job
    # (whose shell starts it with SIGINT ignored, which a child inherits and Python then keeps).
    run = subprocess.Popen([sys.executable, str(REPO / "evaluate.py"), *argv], env={**os.environ},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and run.poll() is None:
        if records_file.is_file() and records_file.read_text().count("\n") >= 1:
            run.send_signal(signal.SIGINT)  # Ctrl-C after the first answer
            break
        time.sleep(0.2)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 130, err
    kept = {r["index"]: r for r in map(json.loads, records_file.read_text().splitlines())}
    assert 1 <= len(kept) < len(QUESTIONS) and "rerun the same command to resume" in err

    before = served_env.completions_served()
    assert evaluation.main(argv) == 0
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert sorted(r["index"] for r in records) == [0, 1, 2, 3]
    missing = len(QUESTIONS) - len(kept)  # the baseline makes one call a question
    # The request in flight at Ctrl-C may still finish on the server (and be logged) after `before` was read.
    assert missing <= served_env.completions_served() - before <= missing + 1
    assert all(next(r for r in records if r["index"] == i) == kept[i] for i in kept)  # the kept answers, untouched
