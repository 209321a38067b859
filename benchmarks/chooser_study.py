#!/usr/bin/env python
"""Which signals would choose better among readings that differ: V2's chooser refitted with more signals, out of
fold (whole databases held out), on training answers only (issue 80).

    python benchmarks/chooser_study.py --generators benchmarks/results/generators-2026-12-07/spider-train.jsonl.gz \
        --generators benchmarks/results/generators-2026-12-07/cosql-train.jsonl.gz \
        [--samples COLLECTED.jsonl.gz ... --data-root ../shared/benchmarks/spider-train]

The designs (:data:`DESIGNS`), each a set of signals over the shipped full model's (``programs/agents/verifier.json``):

* ``shipped``: the shipped full model's signals;
* ``+ generators``: which generators reached the result, and their share (:data:`~..verifier.GENERATED`);
* ``+ relations``: how a result stands to the other results of the question (:func:`relations`);
* ``+ both``;
* ``pairwise``, ``pairwise + relations``: fitted on (right, wrong) pairs of one question's results, as a ranker that
  chooses; the shipped signals' probability of the chosen result is what a policy stops at and a verdict reads.

Each pointwise design is fitted as the verifier's full model is (``fit_model``); every answer is scored by a model
that never saw its database (5 folds of whole databases, drawn ``--draws`` times). Two kinds of collection:

* ``--generators``: collections that ran every generator on every question (``optimize/collect.py
  --generators``). Each design's scores are replayed (``optimize/ensemble_fit.py``'s ``replay``) under the shipped
  policy and two that run more generators (budget 4 and all, no early stop, one draft enough at 0.9).
* ``--samples``: the verifier's collections (a draft and samples of one prompt); V2's choice among the result groups
  of each answer that has two or more, readings checked again by today's validator (``--data-root``).

Each row prints right answers, any reading right, and, against ``shipped``, the answers gained and lost with a
two-sided sign test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from text2sql_dspy.optimize import ensemble_fit
from text2sql_dspy.optimize.collected import Collected, collected, refuse_held_out, returns_nothing
from text2sql_dspy.optimize.fit_verifier import examples
from text2sql_dspy.programs.agents.candidates import rank
from text2sql_dspy.programs.agents.verifier import GENERATED, fit_model
from text2sql_dspy.programs.answer import Preview, Reading
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.results import _normalise_row, columns_subset_match

VERIFIER = Path(__file__).resolve().parent.parent / "programs" / "agents" / "verifier.json"
ENSEMBLE = VERIFIER.with_name("ensemble.json")
RELATIONS = ("narrows another", "widens another", "dedups another", "duplicates another")
# name: (signals added to the shipped full model's, fitted as a pairwise ranker)
DESIGNS = {"shipped": ((), False), "+ generators": (GENERATED, False), "+ relations": (RELATIONS, False),
           "+ both": ((*GENERATED, *RELATIONS), False), "pairwise": ((), True),
           "pairwise + relations": (RELATIONS, True)}
FOLDS = 5
Row = tuple[dict[str, float], bool]  # a result group's signals, and whether it is right


def relations(readings: Sequence[Reading]) -> list[dict[str, float]]:
    """How each reading's result stands to the others' (by their previews): ``narrows another`` where another has the
    same rows with more columns (:func:`~..results.columns_subset_match`), ``widens another`` the reverse;
    ``dedups another`` where another, with as many columns, has the same set of rows and more of them (both whole in
    their previews), ``duplicates another`` the reverse. A reading that returns nothing stands to none."""
    found = []
    for i, a in enumerate(readings):
        mine = dict.fromkeys(RELATIONS, 0.0)
        for j, b in enumerate(readings):
            if i == j or returns_nothing(a) or returns_nothing(b):
                continue
            p, q = a.preview, b.preview
            if p.row_count == q.row_count and len(p.columns) != len(q.columns) \
                    and columns_subset_match(_result(p), _result(q), ordered=False):
                mine["narrows another" if len(p.columns) < len(q.columns) else "widens another"] = 1.0
            if _whole(p) and _whole(q) and len(p.columns) == len(q.columns) and p.row_count != q.row_count \
                    and {_normalise_row(r) for r in p.rows} == {_normalise_row(r) for r in q.rows}:
                mine["dedups another" if p.row_count < q.row_count else "duplicates another"] = 1.0
        found.append(mine)
    return found


def _whole(preview: Preview) -> bool:
    """Whether the preview holds every row of its result."""
    return not preview.truncated and len(preview.rows) == preview.row_count


def _result(preview: Preview) -> QueryResult:
    return QueryResult(columns=list(preview.columns), rows=[tuple(r) for r in preview.rows])


def sign(gained: int, lost: int) -> str:
    """Gained and lost, with the two-sided sign test's p (draws of folds summed: a guide, not independent)."""
    p = binomtest(gained, gained + lost).pvalue if gained + lost else 1.0
    return f"{gained} gained, {lost} lost, p = {p:.2f}"


def folds(dbs: Sequence[str], seed: int) -> list[tuple[list[int], list[int]]]:
    """:data:`FOLDS` folds of whole databases, the databases shuffled by ``seed``: (train, test) indexes."""
    names = sorted(set(dbs))
    np.random.default_rng(seed).shuffle(names)
    fold = {db: k % min(FOLDS, len(names)) for k, db in enumerate(names)}
    return [([i for i, d in enumerate(dbs) if fold[d] != k], [i for i, d in enumerate(dbs) if fold[d] == k])
            for k in sorted(set(fold.values()))]


def pairwise_model(questions: Sequence[Sequence[Row]], names: Sequence[str]) -> Callable[[dict], float]:
    """A linear ranker over ``names`` (standardised) fitted on the differences of each question's (right, wrong)
    pairs, both ways round: its score of a result group's signals."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([[row[n] for n in names] for rows in questions for row, _ in rows], dtype=float)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    vector = lambda row: (np.array([row[n] for n in names], dtype=float) - means) / scales  # noqa: E731
    diffs = [vector(a) - vector(b) for rows in questions for a, ra in rows for b, rb in rows if ra and not rb]
    if not diffs:
        return lambda row: 0.0
    fitted = LogisticRegression(C=0.5, fit_intercept=False, max_iter=3000).fit(
        np.array([*diffs, *(-d for d in diffs)]), np.array([True] * len(diffs) + [False] * len(diffs)))
    return lambda row: float(1 / (1 + np.exp(-vector(row) @ fitted.coef_[0])))


def out_of_fold(questions: Sequence[Sequence[Row]], dbs: Sequence[str], names: Sequence[str], seed: int,
                pairwise: bool = False) -> list[list[float]]:
    """Each question's groups scored by a model fitted on the other folds' databases (:func:`folds`)."""
    scores: list[list[float]] = [[] for _ in questions]
    for train, test in folds(dbs, seed):
        mine = [questions[i] for i in train]
        if pairwise:
            score = pairwise_model(mine, names)
        else:
            model = fit_model([r for rows in mine for r, _ in rows], [y for rows in mine for _, y in rows], names)
            score = model.probability
        for i in test:
            scores[i] = [score(r) for r, _ in questions[i]]
    return scores


# ------------------------------------------------------------------------------------------------ --generators

def prefix_signals(q: Collected, drafts: Sequence[str]) -> list[Row]:
    """The result groups after ``drafts``, each as the full model reads it, with its :func:`relations`."""
    groups = q.groups(drafts)
    related = relations([g.reading for g in groups])
    return [({**g.features(q.question, q.previous), **r}, g.right) for g, r in zip(groups, related, strict=True)]


def replay_generators(questions: Sequence[Collected], names: tuple[str, ...], policies: Sequence[ensemble_fit.Policy],
                      early: Sequence[float | None], base_sure: float, seeds: Sequence[int]
                      ) -> dict[tuple[str, str], list[list[tuple[bool, bool]]]]:
    """For each (design, policy: :func:`_policy`): each question's (right, any reading right) under each seed's folds,
    the scores out of fold over every prefix of two drafts or more of the longest order. A ranker chooses; the
    shipped signals' probability of its choice is what a policy stops at."""
    order = max((p.order for p in policies), key=len)
    keys = [(i, k) for i, q in enumerate(questions) for k in range(2, len(ensemble_fit.drafted(q, order)) + 1)]
    rows = [prefix_signals(questions[i], ensemble_fit.drafted(questions[i], order)[:k]) for i, k in keys]
    dbs = [questions[i].db for i, _ in keys]
    index = {id(q): i for i, q in enumerate(questions)}
    found: dict[tuple[str, str], list[list[tuple[bool, bool]]]] = {}
    as_scores = lambda scored: lambda q, k: scored.get((index[id(q)], k), [])  # noqa: E731
    for seed in seeds:
        shipped = as_scores(dict(zip(keys, out_of_fold(rows, dbs, names, seed), strict=True)))
        for design, (extra, pairwise) in DESIGNS.items():
            scored = shipped if not extra and not pairwise else as_scores(
                dict(zip(keys, out_of_fold(rows, dbs, (*names, *extra), seed, pairwise), strict=True)))
            scores, ranks = (shipped, scored) if pairwise else (scored, None)
            for policy in policies:
                answers = [ensemble_fit.replay(q, policy, e, base_sure if policy.settle is None else policy.settle,
                                               scores, ranks) for q, e in zip(questions, early, strict=True)]
                found.setdefault((design, _policy(policy)), []).append(
                    [(a is not None and a.right, a is not None and a.any_right) for a in answers])
    return found


def _policy(policy: ensemble_fit.Policy) -> str:
    return f"budget {policy.budget}, stop {policy.stop}, settle {policy.settle}"


# ------------------------------------------------------------------------------------------------ --samples

def sample_questions(files: Sequence[Path], roots: Sequence[Path]) -> tuple[list[list[Row]], list[list[tuple]],
                                                                             list[str]]:
    """The answers with two result groups or more: each group's signals (and :func:`relations`), what V2's rank reads
    besides the probability, and the database."""
    rows, ranked, dbs = [], [], []
    for q in examples(list(files), list(roots)):
        if len(q["full"]) < 2:
            continue
        related = relations(q["readings"])
        rows.append([({**f, **r}, y) for (f, y), r in zip(q["full"], related, strict=True)])
        ranked.append(q["ranked"])
        dbs.append(q["db"])
    return rows, ranked, dbs


def choose_samples(rows: Sequence[Sequence[Row]], ranked: Sequence[Sequence[tuple]], dbs: Sequence[str],
                   names: tuple[str, ...], seeds: Sequence[int]) -> dict[str, list[list[tuple[bool, bool]]]]:
    """For each design: whether V2's choice (``rank``) among each answer's groups is right, and whether any is, under
    each seed's folds."""
    found: dict[str, list[list[tuple[bool, bool]]]] = {}
    for design, (extra, pairwise) in DESIGNS.items():
        for seed in seeds:
            scores = out_of_fold(rows, dbs, (*names, *extra), seed, pairwise)
            found.setdefault(design, []).append([(_chosen(r, k, p), any(y for _, y in r))
                                                 for r, k, p in zip(rows, ranked, scores, strict=True)])
    return found


def table(found: dict[str, list[list[tuple[bool, bool]]]]) -> list[str]:
    """A line a design: right answers under each draw of folds and their mean, any reading right (mean), and, summed
    over the draws, the answers gained and lost against ``shipped`` under the same folds, with the sign test."""
    base = [[r for r, _ in d] for d in found["shipped"]]
    lines = []
    for design, both in found.items():
        draws = [[r for r, _ in d] for d in both]
        gained = sum(b and not a for x, y in zip(base, draws, strict=True) for a, b in zip(x, y, strict=True))
        lost = sum(a and not b for x, y in zip(base, draws, strict=True) for a, b in zip(x, y, strict=True))
        rights = [sum(d) for d in draws]
        anyone = np.mean([sum(a for _, a in d) for d in both])
        lines.append(f"    {design:20s} right {' '.join(map(str, rights))} (mean {np.mean(rights):.1f}), any reading "
                     f"right {anyone:.1f}; against shipped, over the draws: {sign(gained, lost)}")
    return lines


def _chosen(rows: Sequence[Row], ranked: Sequence[tuple], scores: Sequence[float]) -> bool:
    best = min(range(len(rows)), key=lambda i: rank(blocked=ranked[i][0], nothing=ranked[i][1], symptom=ranked[i][2],
                                                    p=scores[i]))
    return rows[best][1]


def main(argv: list[str] | None = None) -> int:
    from text2sql_dspy.programs.agents.ensemble import Ensemble
    from text2sql_dspy.programs.agents.verifier import Verifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generators", action="append", type=Path, default=[])
    parser.add_argument("--samples", action="append", type=Path, default=[])
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--verifier", type=Path, default=VERIFIER, help="whose full model's signals are the base")
    parser.add_argument("--ensemble", type=Path, default=ENSEMBLE, help="whose order and policy are shipped")
    parser.add_argument("--draws", type=int, default=5, help="draws of folds, each its own shuffle of the databases")
    args = parser.parse_args(argv)
    if not args.generators and not args.samples:
        parser.error("give --generators or --samples collections")
    refuse_held_out([*args.generators, *args.samples])
    verifier = Verifier.from_json(json.loads(args.verifier.read_text(encoding="utf-8")))
    names, seeds = tuple(verifier.full.names), range(args.draws)
    if args.generators:
        shipped = Ensemble.from_json(json.loads(args.ensemble.read_text(encoding="utf-8")))
        order = tuple(shipped.order)
        policies = [ensemble_fit.Policy(order, shipped.budget, shipped.stop, shipped.settle),
                    ensemble_fit.Policy(order, 4, None, 0.9), ensemble_fit.Policy(order, len(order), None, 0.9)]
        questions = list(collected(args.generators))
        early = ensemble_fit.early_scores(questions, verifier)
        print(f"generators: {len(questions)} answers over {len({q.db for q in questions})} databases; "
              f"order {' > '.join(order)}; {args.draws} draws of folds")
        found = replay_generators(questions, names, policies, early, verifier.early_sure, seeds)
        for policy in policies:
            shown = _policy(policy)
            print(f"  {shown}:")
            print("\n".join(table({d: v for (d, p), v in found.items() if p == shown})))
    if args.samples:
        rows, ranked, dbs = sample_questions(args.samples, args.data_root)
        print(f"samples: {len(rows)} answers with two result groups or more over {len(set(dbs))} databases; "
              f"{args.draws} draws of folds")
        print("\n".join(table(choose_samples(rows, ranked, dbs, names, seeds))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
