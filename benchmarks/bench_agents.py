"""Baseline vs V1 vs V2 on the embedded model: accuracy, latency, LM calls and tokens per question.

    python benchmarks/bench_agents.py --n 20 --out runs/bench-agents

Runs every program on the first N questions of the bundled ``data/dev.json`` and of Spider's
public ``dev.json`` (``--spider``), in one process, so latency ratios are comparable. Answers
are kept under ``--out`` (one evaluate.py run folder per dataset), so an interrupted run resumes.
Prints one table per dataset and V2's latency and calls against the baseline's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.optimize import evaluation  # noqa: E402
from text2sql_dspy.optimize.report import summarize  # noqa: E402
from text2sql_dspy.programs.bundled import BUNDLED_DATA  # noqa: E402
from text2sql_dspy.programs.dataset import load_split  # noqa: E402

COLUMNS = [
    ("exec acc", "execution_accuracy", "{:.0%}"),
    ("p50 s", "latency_p50", "{:.1f}"),
    ("p90 s", "latency_p90", "{:.1f}"),
    ("calls (median)", "lm_calls_median", "{:.0f}"),
    ("prompt tok", "prompt_tokens_mean", "{:.0f}"),
    ("completion tok", "completion_tokens_mean", "{:.0f}"),
    ("fallbacks", "fallbacks", "{}"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20, help="questions per dataset")
    parser.add_argument("--programs", default="baseline,v1,v2")
    parser.add_argument("--spider", default=str(ROOT.parent / "shared" / "benchmarks" / "spider-public"))
    parser.add_argument("--retrieval", default="semantic", choices=["semantic", "keyword"])
    parser.add_argument("--out", default="runs/bench-agents")
    args = parser.parse_args()
    datasets = [("bundled dev", BUNDLED_DATA)]
    if Path(args.spider).is_dir():
        datasets.append(("spider-public dev", Path(args.spider)))
    else:
        print(f"(skipping Spider: {args.spider} not found)")
    programs = args.programs.split(",")
    for label, folder in datasets:
        out = Path(args.out) / label.replace(" ", "-")
        code = evaluation.main([
            "--data", str(folder), "--split", "dev", "--limit", str(args.n), "--retrieval", args.retrieval,
            "--out", str(out), *[flag for p in programs for flag in ("--program", p)],
        ])
        if code != 0:
            return code
        records = evaluation.load_records(out / "records.jsonl")
        n = len(load_split(folder, "dev", limit=args.n))
        summaries = {p: summarize([records[(p, i)] for i in range(n) if (p, i) in records]) for p in programs}
        print_table(f"{label}: first {n} questions", summaries)
    return 0


def print_table(title: str, summaries: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"{'program':<10}" + "".join(f"{c:>16}" for c, _, _ in COLUMNS))
    for name, s in summaries.items():
        cells = ["–" if s.get(k) is None else fmt.format(s[k]) for _, k, fmt in COLUMNS]
        print(f"{name:<10}" + "".join(f"{c:>16}" for c in cells))
    base = summaries.get("baseline")
    if base and base["latency_p50"]:
        for name, s in summaries.items():
            if name != "baseline":
                print(f"{name} median latency = {s['latency_p50'] / base['latency_p50']:.2f} x baseline")


if __name__ == "__main__":
    sys.exit(main())
