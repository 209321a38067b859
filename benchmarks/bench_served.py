#!/usr/bin/env python
"""Throughput of the embedded model in process and behind a real OpenAI-compatible server, at 1, 2 and 4 threads.

    python benchmarks/bench_served.py --data PATH/spider --split dev --n 40 \
        --out benchmarks/results/served-throughput-2026-11-25

The same first N questions are answered by one program (``--program``, default baseline) six ways:
in process (the embedded llama.cpp engine) and through llama-cpp-python's OpenAI-compatible server
over the same GGUF (``python -m llama_cpp.server``, started here on 127.0.0.1, as
``tests/served_model.py`` starts it for the tests), each with 1, 2 and 4 questions in flight
(``text2sql evaluate --threads``). The two are interleaved (in process, served, at 1 thread; then
at 2; then at 4), after one untimed warm-up question each, so both read the schema from a warm
KV cache and drift in the machine's load falls on both.

Per configuration it prints questions per minute (questions over the wall time of the batch),
median and p95 latency of one question, LM calls, execution accuracy and failures. Records go to
``<out>/records.jsonl``, figures to ``<out>/summary.json``, the server's log to ``<out>/server.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.served_model import start  # noqa: E402
from text2sql_dspy.optimize.evaluation import answer_one  # noqa: E402
from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.bundled import BUNDLED_DATA  # noqa: E402
from text2sql_dspy.programs.dataset import load_split  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def run_batch(program: Any, spec: str, examples: list, threads: int) -> tuple[float, list[dict[str, Any]]]:
    """Answer every example with ``threads`` in flight; (wall seconds, records in question order)."""
    start_time = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        records = list(pool.map(lambda pair: answer_one(program, spec, *pair), enumerate(examples)))
    return time.perf_counter() - start_time, records


def summarize(wall_s: float, records: list[dict[str, Any]]) -> dict[str, Any]:
    latencies = [float(r.get("latency_s") or 0.0) for r in records if "error" not in r]
    return {
        "questions": len(records),
        "wall_s": round(wall_s, 1),
        "questions_per_minute": round(60.0 * len(records) / wall_s, 2),
        "latency_p50_s": round(percentile(latencies, 0.5), 2),
        "latency_p95_s": round(percentile(latencies, 0.95), 2),
        "lm_calls": sum(int(r.get("lm_calls") or 0) for r in records),
        "execution_accuracy": round(sum(bool(r.get("correct")) for r in records) / len(records), 3),
        "failures": sum(1 for r in records if "error" in r),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(BUNDLED_DATA))
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--program", default="baseline")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--retrieval", default="semantic")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-served"))
    args = parser.parse_args(argv)

    examples = load_split(args.data, args.split, limit=args.n + 1)
    examples, warmup = examples[: args.n], examples[-1]  # the warm-up is question N+1, not one of the N
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{len(examples)} questions from {args.data}/{args.split}.json (warm-up: the one after them); "
          f"program {args.program}; cores {os.cpu_count()}; load average {os.getloadavg()}", flush=True)
    server = start(log_dir=args.out)
    os.environ["TEXT2SQL_API_BASE"] = server.api_base
    summary: dict[str, Any] = {"program": args.program, "data": str(args.data), "split": args.split,
                               "questions": len(examples), "cores": os.cpu_count(), "configs": []}
    try:
        programs = {mode: make_program(args.program, model_id=model, retrieval_type=args.retrieval)
                    for mode, model in (("in-process", "local"), ("served", server.model))}
        for mode, program in programs.items():
            answer_one(program, args.program, -1, warmup)  # untimed: loads the model, warms the KV cache
        with (args.out / "records.jsonl").open("w", encoding="utf-8") as records_file:
            for threads in args.threads:
                for mode, program in programs.items():
                    load_before = os.getloadavg()[0]
                    wall, records = run_batch(program, args.program, examples, threads)
                    row = {"mode": mode, "threads": threads, **summarize(wall, records),
                           "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
                    summary["configs"].append(row)
                    print(json.dumps(row), flush=True)
                    for record in records:
                        records_file.write(json.dumps({"mode": mode, "threads": threads, **record}, default=str) + "\n")
    finally:
        server.stop()
        shutil.move(str(server.log), args.out / "server.log")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"\n{'mode':<11} {'threads':>7} {'q/min':>7} {'p50 s':>7} {'p95 s':>7} {'calls':>6} {'exec acc':>8} "
          f"{'failed':>6}")
    for row in summary["configs"]:
        print(f"{row['mode']:<11} {row['threads']:>7} {row['questions_per_minute']:>7.2f} {row['latency_p50_s']:>7.2f} "
              f"{row['latency_p95_s']:>7.2f} {row['lm_calls']:>6} {row['execution_accuracy']:>8.1%} "
              f"{row['failures']:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
