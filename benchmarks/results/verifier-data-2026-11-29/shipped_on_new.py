#!/usr/bin/env python
"""The shipped verifier's ROC AUC on collected answers it was not fitted on (their databases are not its five):
every judged group (full rows) and each question's likeliest group, as V2 would choose.

    python benchmarks/results/verifier-data-2026-11-29/shipped_on_new.py COLLECTED.jsonl.gz --data-root DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from fit_verifier import auc, examples, shown  # noqa: E402

from text2sql_dspy.programs.agents.verifier import Verifier, load_verifier  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--verifier", type=Path, help="a verifier file (default: the one shipped in the package)")
    args = parser.parse_args()
    verifier = Verifier.from_json(json.loads(args.verifier.read_text())) if args.verifier else load_verifier()
    rows, right, final = [], [], []
    for question in examples(args.files, args.data_root):
        scored = [(verifier.full.probability(r), y) for r, y in question["full"]]
        rows += [p for p, _ in scored]
        right += [y for _, y in scored]
        if scored:
            final.append(max(scored))
    print(f"shipped verifier ({verifier.fitted_on}): {len(rows)} full rows, AUC {shown(auc(rows, right))}; "
          f"{len(final)} final answers ({sum(y for _, y in final)} right), AUC "
          f"{shown(auc([p for p, _ in final], [y for _, y in final]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
