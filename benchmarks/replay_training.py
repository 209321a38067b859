#!/usr/bin/env python
"""A refit verifier against the shipped one on the training answers, out of fold: the checks a refit must pass
before it replaces ``programs/agents/verifier.json``.

    python benchmarks/replay_training.py COLLECTED.jsonl.gz [MORE ...] --data-root DIR \
        --refit NEW.json --shipped OLD.json [--shipped-fitted-on FILE ...] [--cut-offs-on COLLECTED.jsonl.gz ...]

The refit's models keep their feature names and are fitted again on all folds but one, whole databases held out
(as ``fit_verifier.py`` holds them out), to score the held-out questions; its cut-offs are the file's own. The
shipped file scores every question as it stands, in sample on the answers it was fitted on, which favours it; with
``--shipped-fitted-on`` (the files its ``fitted_on`` names, checked against its digest) it is scored out of fold as
the refit is, on the same folds: its models fitted again on its own answers less the held-out databases score those
databases' answers it was fitted on, and its file as it stands scores the answers it never saw. Printed, for each:

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
from text2sql_dspy.optimize.fit_verifier import KINDS, Choice, auc, choose, examples, key_of, lines, provenance, shown  # noqa: E402
from text2sql_dspy.optimize.report import paired_comparison  # noqa: E402
from text2sql_dspy.programs.agents.verifier import MEANS_WRONG, Model, Verifier, fit_model  # noqa: E402


def out_of_fold(rows: Sequence[dict], right: Sequence[bool], dbs: Sequence[str], model: Model,
                fitted: Sequence[bool] | None = None) -> np.ndarray:
    """Each row scored by ``model``'s features fitted again without the row's database (five folds), its weights
    held as the shipped file holds them (:meth:`~..verifier.Model.never_raising`). Where ``fitted`` marks the rows
    ``model`` was fitted on, only they are fitted again and scored so; the others are scored by ``model`` as it
    stands, which never saw them."""
    from sklearn.model_selection import GroupKFold

    fitted = [True] * len(rows) if fitted is None else fitted
    found = np.array([0.0 if f else model.probability(row) for row, f in zip(rows, fitted, strict=True)])
    for train, test in GroupKFold(min(5, len(set(dbs)))).split(rows, right, dbs):
        train = [i for i in train if fitted[i]]
        again = fit_model([rows[i] for i in train], [right[i] for i in train], model.names).never_raising(MEANS_WRONG)
        found[[i for i in test if fitted[i]]] = [again.probability(rows[i]) for i in test if fitted[i]]
    return found


def keys_fitted_on(verifier: Verifier, files: Sequence[Path]) -> set[tuple]:
    """The questions and turns ``verifier`` was fitted on, read from ``files``, which must be the inputs its
    ``fitted_on`` names, byte for byte (the same digest, questions and turns)."""
    found = provenance(list(files), [])
    keys = {key_of(json.loads(line)) for f in files for line in lines(f)}
    turns = sum(key[3] is not None for key in keys)
    want = verifier.fitted_on
    if (found["digest"], len(keys) - turns, turns) != (want.get("digest"), want.get("questions"), want.get("turns")):
        raise SystemExit(f"{', '.join(map(str, files))}: digest {found['digest']}, {len(keys) - turns} questions and "
                         f"{turns} turns, where the verifier was fitted on {want.get('digest')} "
                         f"({want.get('questions')} and {want.get('turns')}): name the files it was fitted on, in "
                         "its fit's order")
    return keys


def replayed(questions: list[dict], early: Callable[[int], float | None], full: Callable[[int], list[float]],
             early_sure: float) -> list[Choice | None]:
    """Each question's replayed answer, from its early probability and its groups' (by question number)."""
    return [choose(q, early(i), full(i), early_sure) for i, q in enumerate(questions)]


def scores_of(questions: list[dict], verifier: Verifier, fitted: Sequence[bool] | None
              ) -> tuple[Callable[[int], float | None], Callable[[int], list[float]]]:
    """The early and full probabilities of each question by ``verifier``: as it stands where ``fitted`` is None,
    else out of fold on the questions ``fitted`` marks (:func:`out_of_fold`)."""
    early_at = [i for i, q in enumerate(questions) if q["early"] is not None]
    full_at = [(i, j) for i, q in enumerate(questions) for j in range(len(q["full"]))]
    if fitted is not None:
        e = out_of_fold([questions[i]["early"][0] for i in early_at], [questions[i]["early"][1] for i in early_at],
                        [questions[i]["db"] for i in early_at], verifier.early, [fitted[i] for i in early_at])
        f = out_of_fold([questions[i]["full"][j][0] for i, j in full_at],
                        [questions[i]["full"][j][1] for i, j in full_at], [questions[i]["db"] for i, _ in full_at],
                        verifier.full, [fitted[i] for i, _ in full_at])
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
    parser.add_argument("--shipped-fitted-on", action="append", type=Path, default=[],
                        help="the inputs the shipped file was fitted on: it is then scored out of fold too")
    args = parser.parse_args(argv)
    questions = list(examples(args.files, args.data_root))
    on = {f.resolve() for f in args.cut_offs_on or args.files}
    judged = [q["file"].resolve() in on for q in questions]
    print(f"{len(questions)} questions and turns over {len({q['db'] for q in questions})} databases")
    found = {}
    shipped = Verifier.from_json(json.loads(args.shipped.read_text()))
    mine = keys_fitted_on(shipped, args.shipped_fitted_on) if args.shipped_fitted_on else None
    print(f"  the shipped file scored {'as it stands' if mine is None else f'out of fold on its {len(mine)} answers'}")
    for name, verifier, fitted in (
            ("shipped", shipped, None if mine is None else [q["key"] in mine for q in questions]),
            ("refit, out of fold", Verifier.from_json(json.loads(args.refit.read_text())), [True] * len(questions))):
        for kind in ("stand-alone", "follow-up"):
            print(f"  {name} cut-off, {kind}: {verifier.sure_at(follow_up=kind == 'follow-up'):.3f}; early "
                  f"{verifier.sure_at(early=True, follow_up=kind == 'follow-up'):.3f}")
        found[name] = replayed(questions, *scores_of(questions, verifier, fitted), verifier.early_sure)
        report(name, verifier, questions, found[name], judged)
    shipped, refit = ([{"index": i, "correct": bool(c and c.right)} for i, c in enumerate(f)] for f in found.values())
    test = paired_comparison(shipped, refit)
    print(f"  the refit's choice against the shipped file's: {test['gained']} gained, {test['lost']} lost, "
          f"sign test p = {test['sign_test_p']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
