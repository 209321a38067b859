#!/usr/bin/env python
"""A refit verifier against the shipped one on the training answers, out of fold: the three checks a refit must pass
before it replaces ``programs/agents/verifier.json``.

    python benchmarks/replay_training.py COLLECTED.jsonl.gz [MORE ...] --data-root DIR \
        --refit NEW.json --shipped OLD.json [--cut-offs-on COLLECTED.jsonl.gz ...]

The refit's models keep their feature names and are fitted again on all folds but one, whole databases held out
(as ``fit_verifier.py`` holds them out), to score the held-out questions; its cut-offs are the file's own. The
shipped file scores every question as it stands, in sample on the answers it was fitted on, which favours it.
Printed, for each:

1. the ROC AUC of each question's final answer;
2. V2's choice among each question's readings, replayed as ``programs/agents/react.py`` makes it (the first draft
   alone where the early model is sure of it at ``early_sure`` and it is clear of blocking findings and returns
   rows; else no blocking finding first, then rows returned, then the probability), each right or wrong as
   collected; the refit against the shipped file by a sign test, and how many answers one draft settles;
3. each kind of answer's cut-off, and "likely right" at it (an answer with a warning never reads so): how many
   answers, and how many of them right (on the ``--cut-offs-on`` inputs where given, as the fit chooses its
   cut-offs).

Redrafts and loosened readings are not collected, so the replay chooses among the drafted readings only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/
from fit_verifier import KINDS, Choice, auc, choose, examples, shown  # noqa: E402

from text2sql_dspy.optimize.report import paired_comparison  # noqa: E402
from text2sql_dspy.programs.agents.verifier import MEANS_WRONG, Model, Verifier, fit_model  # noqa: E402


def out_of_fold(rows: Sequence[dict], right: Sequence[bool], dbs: Sequence[str], model: Model) -> np.ndarray:
    """Each row scored by ``model``'s features fitted again without the row's database (five folds), its weights
    held as the shipped file holds them (:meth:`~..verifier.Model.never_raising`)."""
    from sklearn.model_selection import GroupKFold

    found = np.zeros(len(rows))
    for train, test in GroupKFold(min(5, len(set(dbs)))).split(rows, right, dbs):
        fitted = fit_model([rows[i] for i in train], [right[i] for i in train], model.names).never_raising(MEANS_WRONG)
        found[test] = [fitted.probability(rows[i]) for i in test]
    return found


def replayed(questions: list[dict], early: Callable[[int], float | None], full: Callable[[int], list[float]],
             early_sure: float) -> list[Choice | None]:
    """Each question's replayed answer, from its early probability and its groups' (by question number)."""
    return [choose(q, early(i), full(i), early_sure) for i, q in enumerate(questions)]


def scores_of(questions: list[dict], verifier: Verifier, refit: bool
              ) -> tuple[Callable[[int], float | None], Callable[[int], list[float]]]:
    """The early and full probabilities of each question by ``verifier``: out of fold where it is the ``refit``."""
    early_at = [i for i, q in enumerate(questions) if q["early"] is not None]
    full_at = [(i, j) for i, q in enumerate(questions) for j in range(len(q["full"]))]
    if refit:
        e = out_of_fold([questions[i]["early"][0] for i in early_at], [questions[i]["early"][1] for i in early_at],
                        [questions[i]["db"] for i in early_at], verifier.early)
        f = out_of_fold([questions[i]["full"][j][0] for i, j in full_at],
                        [questions[i]["full"][j][1] for i, j in full_at], [questions[i]["db"] for i, _ in full_at],
                        verifier.full)
    else:
        e = [verifier.early.probability(questions[i]["early"][0]) for i in early_at]
        f = [verifier.full.probability(questions[i]["full"][j][0]) for i, j in full_at]
    early_of = dict(zip(early_at, map(float, e), strict=True))
    full_of: dict[int, list[float]] = {}
    for (i, _), p in zip(full_at, f, strict=True):
        full_of.setdefault(i, []).append(float(p))
    return early_of.get, lambda i: full_of.get(i, [])


def report(name: str, verifier: Verifier, questions: list[dict], chosen: list[Choice | None], judged: list[bool]
           ) -> None:
    answered = [c for c in chosen if c is not None]
    print(f"  {name}: {len(answered)} answers, {sum(c.right for c in answered)} right; final answers' ROC AUC "
          f"{shown(auc([c.p for c in answered], [c.right for c in answered]))}; one draft settles "
          f"{sum(c.early for c in answered)}")
    for kind, keep in KINDS.items():
        mine = [(c, q) for c, q, j in zip(chosen, questions, judged, strict=True) if c is not None and j
                and keep(q["turn"])]
        if not mine:
            continue
        sure = [c for c, q in mine if c.likely_right(verifier.sure_at(early=c.early, follow_up=bool(q["turn"])))]
        print(f"    {kind}: {len(mine)} answers, likely right {len(sure)} ({len(sure) / len(mine):.0%}), "
              f"{sum(c.right for c in sure)} of them right"
              + (f" ({sum(c.right for c in sure) / len(sure):.0%})" if sure else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--refit", type=Path, required=True)
    parser.add_argument("--shipped", type=Path, required=True)
    parser.add_argument("--cut-offs-on", action="append", type=Path, default=[])
    args = parser.parse_args(argv)
    questions = list(examples(args.files, args.data_root))
    on = {f.resolve() for f in args.cut_offs_on or args.files}
    judged = [q["file"].resolve() in on for q in questions]
    print(f"{len(questions)} questions and turns over {len({q['db'] for q in questions})} databases")
    found = {}
    for name, path, refit in (("shipped", args.shipped, False), ("refit, out of fold", args.refit, True)):
        verifier = Verifier.from_json(json.loads(path.read_text()))
        for kind in ("stand-alone", "follow-up"):
            print(f"  {name} cut-off, {kind}: {verifier.sure_at(follow_up=kind == 'follow-up'):.3f}; early "
                  f"{verifier.sure_at(early=True, follow_up=kind == 'follow-up'):.3f}")
        found[name] = replayed(questions, *scores_of(questions, verifier, refit), verifier.early_sure)
        report(name, verifier, questions, found[name], judged)
    shipped, refit = ([{"index": i, "correct": bool(c and c.right)} for i, c in enumerate(f)] for f in found.values())
    test = paired_comparison(shipped, refit)
    print(f"  the refit's choice against the shipped file's: {test['gained']} gained, {test['lost']} lost, "
          f"sign test p = {test['sign_test_p']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
