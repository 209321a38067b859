"""What a user sees when the served model is down, killed mid-run, too slow or answers garbage.

The slow and garbled replies come from a loopback stub server (tests/stub_server.py), which is a
stub, not a model; "killed mid-run" kills a real llama.cpp server process. Each case ends, within a
bounded time, in one error line that names the fix (``text2sql ask`` exits 3) or in per-question
failures that a rerun of the same evaluation asks again.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from tests.served_model import MODEL_ALIAS, ServedModel, free_port
from tests.served_model import start as start_served_model
from tests.stub_server import StubServer, fixed_reply, openai_reply
from tests.tiny_db import write_spider_folder

QUESTIONS = [
    ("How many organizations are there?", "SELECT count(*) FROM organizations"),
    ("How many users are suspended?", "SELECT count(*) FROM users WHERE status = 'suspended'"),
    ("List user emails.", "SELECT email FROM users"),
    ("How many login attempts failed?", "SELECT count(*) FROM login_attempts WHERE success = 0"),
]
MODEL = f"openai/{MODEL_ALIAS}"
DRAFT = "[[ ## sql ## ]]\nSELECT count(*) FROM organizations"


def ask(tiny_db: Path, tiny_schemas: Path, capsys: pytest.CaptureFixture, *extra: str) -> tuple[int, str, float]:
    from text2sql_dspy import cli

    start = time.monotonic()
    code = cli.main(["ask", "How many organizations are there?", "--db", str(tiny_db), "--schema", str(tiny_schemas),
                     "--model", MODEL, "--retrieval", "keyword", *extra])
    return code, capsys.readouterr().err, time.monotonic() - start


def evaluate(data: Path, out: Path, *extra: str) -> int:
    from text2sql_dspy.optimize import evaluation

    return evaluation.main(["--data", str(data), "--program", "baseline", "--model", MODEL, "--retrieval", "keyword",
                            "--out", str(out), *extra])


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_no_server_running_is_one_error_naming_the_fix(tiny_db: Path, tiny_schemas: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("TEXT2SQL_API_BASE", f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    code, err, seconds = ask(tiny_db, tiny_schemas, capsys)
    assert code == 3 and seconds < 30  # two retries, after 1 s and 2 s
    message = err[err.find("error: "):]  # after any progress bar (indexing the database's values)
    assert err.count("error: ") == 1 and "Connection refused" in message and "Fix: nothing answered there" in message
    assert "TEXT2SQL_API_BASE" in err and "Traceback" not in err


def test_a_reply_slower_than_the_timeout_is_one_error_naming_the_setting(tiny_db, tiny_schemas, capsys,
                                                                         monkeypatch) -> None:
    with StubServer(openai_reply(DRAFT, delay_s=20)) as stub:
        monkeypatch.setenv("TEXT2SQL_API_BASE", stub.url + "/v1")
        monkeypatch.setenv("TEXT2SQL_TIMEOUT_S", "1")
        monkeypatch.setenv("TEXT2SQL_RETRIES", "1")
        code, err, seconds = ask(tiny_db, tiny_schemas, capsys)
        assert len(stub.requests) == 2  # tried, and tried once more
    assert code == 3 and seconds < 10  # 1 s, a 1 s pause, 1 s: not the stub's 20 s
    assert "longer than 1 s: raise TEXT2SQL_TIMEOUT_S" in err


def test_a_reply_that_is_not_json_is_one_error_naming_the_fix(tiny_db, tiny_schemas, capsys, monkeypatch) -> None:
    with StubServer(fixed_reply(b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")) as stub:
        monkeypatch.setenv("TEXT2SQL_API_BASE", stub.url + "/v1")
        code, err, seconds = ask(tiny_db, tiny_schemas, capsys)
    assert code == 3 and seconds < 10
    assert "is not JSON" in err and "not an OpenAI-compatible server's reply" in err and "ending in /v1" in err


def test_json_of_the_wrong_shape_is_a_recorded_unusable_reply(tiny_db: Path, tmp_path: Path, monkeypatch) -> None:
    with StubServer(fixed_reply(b'{"status": "ok"}')) as stub:
        monkeypatch.setenv("TEXT2SQL_API_BASE", stub.url + "/v1")
        data, out = write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS[:1]}), tmp_path / "run"
        assert evaluate(data, out) == 0
    (record,) = records(out)
    assert record["sql"] == "" and not record["correct"] and "error" not in record
    assert "malformed model reply" in record["reason"] or "no SQL" in record["reason"]


def test_a_slow_server_fails_questions_stops_the_run_and_a_rerun_completes(tiny_db: Path, tmp_path: Path,
                                                                          monkeypatch, capsys) -> None:
    data, out = write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS}), tmp_path / "run"
    monkeypatch.setenv("TEXT2SQL_TIMEOUT_S", "1")
    monkeypatch.setenv("TEXT2SQL_RETRIES", "0")
    with StubServer(openai_reply(DRAFT, delay_s=20)) as slow:
        monkeypatch.setenv("TEXT2SQL_API_BASE", slow.url + "/v1")
        start = time.monotonic()
        assert evaluate(data, out) == 3
        assert time.monotonic() - start < 20
    failed = records(out)
    assert len(failed) == 3 and all(r["service_failure"] and "TEXT2SQL_TIMEOUT_S" in r["error"] for r in failed)
    assert "3 questions in a row failed on the model service" in capsys.readouterr().err

    with StubServer(openai_reply(DRAFT)) as good:
        monkeypatch.setenv("TEXT2SQL_API_BASE", good.url + "/v1")
        assert evaluate(data, out) == 0
        assert len(good.requests) == 4  # the 3 failed questions asked again, and the one never asked
    done = records(out)
    assert sorted(r["index"] for r in done) == [0, 1, 2, 3] and not any("error" in r for r in done)


@pytest.mark.served_model
def test_a_server_killed_mid_run_leaves_failures_that_a_rerun_completes(
    served_model: ServedModel, tiny_db: Path, tmp_path: Path, monkeypatch,
) -> None:
    data, out = write_spider_folder(tmp_path / "spider", tiny_db, {"test": QUESTIONS}), tmp_path / "run"
    doomed = start_served_model(log_dir=tmp_path)  # a second server, to kill
    monkeypatch.setenv("TEXT2SQL_API_BASE", doomed.api_base)
    monkeypatch.setenv("TEXT2SQL_RETRIES", "0")
    outcome: dict[str, int] = {}
    run = threading.Thread(target=lambda: outcome.update(code=evaluate(data, out, "--threads", "2")))
    try:
        run.start()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not ((out / "records.jsonl").is_file() and records(out)):
            time.sleep(0.2)
        doomed.kill()  # SIGKILL with a question in flight
        killed_at = time.monotonic()
        run.join(timeout=120)
        assert not run.is_alive() and time.monotonic() - killed_at < 60  # nothing hangs
    finally:
        doomed.kill()
    assert outcome["code"] in (0, 3)  # 3 when the last three questions all failed
    first = records(out)
    assert any(r.get("service_failure") for r in first) and any("error" not in r for r in first)

    monkeypatch.setenv("TEXT2SQL_API_BASE", served_model.api_base)  # the same model, served elsewhere
    assert evaluate(data, out, "--threads", "2") == 0
    done = records(out)
    assert sorted(r["index"] for r in done) == [0, 1, 2, 3] and not any("error" in r for r in done)
