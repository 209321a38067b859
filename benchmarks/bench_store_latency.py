"""What the store, the value lookup and the docs cost in latency: V2 with them against plain V2, in one process.

Both programs run on one loaded model and answer each question in turn (which goes first alternates), so
a machine's load at any moment weighs on both alike. "Full" reads ``--data`` (docs beside it are picked
up), looks up values and is shown ``--examples``; "plain" reads ``--plain-data`` (the same database
without its docs), with no lookup and no store. The model's RAM prefix cache is enlarged so that neither
program evicts the other's schema; the disk cache is not used, so both start cold.

Usage::

    python benchmarks/bench_store_latency.py --data DIR --plain-data DIR --examples STORE [--limit 30] [--out FILE]

Prints each question's two latencies and, at the end, the median latency of each program over the
questions after the first (whose latency is the schema's first reading) and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.dataset import load_split  # noqa: E402
from text2sql_dspy.programs.llm.factory import build_lm  # noqa: E402
from text2sql_dspy.programs.llm.llama_engine import get_shared_llama  # noqa: E402
from text2sql_dspy.programs.llm.prefix_cache import PrefixCache  # noqa: E402

KEPT = ("latency_s", "lm_calls", "prompt_tokens", "completion_tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--plain-data", type=Path, required=True)
    parser.add_argument("--examples", type=Path, required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--out", type=Path, help="a JSON-lines file of every answer's metrics")
    args = parser.parse_args()

    full_questions = load_split(args.data, args.split, limit=args.limit)
    plain_questions = load_split(args.plain_data, args.split, limit=args.limit)
    lm = build_lm("local")
    get_shared_llama().llm.set_cache(PrefixCache(4 << 30, 32))  # both programs' prefixes stay in RAM
    programs = {
        "full": make_program("v2", lm=lm, examples=args.examples),
        "plain": make_program("v2", lm=lm, lookup_values=False),
    }
    rows: list[dict] = []
    for i, (full, plain) in enumerate(zip(full_questions, plain_questions, strict=True)):
        order = [("full", full), ("plain", plain)]
        for name, example in order if i % 2 == 0 else order[::-1]:
            answer = programs[name].run(example.question, example.db_path)
            rows.append({"index": i, "program": name, "sql": answer.sql, "latency_s": answer.metrics.latency_s,
                         "lm_calls": answer.metrics.lm_calls, "prompt_tokens": answer.metrics.prompt_tokens})
        shown = {r["program"]: r for r in rows[-2:]}
        print(f"{i + 1:3d}  full {shown['full']['latency_s']:6.1f} s ({shown['full']['lm_calls']} calls)  "
              f"plain {shown['plain']['latency_s']:6.1f} s ({shown['plain']['lm_calls']} calls)", flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    latency = {(r["index"], r["program"]): r["latency_s"] for r in rows}
    later = range(1, len(full_questions))
    full_s, plain_s = (statistics.median(latency[i, n] for i in later) for n in ("full", "plain"))
    per_question = statistics.median(latency[i, "full"] / latency[i, "plain"] for i in later)
    print(f"questions 2-{len(full_questions)}: median latency full {full_s:.1f} s, plain {plain_s:.1f} s, "
          f"ratio {full_s / plain_s:.2f}; median of per-question ratios {per_question:.2f}")

if __name__ == "__main__":
    main()
