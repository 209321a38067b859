"""The web server's guards: the token on every request, body limits, Host and Origin, and escaping of every value."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from dspy.utils import DummyLM

from tests.fakes import draft
from tests.web_fakes import client_for, scripted_service
from text2sql_dspy.programs.web.guard import LOOPBACK_HOSTS, TOKEN_COOKIE
from text2sql_dspy.programs.web.service import Service

TOKEN = "correct-horse-battery-staple"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def service(tiny_db: Path) -> Service:
    service = scripted_service(tiny_db, token=TOKEN)
    yield service
    service.close()


@pytest.mark.parametrize(
    ("method", "url"),
    [("GET", "/"), ("GET", "/static/app.js"), ("GET", "/assets/plotly.min.js"), ("GET", "/api/health"),
     ("GET", "/openapi.json"), ("GET", "/history"), ("POST", "/api/ask"), ("POST", "/api/examples"),
     ("POST", "/check")],
)
def test_with_a_token_every_request_needs_it(service: Service, method: str, url: str) -> None:
    client = client_for(service)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = client.request(method, url, headers=headers, json={})
        assert refused.status_code == 401 and "TEXT2SQL_TOKEN" in refused.json()["detail"]
    allowed = client.request(method, url, headers={"Authorization": f"Bearer {TOKEN}"}, json={})
    assert allowed.status_code != 401


def test_a_browser_logs_in_once_with_the_token_in_the_address(service: Service) -> None:
    client = client_for(service)
    assert client.get("/?token=wrong", follow_redirects=False).status_code == 401
    login = client.get(f"/?token={TOKEN}", follow_redirects=False)
    assert login.status_code == 303 and login.headers["location"] == "/"
    cookie = login.headers["set-cookie"]
    assert f"{TOKEN_COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert client.get("/").status_code == 200  # the client kept the cookie
    assert client.get("/api/health").json()["status"] == "ok"


def test_a_large_body_is_refused_before_it_is_read(tiny_db: Path) -> None:
    service = scripted_service(tiny_db, max_body_bytes=1000)
    client = client_for(service)
    try:
        big = client.post("/api/ask", json={"question": "x" * 2000})
        assert big.status_code == 413 and "larger than 1,000 bytes" in big.json()["detail"]

        def chunks():  # no Content-Length: counted as it arrives
            for _ in range(10):
                yield b"x" * 200

        streamed = client.post("/api/ask", content=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
        assert client.post("/api/ask", json={"question": "How many users?"}).status_code == 200
    finally:
        service.close()


def test_on_loopback_other_host_names_and_cross_site_posts_are_refused(tiny_db: Path) -> None:
    service = scripted_service(tiny_db)
    client = client_for(service, allowed_hosts=LOOPBACK_HOSTS)
    try:
        assert client.get("/", headers={"Host": "attacker.example"}).status_code == 421
        assert client.get("/", headers={"Host": "127.0.0.1:8000"}).status_code == 200
        assert client.get("/", headers={"Host": "localhost:8000"}).status_code == 200
        cross = client.post("/api/examples", headers={"Host": "127.0.0.1:8000", "Origin": "http://attacker.example"},
                            json={"question": "q", "sql": "SELECT 1"})
        assert cross.status_code == 403
        same = client.post("/api/ask", headers={"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000"},
                           json={"question": "How many users?"})
        assert same.status_code == 200
    finally:
        service.close()


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, score INTEGER NOT NULL)")
        conn.executemany("INSERT INTO notes VALUES (?, ?, ?)",
                         [(1, XSS, 3), (2, "</script><script>alert(2)</script>", 5),
                                                               (3, "=HYPERLINK(\"http://x\")", 1)])
    return path


def test_values_from_the_database_and_the_user_are_escaped(hostile_db: Path) -> None:
    sql = "SELECT body, score FROM notes ORDER BY id"
    service = scripted_service(hostile_db, DummyLM([draft(sql)] * 5))
    client = client_for(service)
    question = f"Which notes say {XSS}?"
    try:
        started = client.post("/jobs", json={"question": question}).json()
        assert service.queue.get(started["id"]).wait(10)
        pages = {
            "answer": client.get(f"/jobs/{started['id']}").text,
            "history": client.get("/history").text,
            "index": client.get("/").text,
            "check": client.post("/check", json={"sql": sql}).text,
        }
        for name, html in pages.items():
            assert "<img" not in html and "<script>alert" not in html, name
        answer = pages["answer"]
        assert "&lt;img src=x onerror=alert(1)&gt;" in answer  # the cell, in the table
        assert 'data-question="Which notes say &lt;img src=x onerror=alert(1)&gt;?"' in answer
        assert 'class="chart" data-kind="bar"' in answer  # its labels travel as JSON with < escaped
        assert "\\u003cimg src=x onerror=alert(1)\\u003e" in answer and "\\u003c/script\\u003e" in answer
        assert "&lt;img src=x onerror=alert(1)&gt;" in pages["history"] and "&lt;img" in pages["check"]
        csv = client.get(f"/jobs/{started['id']}/result.csv").text.splitlines()
        assert csv[1] == f"{XSS},3" and csv[3] == "\"'=HYPERLINK(\"\"http://x\"\")\",1"  # no live formula
    finally:
        service.close()
