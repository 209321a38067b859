"""The web server's endpoints over scripted replies: answers, progress, the queue, time limits, bad bodies."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft, logprob_lm, scripted_draft, scripted_verdict
from tests.web_fakes import FAILED_BY_USER, GatedLM, client_for, scripted_service
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.calibration import Calibration, save_calibration
from text2sql_dspy.programs.examples.identity import database_key
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.web.service import Service

QUESTION = "Which users failed to log in, and how often?"


@pytest.fixture
def service(tiny_db: Path) -> Service:
    service = scripted_service(tiny_db)
    yield service
    service.close()


def sse_events(client, url: str) -> list[tuple[str, str]]:  # noqa: ANN001 - TestClient
    events, name, data = [], None, []
    with client.stream("GET", url) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and name:
                events.append((name, "\n".join(data)))
                name, data = None, []
    return events


def test_ask_returns_the_answer_formatted_sql_rows_and_a_bar_chart(service: Service) -> None:
    reply = client_for(service).post("/api/ask", json={"question": QUESTION})
    assert reply.status_code == 200
    body = reply.json()
    assert body["sql"] == FAILED_BY_USER and body["status"] == "answered"
    assert body["db"] == "tiny" and body["program"] == "v1"
    assert body["question"] == QUESTION and body["explanation"] and body["judge_score"] is None
    assert [r["sql"] for r in body["readings"] if r["chosen"]] == [FAILED_BY_USER]
    assert body["steps"][0]["kind"] == "draft" and body["metrics"]["lm_calls"] >= 1
    assert body["sql_pretty"].startswith("SELECT\n  u.email,\n  COUNT(*) AS failed\nFROM users AS u")
    assert body["result"]["columns"] == ["email", "failed"]
    assert body["result"]["rows"] == [["bob@acme.test", 3], ["ann@acme.test", 1]] and body["result"]["row_count"] == 2
    assert body["verdict"] == "uncalibrated" and body["verdict_inputs"] is None  # V1: its own score, no probability
    assert "confidence_words" not in body and "judge_words" not in body and "sure" not in body
    assert body["chart"]["kind"] == "bar"
    assert body["chart"]["figure"]["data"][0] == {"type": "bar", "x": ["bob@acme.test", "ann@acme.test"], "y": [3, 1],
                                                 "name": "failed"}


def v2_answer(tiny_db: Path) -> dict:
    """V2's answer through the API: a right count, drafted at 0.97, judged 0.92."""
    lm = logprob_lm([scripted_draft("SELECT count(*) FROM users WHERE status = 'suspended'", 0.97),
                     scripted_verdict(0.92)])
    service = scripted_service(tiny_db, lm, program="v2")
    try:
        return client_for(service).post("/api/ask", json={"question": "How many users are suspended?"}).json()
    finally:
        service.close()


def test_v2_answer_shows_the_judge_s_score_and_no_words_of_its_own(tiny_db: Path) -> None:
    body = v2_answer(tiny_db)
    assert body["judge_score"] == pytest.approx(0.92) and "judge_words" not in body
    assert body["verdict"] == "uncalibrated"  # V2 without its verifier: the judge's mix is no probability
    assert body["chart"]["kind"] == "number" and body["chart"]["value"] == 1
    assert body["calibrated"] is False


def test_a_calibrated_answer_is_likely_right_only_when_sure(
    tiny_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path))  # this test's own calibration, seen by no other test
    calibration = Calibration((0.0,) * 7, 1.0, answers=40, right=29, sure_at=0.9, model="openai/scripted-logprobs")
    program = ReActAgentV2(tiny_db, lm=logprob_lm([]))  # the program the server builds: V2 as shipped
    save_calibration(calibration, database_key(open_source(tiny_db)), program.calibration_name())
    body = v2_answer(tiny_db)
    assert body["calibrated"] is True and body["confidence"] == pytest.approx(0.731, abs=1e-3)
    assert body["verdict"] == "check this"  # the judge's 0.92 alone no longer says "likely right"
    assert body["verdict_inputs"] == {"cut_off": "calibration", "sure": 0.9, "doubtful": 0.3, "noted": False,
                                      "valid": True, "submitted": True}
    assert body["calibration"] == "calibrated on 40 verified questions of this database, 29 answered right"


def test_the_page_follows_progress_over_sse_and_gets_the_rendered_answer(service: Service) -> None:
    client = client_for(service)
    assert "Ask your database a question" in client.get("/").text
    started = client.post("/jobs", json={"question": QUESTION, "db": "tiny", "program": "v1"})
    assert started.status_code == 202
    events = sse_events(client, started.json()["events"])
    stages = [json.loads(data)["stage"] for name, data in events if name == "stage"]
    assert stages[:3] == ["queued", "drafting", "checking"] and stages[-1] == "showing"
    name, html = events[-1]
    assert name == "answer"
    assert 'class="chart" data-kind="bar"' in html and "bob@acme.test" in html and "Download CSV" in html
    assert "<strong>2</strong> rows" in html and ">Right</button>" in html and "Candidates (1)" in html
    assert "(uncalibrated: text2sql calibrate fits it to this database)" in html
    job = started.json()["id"]
    assert client.get(f"/jobs/{job}").text.strip() == html.strip()
    csv = client.get(f"/jobs/{job}/result.csv")
    assert csv.status_code == 200 and csv.text.splitlines() == ["email,failed", "bob@acme.test,3", "ann@acme.test,1"]
    history = client.get("/history").text
    assert QUESTION in history and "tiny · v1 · done" in history


def test_edited_sql_is_validated_and_run_read_only(service: Service) -> None:
    client = client_for(service)
    rows = client.post("/check", json={"sql": "SELECT email FROM users WHERE status = 'active'", "db": "tiny"})
    assert rows.status_code == 200 and 'data-ok="1"' in rows.text and "cy@globex.test" in rows.text
    for write in ("DELETE FROM users", "UPDATE users SET status = 'x'", "DROP TABLE users"):
        refused = client.post("/check", json={"sql": write, "db": "tiny"})
        assert 'data-ok="0"' in refused.text and "The validator refused this query" in refused.text
    unknown = client.post("/check", json={"sql": "SELECT nope FROM users", "db": "tiny"})
    assert 'data-ok="0"' in unknown.text


def test_health_and_the_openapi_page(service: Service) -> None:
    client = client_for(service)
    health = client.get("/api/health").json()
    assert health["status"] == "ok" and health["databases"] == ["tiny"] and health["waiting"] == 0
    assert health["programs"][0] == "v1" and {"baseline", "v1", "v2"} <= set(health["programs"])
    spec = client.get("/openapi.json").json()
    assert {"/api/ask", "/api/examples", "/api/health"} <= set(spec["paths"])
    page = client.get("/api")
    assert page.status_code == 200 and "/api/ask" in page.text and "cdn" not in page.text.lower()
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN


def test_assets_are_served_from_the_package(service: Service) -> None:
    client = client_for(service)
    plotly = client.get("/assets/plotly.min.js")
    assert plotly.status_code == 200 and len(plotly.content) > 1_000_000 and b"plotly" in plotly.content[:2000].lower()
    page = client.get("/").text
    assert "http://" not in page and "https://" not in page  # nothing from another host
    for asset in ("/static/app.js", "/static/app.css"):
        assert client.get(asset).status_code == 200


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "question"),
        ({"question": "   "}, "question is empty"),
        ({"question": "x", "sql": "DROP TABLE users"}, "extra"),
        ({"question": 42}, "string"),
        ({"question": "x" * 4001}, "4000"),
        ({"question": "How many?", "db": "nope"}, "unknown database 'nope': this server has tiny"),
        ({"question": "How many?", "program": "v9"}, "unknown program 'v9'"),
    ],
)
def test_bad_ask_bodies_are_422_naming_the_problem(service: Service, body: dict, needle: str) -> None:
    client = client_for(service)
    for url in ("/api/ask", "/jobs"):
        reply = client.post(url, json=body)
        assert reply.status_code == 422
        assert needle in json.dumps(reply.json()["detail"])


def test_a_body_that_is_not_json_is_422(service: Service) -> None:
    reply = client_for(service).post("/api/ask", content=b"question=hi", headers={"Content-Type": "text/plain"})
    assert reply.status_code == 422


def test_a_full_queue_answers_503_with_retry_after_and_the_server_recovers(tiny_db: Path) -> None:
    gate = threading.Event()
    service = scripted_service(tiny_db, GatedLM([draft(FAILED_BY_USER)] * 10, gate), max_waiting=2)
    client = client_for(service)
    try:
        running = client.post("/jobs", json={"question": QUESTION}).json()["id"]
        _wait_until(lambda: service.queue.running is not None)
        waiting = [client.post("/jobs", json={"question": QUESTION}) for _ in range(2)]
        assert [r.status_code for r in waiting] == [202, 202]
        for url in ("/jobs", "/api/ask"):
            full = client.post(url, json={"question": QUESTION})
            assert full.status_code == 503 and int(full.headers["Retry-After"]) >= 1
            assert "the model is busy" in full.json()["detail"]
        assert client.get("/api/health").json()["waiting"] == 2
        gate.set()
        for job in [running] + [r.json()["id"] for r in waiting]:
            assert service.queue.get(job).wait(10) and service.queue.get(job).status == "done"
        assert client.post("/api/ask", json={"question": QUESTION}).status_code == 200
    finally:
        gate.set()
        service.close()


def test_an_answer_past_its_time_limit_is_a_clear_504_and_the_next_one_works(tiny_db: Path) -> None:
    gate = threading.Event()
    service = scripted_service(tiny_db, GatedLM([draft(FAILED_BY_USER)] * 10, gate), timeout_s=0.5)
    client = client_for(service)
    try:
        late = client.post("/api/ask", json={"question": QUESTION})
        assert late.status_code == 504
        detail = late.json()["detail"]
        assert "no answer within the time limit of 0.5 s" in detail and "--timeout" in detail
        started = client.post("/jobs", json={"question": QUESTION}).json()
        name, message = sse_events(client, started["events"])[-1]
        assert name == "failure" and "time limit" in message
        service.queue.timeout_s = 30
        gate.set()
        assert client.post("/api/ask", json={"question": QUESTION}).status_code == 200
    finally:
        gate.set()
        service.close()


def test_a_malformed_reply_is_an_answer_that_says_so(tiny_db: Path) -> None:
    service = scripted_service(tiny_db, DummyLM([]))  # no reply left: the LM's reply cannot be parsed
    client = client_for(service)
    try:
        body = client.post("/api/ask", json={"question": QUESTION}).json()
        page = client.get(f"/jobs/{body['job']}").text
    finally:
        service.close()
    assert body["sql"] == "" and body["status"] == "failed" and "malformed model reply" in body["reason"]
    assert body["result"] is None
    assert "The program produced no query for this question." in page and "malformed model reply" in page


def test_a_program_that_raises_fails_one_answer_not_the_server(service: Service,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(service)
    real = service.program
    monkeypatch.setattr(service, "program", lambda spec: (_ for _ in ()).throw(RuntimeError("boom")))
    broken = client.post("/api/ask", json={"question": QUESTION})
    assert broken.status_code == 500
    assert broken.json()["detail"] == "the answer failed inside the server (RuntimeError: boom)."
    monkeypatch.setattr(service, "program", real)
    assert client.post("/api/ask", json={"question": QUESTION}).status_code == 200


def _wait_until(condition, timeout: float = 10.0) -> None:  # noqa: ANN001
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.01)


def test_an_unknown_answer_is_404_naming_the_fix(service: Service) -> None:
    client = client_for(service)
    for url in ("/jobs/nope", "/jobs/nope/events", "/jobs/nope/result.csv"):
        missing = client.get(url)
        assert missing.status_code == 404 and "ask again" in missing.json()["detail"]


def test_a_stage_emitted_just_before_the_end_is_still_sent() -> None:
    import asyncio

    from text2sql_dspy.programs.web.jobs import Job
    from text2sql_dspy.programs.web.pages import job_events

    class RacingJob(Job):
        """The worker emits its last stage and ends right after the stream reads the events (the race CI hit)."""

        def events_since(self, index: int) -> list[dict]:
            events = super().events_since(index)
            if index == 0:
                self.emit("showing")
                self.finish("failed", error="ended")
            return events

    class Connected:
        async def is_disconnected(self) -> bool:
            return False

    async def collect() -> list[dict[str, str]]:
        return [event async for event in job_events(job, Connected())]

    job = RacingJob("j1", None, deadline=time.monotonic() + 60, timeout_s=60)
    job.emit("queued")
    job.emit("checking")
    events = asyncio.run(collect())
    assert [json.loads(e["data"])["stage"] for e in events if e["event"] == "stage"] == ["queued", "checking",
                                                                                         "showing"]
    assert events[-1] == {"event": "failure", "data": "ended"}


def unsure_lm() -> object:
    """V2 on two results the checks support about equally (see tests/test_answer.py)."""
    return logprob_lm([scripted_draft("SELECT count(*) FROM users", 0.6),
                       scripted_draft("SELECT count(*) FROM users WHERE status = 'suspended'", 0.6),
                       scripted_draft("SELECT count(id) FROM users", 0.6), scripted_verdict(0.4),
                       scripted_verdict(0.7)])


def test_an_unsure_answer_shows_both_readings_and_asks_which(tiny_db: Path) -> None:
    service = scripted_service(tiny_db, unsure_lm(), program="v2")
    client = client_for(service)
    try:
        body = client.post("/api/ask", json={"question": "How many users are suspended?"}).json()
        page = client.get(f"/jobs/{body['job']}").text
    finally:
        service.close()
    assert body["status"] == "unsure" and body["sql"] == "SELECT count(*) FROM users"
    assert [r["sql"] for r in body["alternatives"]] == ["SELECT count(*) FROM users",
                                                         "SELECT count(*) FROM users WHERE status = 'suspended'"]
    assert [r["preview"]["rows"] for r in body["alternatives"]] == [[[3]], [[1]]]
    assert "Which did you mean?" in page and page.count('class="pick"') == 2
    assert "keeps rows where status = &#39;suspended&#39;" in page
