"""Load check of ``text2sql serve``: N concurrent API clients on loopback, each asking and then saving its pair.

    python benchmarks/bench_web_load.py [--clients 20] [--model-s 0.25] [--queue 8] [--timeout 60]

The server runs in this process (uvicorn on a free loopback port) over a scratch SQLite database
and a scratch example store. Its model is scripted: every reply takes ``--model-s`` seconds, as a
stand-in for the embedded model, so the figures are about the queue, not about answer quality.
Every client sends ``POST /api/ask``; a client that gets its answer saves the pair with
``POST /api/examples``. Prints the status counts, latencies, Retry-After values, and whether every
pair the server said it saved is in the store. Exits 1 if any request got anything but an answer,
a 503 or a 201, or if a saved pair is missing.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import uvicorn
from dspy.utils import DummyLM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import draft  # noqa: E402
from tests.tiny_db import build_tiny_db  # noqa: E402
from tests.web_fakes import FAILED_BY_USER  # noqa: E402
from text2sql_dspy.programs.examples.store import ExampleStore  # noqa: E402
from text2sql_dspy.programs.source import open_source  # noqa: E402
from text2sql_dspy.programs.web.app import create_app, loopback_hosts  # noqa: E402
from text2sql_dspy.programs.web.service import ServeConfig, Service  # noqa: E402


class SlowLM(DummyLM):
    """A scripted model whose every reply takes ``seconds``."""

    def __init__(self, answers: list[dict[str, Any]], seconds: float):
        super().__init__(answers)
        self.seconds = seconds

    def _format_answer_fields(self, field_names_and_values: dict[str, Any]) -> str:
        time.sleep(self.seconds)
        return super()._format_answer_fields(field_names_and_values)


def post(url: str, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any], Any, float]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read()), reply.headers, time.perf_counter() - start
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}"), err.headers, time.perf_counter() - start


def client(base: str, i: int, timeout: float) -> dict[str, Any]:
    question = f"Which users failed to log in, and how often? (client {i})"
    status, body, headers, seconds = post(f"{base}/api/ask", {"question": question}, timeout)
    outcome = {"ask": status, "ask_s": seconds, "retry_after": headers.get("Retry-After")}
    if status == 200:
        saved, pair, _, save_s = post(f"{base}/api/examples",
                                      {"question": question, "sql": body["sql"], "job": body["job"]},
                                      timeout)
        outcome.update(save=saved, save_s=save_s, saved_id=pair.get("id"), question=question)
    return outcome


def serve(service: Service) -> tuple[uvicorn.Server, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(service, allowed_hosts=loopback_hosts("127.0.0.1")),
                                           host="127.0.0.1", port=port, log_level="error", limit_concurrency=64))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else (values or [0.0])[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--model-s", type=float, default=0.25, help="seconds per scripted model reply")
    parser.add_argument("--queue", type=int, default=8, help="questions that may wait (serve --queue)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="the server's time limit per answer, and each client's")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-web-"))
    db = build_tiny_db(scratch)
    store_path = scratch / "examples.sqlite"
    lm = SlowLM([draft(FAILED_BY_USER)] * (args.clients * 2), args.model_s)
    service = Service(ServeConfig(databases={"tiny": str(db)}, program="v1", examples_path=store_path,
                                  max_waiting=args.queue, timeout_s=args.timeout), lm=lm)
    server, base = serve(service)
    start = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        outcomes = list(pool.map(lambda i: client(base, i, args.timeout + 10), range(args.clients)))
    wall = time.perf_counter() - start
    with urllib.request.urlopen(f"{base}/api/health", timeout=10) as reply:
        health = json.loads(reply.read())
    server.should_exit = True

    asks = Counter(o["ask"] for o in outcomes)
    answered = [o["ask_s"] for o in outcomes if o["ask"] == 200]
    busy = [o["ask_s"] for o in outcomes if o["ask"] == 503]
    saves = Counter(o["save"] for o in outcomes if "save" in o)
    claimed = {(o["question"], o["saved_id"]) for o in outcomes if o.get("save") == 201}
    stored = {(e.question, e.id) for e in ExampleStore(store_path).examples(open_source(str(db)), kind="pair")}
    lost = claimed - stored
    print(f"clients {args.clients} | scripted model {args.model_s:g} s/reply | queue {args.queue} | limit "
          f"{args.timeout:g} s")
    print(f"asks: {dict(sorted(asks.items()))} (200 answered, 503 queue full) in {wall:.2f} s wall")
    if answered:
        print(f"answered latency: p50 {percentile(answered, 50):.2f} s, p95 {percentile(answered, 95):.2f} s, "
              f"max {max(answered):.2f} s")
    if busy:
        retry = sorted(int(o["retry_after"]) for o in outcomes if o["ask"] == 503)
        print(f"503 latency: max {max(busy):.3f} s; Retry-After {retry[0]}-{retry[-1]} s")
    print(f"saves: {dict(sorted(saves.items()))}; pairs in the store {len(stored)}; lost {len(lost)}")
    print(f"server after the run: {health['status']}, answering {health['answering']}, waiting {health['waiting']}")
    bad = sum(n for code, n in asks.items() if code not in (200, 503)) + sum(n for c, n in saves.items() if c != 201)
    return 1 if bad or lost or health["status"] != "ok" else 0


if __name__ == "__main__":
    sys.exit(main())
