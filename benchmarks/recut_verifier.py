#!/usr/bin/env python
"""The shipped verifier's "likely right" cut-offs chosen again on training answers its models were not fitted on,
its models and every other number kept: V2 drafts, samples and chooses as before, and only the verdict's words move.

    python benchmarks/recut_verifier.py COLLECTED.jsonl.gz [MORE ...] --data-root DIR --verifier SHIPPED.json \
        --fitted-on FILE [--fitted-on FILE ...] --out NEW.json

``--fitted-on`` names the files the verifier was fitted on, in its fit's order; their digest must be its
``fitted_on`` digest, and their questions are left out. On the rest, V2's choice is replayed as
``replay_training.py`` replays it, and each kind of answer (:data:`~..verifier.KINDS`: stand-alone or follow-up, by
the early model or the full one) gets the lowest probability at which 90% of its answers without a warning were
right, held by single questions and first turns apart as the fit holds them (never, where none is): an answer with a
warning never reads so. Printed first, out of fold (two halves of the databases, each cut on the other): how many
answers each kind's cut-off calls likely right, and how many of them are right, against the shipped cut-offs on the
same answers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/
from replay_training import Choice, keys_fitted_on, replayed, scores_of  # noqa: E402

from text2sql_dspy.optimize.fit_verifier import KINDS as TURNS  # noqa: E402
from text2sql_dspy.optimize.fit_verifier import examples, held_cut_off, provenance  # noqa: E402
from text2sql_dspy.programs.agents.verifier import KINDS, Verifier, kind_of  # noqa: E402

NEVER = 1.01  # a cut-off no probability reaches


def kind(choice: Choice, question: dict) -> str:
    return kind_of(early=choice.early, follow_up=bool(question["turn"]))


def cut_offs(answers: Sequence[tuple[Choice, dict]]) -> dict[str, float]:
    """Each kind's cut-off on ``answers``, held by single questions, first turns and later turns apart as the fit
    holds them (:func:`~fit_verifier.held_cut_off`; :data:`NEVER` where none reaches 90%, or the kind has no
    answers). An answer with a warning never reads "likely right", so it chooses nothing."""
    found = {}
    for name in KINDS:
        mine = [(c, q) for c, q in answers if kind(c, q) == name and not c.noted]
        found[name] = held_cut_off([[(c.p, c.right) for c, q in mine if keep(q["turn"])] for keep in TURNS.values()]
                                   ) or NEVER
    return found


def tally(answers: Sequence[tuple[Choice, dict]], cuts: dict[str, float]) -> dict[str, tuple[int, int, int]]:
    """Per kind: (answers, likely right at ``cuts``, right among those)."""
    found = {}
    for name in KINDS:
        mine = [c for c, q in answers if kind(c, q) == name]
        sure = [c for c in mine if c.likely_right(cuts[name])]
        found[name] = (len(mine), len(sure), sum(c.right for c in sure))
    return found


def printed(label: str, counts: dict[str, tuple[int, int, int]]) -> None:
    for name, (n, sure, right) in counts.items():
        share = f" ({right / sure:.0%} right)" if sure else ""
        print(f"  {label}, {name}: {n} answers, likely right {sure}, {right} of them right{share}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--verifier", type=Path, required=True)
    parser.add_argument("--fitted-on", action="append", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = json.loads(args.verifier.read_text())
    verifier = Verifier.from_json(data)
    seen = keys_fitted_on(verifier, args.fitted_on)
    questions = [q for q in examples(args.files, args.data_root) if q["key"] not in seen]
    chosen = replayed(questions, *scores_of(questions, verifier, None), verifier.early_sure)
    answers = [(c, q) for c, q in zip(chosen, questions, strict=True) if c is not None]
    dbs = sorted({q["db"] for _, q in answers})
    print(f"{len(answers)} answers over {len(dbs)} databases that {args.verifier} was not fitted on")
    halves = [set(dbs[0::2]), set(dbs[1::2])]
    shipped = {name: verifier.sure_at(early=name.endswith("early"), follow_up=name.startswith("follow-up"))
               for name in KINDS}
    out_of_fold = {name: (0, 0, 0) for name in KINDS}
    for held, other in (halves, halves[::-1]):
        cuts = cut_offs([(c, q) for c, q in answers if q["db"] in other])
        for name, counts in tally([(c, q) for c, q in answers if q["db"] in held], cuts).items():
            out_of_fold[name] = tuple(a + b for a, b in zip(out_of_fold[name], counts, strict=True))
    printed("shipped cut-offs", tally(answers, shipped))
    printed("cut again, out of fold", out_of_fold)
    cuts = cut_offs(answers)
    print("  cut again on all: " + ", ".join(f"{name} {cut:.3f}" for name, cut in cuts.items()))
    turns = sum(q["turn"] is not None for _, q in answers)
    on = {**provenance(args.files, [q for _, q in answers]), "questions": len(answers) - turns, "turns": turns}
    recut = {**data, "cut_offs": cuts, "fitted_on": {**data["fitted_on"], "cut_offs_on": on}}
    recut["cut_offs"] = Verifier.from_json(recut).to_json()["cut_offs"]  # rounded as a fit writes them
    args.out.write_text(json.dumps(recut, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
