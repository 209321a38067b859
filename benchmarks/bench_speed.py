#!/usr/bin/env python
"""Speed benchmark: each program's latency against one raw model call, on the same questions, in one run.

    python benchmarks/bench_speed.py --n 40 --out runs/bench-speed

For each question (the first N of Spider dev and of the bundled test split), on one loaded model,
in turn: a raw call, the baseline, and V2. The raw call is one ``create_chat_completion`` with a
system line, the database's schema as the programs' prompt renders it, the question and "reply
with the SQL only", greedy: the floor any program pays. Prints per data set and overall: median
and p95 latency and their ratio to the raw call's median, generated tokens per question, the share
of prompt tokens served from the KV cache, and execution accuracy; then a fresh-process
``text2sql ask`` (second question on one database) against the raw call. The last line is

    latency ratio to one raw call: baseline X.XX, v2 Y.YY (n=N)

Records go to ``<out>/records.jsonl`` (a rerun with the same ``--out`` resumes, and with every record there only
summarises; answers an older execution comparison scored are scored again) and figures to ``<out>/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from text2sql_dspy.optimize.evaluation import scored
from text2sql_dspy.optimize.metrics import COMPARISON_VERSION
from text2sql_dspy.optimize.report import expected_calibration_error, judge_reliability
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.llm.factory import build_lm
from text2sql_dspy.programs.llm.llama_engine import EngineStats
from text2sql_dspy.programs.retrieval.schema_view import schema_view
from text2sql_dspy.programs.source import open_source

PROGRAMS = ("baseline", "v2")
RAW_SYSTEM = "You write {dialect} queries. Reply with the SQL only."


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def raw_messages(question: str, db_path: str) -> list[dict[str, str]]:
    """The raw call's prompt: a system line, the schema as the programs render it, the question."""
    source = open_source(db_path)
    schema = schema_view(source, question).text
    return [
        {"role": "system", "content": RAW_SYSTEM.format(dialect=source.dialect)},
        {"role": "user", "content": f"{schema}\n\nQuestion: {question}\nReply with the SQL only."},
    ]


def raw_call(shared: Any, question: str, db_path: str) -> tuple[float, int, str]:
    """One greedy chat call on :func:`raw_messages`; (seconds, completion tokens, text)."""
    messages = raw_messages(question, db_path)
    start = time.perf_counter()
    result, _ = shared.chat(messages, max_tokens=320, temperature=0.0, repeat_penalty=1.0)
    reply = result["choices"][0]["message"]["content"]
    return time.perf_counter() - start, int(result["usage"]["completion_tokens"]), reply


def stats_delta(after: EngineStats, before: EngineStats) -> dict[str, float]:
    return {
        "prompt_tokens": after.prompt_tokens - before.prompt_tokens,
        "cached_prompt_tokens": after.cached_prompt_tokens - before.cached_prompt_tokens,
        "completion_tokens": after.completion_tokens - before.completion_tokens,
        "calls": after.calls - before.calls,
    }


def run_question(shared: Any, programs: dict[str, Any], dataset: str, index: int, example: Any) -> list[dict[str, Any]]:
    rows = []
    before = replace(shared.stats)
    seconds, completion, _ = raw_call(shared, example.question, example.db_path)
    rows.append({"dataset": dataset, "index": index, "program": "raw", "latency_s": seconds,
                 **stats_delta(shared.stats, before)})
    for name, program in programs.items():
        before = replace(shared.stats)
        start = time.perf_counter()
        pred = program(question=example.question, db_path=example.db_path)
        seconds = time.perf_counter() - start
        verdict = scored(str(pred.get("query") or ""), example)
        rows.append({
            "dataset": dataset, "index": index, "program": name, "latency_s": seconds,
            **stats_delta(shared.stats, before),
            "correct": verdict["correct"], "scored_with": verdict["scored_with"], "query": pred.get("query"),
            "confidence": pred.get("confidence"),
            "judge_score": pred.get("judge_score"), "candidates": pred.get("candidates"),
            "agreement": pred.get("agreement"),
        })
    return rows


def rescore_stale(records: list[dict[str, Any]], sets: dict[str, list[Any]]) -> int:
    """Score again (no model call) the answers an older execution comparison scored; how many were."""
    stale = [r for r in records if r["program"] != "raw" and r.get("scored_with") != COMPARISON_VERSION
             and r["dataset"] in sets and r["index"] < len(sets[r["dataset"]])]
    for r in stale:
        verdict = scored(str(r.get("query") or ""), sets[r["dataset"]][r["index"]])
        if verdict["correct"] != r["correct"]:
            print(f"scored again: {r['dataset']} #{r['index']} {r['program']}: {r['correct']} -> {verdict['correct']}")
        r.update(correct=verdict["correct"], scored_with=verdict["scored_with"])
    return len(stale)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dataset in sorted({r["dataset"] for r in records}) + ["all"]:
        rows = [r for r in records if dataset in ("all", r["dataset"])]
        raw = [r["latency_s"] for r in rows if r["program"] == "raw"]
        if not raw:
            continue
        raw_median = statistics.median(raw)
        raw_of = {(r["dataset"], r["index"]): r["latency_s"] for r in rows if r["program"] == "raw"}
        figures: dict[str, Any] = {"n": len(raw), "raw_median_s": raw_median}
        for name in PROGRAMS:
            mine = [r for r in rows if r["program"] == name]
            if not mine:
                continue
            lat = [r["latency_s"] for r in mine]
            # ÷ its own question's raw call
            paired = [r["latency_s"] / raw_of[(r["dataset"], r["index"])] for r in mine]
            prompt = sum(r["prompt_tokens"] for r in mine)
            figures[name] = {
                "median_s": statistics.median(lat), "p95_s": pct(lat, 0.95),
                "median_ratio": statistics.median(lat) / raw_median, "p95_ratio": pct(lat, 0.95) / raw_median,
                "paired_median_ratio": statistics.median(paired), "paired_p95_ratio": pct(paired, 0.95),
                "completion_tokens_median": statistics.median(r["completion_tokens"] for r in mine),
                "prompt_tokens_median": statistics.median(r["prompt_tokens"] for r in mine),
                "kv_served": sum(r["cached_prompt_tokens"] for r in mine) / prompt if prompt else 0.0,
                "accuracy": sum(bool(r["correct"]) for r in mine) / len(mine),
                "calls_median": statistics.median(r["calls"] for r in mine),
                "confidence_ece": expected_calibration_error(
                    [(float(r["confidence"]), bool(r["correct"])) for r in mine if r.get("confidence") is not None]),
            }
            judged = [(float(r["judge_score"]), bool(r["correct"])) for r in mine if r.get("judge_score") is not None]
            if judged:
                figures[name].update(judge_reliability(judged), judge_ece=expected_calibration_error(judged),
                                     judged=len(judged))
        all_prompt = sum(r["prompt_tokens"] for r in rows)
        cached = sum(r["cached_prompt_tokens"] for r in rows)
        figures["kv_served_all_calls"] = cached / all_prompt if all_prompt else 0.0
        out[dataset] = figures
    return out


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def fresh_process_ask(questions: list[str], db_path: str) -> list[float]:
    """Wall clock of ``text2sql ask`` in new processes, one question each, on one database."""
    times = []
    cli = Path(sys.executable).with_name("text2sql")
    for question in questions:
        start = time.perf_counter()
        subprocess.run([str(cli), "ask", question, "--db", db_path, "--program", "baseline"],
                       check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="questions from each data set")
    parser.add_argument("--spider", type=Path,
                        default=Path(__file__).resolve().parents[1].parent / "shared/benchmarks/spider-public")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-speed"))
    parser.add_argument("--skip-ask", action="store_true", help="skip the fresh-process text2sql ask timing")
    parser.add_argument("--sets", nargs="+", choices=["spider-dev", "bundled-test"],
                        default=["spider-dev", "bundled-test"],
                        help="data sets to run (default: both)")
    args = parser.parse_args()
    logging.getLogger("dspy").setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)
    records_file = args.out / "records.jsonl"
    records = [json.loads(line) for line in records_file.read_text().splitlines()] if records_file.exists() else []
    done = {(r["dataset"], r["index"]) for r in records}

    sources = {"spider-dev": (args.spider, "dev"), "bundled-test": (BUNDLED_DATA, "test")}
    sets = {name: load_split(*sources[name], limit=args.n) for name in args.sets}
    if rescore_stale(records, sets):
        records_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    todo = [(d, i, ex) for d, exs in sets.items() for i, ex in enumerate(exs) if (d, i) not in done]
    if todo:  # with every record there already, the run only summarises them
        lm = build_lm("local")
        shared = lm.engine.load()
        programs = {name: make_program(name, lm=lm) for name in PROGRAMS}
        print(f"== bench_speed: CPU {cpu_model()}, {os.cpu_count()} cores, n_ctx {shared.n_ctx}, "
              f"settings {shared.settings}")
    with records_file.open("a", encoding="utf-8") as fh:
        for dataset, index, example in tqdm(todo, desc="questions", unit="q"):
            for row in run_question(shared, programs, dataset, index, example):
                records.append(row)
                fh.write(json.dumps(row) + "\n")
            fh.flush()

    summary = summarise([r for r in records if r["dataset"] in sets and r["index"] < args.n])
    if not args.skip_ask and "spider-dev" in sets:
        spider_db = sets["spider-dev"][0].db_path
        asks = fresh_process_ask([sets["spider-dev"][0].question, sets["spider-dev"][1].question], spider_db)
        summary["ask_fresh_process"] = {"first_s": asks[0], "second_s": asks[1],
                                        "second_ratio": asks[1] / summary["spider-dev"]["raw_median_s"]}
    summary["cpu"] = cpu_model()
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))

    for dataset, fig in summary.items():
        if not isinstance(fig, dict) or "raw_median_s" not in fig:
            continue
        print(f"\n{dataset} (n={fig['n']}): raw call median {fig['raw_median_s']:.2f}s; "
              f"KV served over all calls {fig['kv_served_all_calls']:.1%}")
        print(f"  {'program':<9} {'median':>8} {'p95':>8} {'med/raw':>8} {'p95/raw':>8} {'gen tok':>8} "
              f"{'prompt tok':>10} {'KV served':>9} {'calls':>6} {'accuracy':>8}")
        for name in PROGRAMS:
            if name in fig:
                f = fig[name]
                print(f"  {name:<9} {f['median_s']:7.2f}s {f['p95_s']:7.2f}s {f['median_ratio']:7.2f}x "
                      f"{f['p95_ratio']:7.2f}x "
                      f"{f['completion_tokens_median']:8.0f} {f['prompt_tokens_median']:10.0f} {f['kv_served']:9.1%} "
                      f"{f['calls_median']:6.0f} {f['accuracy']:8.1%}")
        print("  each question's latency ÷ its own raw call: " + "; ".join(
            f"{name} median {fig[name]['paired_median_ratio']:.2f}x, p95 {fig[name]['paired_p95_ratio']:.2f}x"
            for name in PROGRAMS if name in fig))
        for name in PROGRAMS:
            if name in fig:
                f = fig[name]
                line = f"  {name}: confidence ECE {_fmt(f['confidence_ece'])}"
                if "judged" in f:
                    line += (f"; judge score vs execution (n={f['judged']}): ROC AUC {_fmt(f['judge_auc'])}, "
                             f"ECE {_fmt(f['judge_ece'])}")
                print(line)
    if "ask_fresh_process" in summary:
        ask = summary["ask_fresh_process"]
        print(f"\ntext2sql ask, fresh process, second question on one database: {ask['second_s']:.2f}s "
              f"= {ask['second_ratio']:.2f}x one raw call (first: {ask['first_s']:.2f}s)")
    overall = summary["all"]
    print(f"latency ratio to one raw call: baseline {overall['baseline']['median_ratio']:.2f}, "
          f"v2 {overall['v2']['median_ratio']:.2f} (n={overall['n']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
