"""Fit V2's ensemble on training answers: the verifier's full model over several generators' readings, the order in
which V2 runs the generators, and when it stops.

    python -m text2sql_dspy.optimize.ensemble_fit COLLECTED.jsonl.gz [MORE ...] --base VERIFIER.json \
        --order draft,pairs,columns,sample,sample [--order ...] --out-verifier V.json --out-ensemble E.json

Contract:

* The inputs are collections that ran every generator on every question (``optimize/collect.py --generators``), on
  training splits only (:func:`~.collected.refuse_held_out`).
* The early model and its cut-offs are the ``--base`` verifier's: the first draft is the same generator whatever
  follows it. Where one draft is enough is the policy's to choose (:data:`SETTLES`): more generators can make a
  second call worth more than more samples did.
* For each candidate ``--order``, the full model is fitted on the result groups V2 would weigh after each of its
  prefixes (two generators or more: after one, the early model decides), with whole databases held out
  (scikit-learn's ``GroupKFold``). The question-against-query, follow-up and generator features
  (:data:`~..agents.verifier.GENERATED`) are each kept where they add :data:`~.fit_verifier.GAIN` to the ROC AUC of
  the final answers out of fold, as the base fit keeps its own.
* Each order is replayed out of fold (:func:`replay`) with every budget, stopping probability (:data:`STOPS`) and
  probability at which one draft is enough (:data:`SETTLES`); the policy chosen is the one right most often whose
  mean model seconds are within ``--max-cost`` times those of V2's policy without the ensemble (samples, stopped by
  the majority: :func:`replay_samples`), the cheaper among equals. Its replayed answers choose the full model's
  cut-offs for "likely right", as the base fit does (a stand-alone question's, a follow-up's, and "likely wrong").
* The files written name what they were fitted on, the sets, questions, turns, databases, a digest of the inputs
  and the commit, so that the same command on the same files writes the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from text2sql_dspy.optimize.collected import Collected, Group, collected, lines, refuse_held_out
from text2sql_dspy.optimize.fit_verifier import GAIN, auc, cut_offs, final_auc, out_of_fold, shown
from text2sql_dspy.programs.agents.candidates import settles, stops
from text2sql_dspy.programs.agents.ensemble import FIRST, FOLLOW_UP, Ensemble
from text2sql_dspy.programs.agents.verifier import (
    ASKED,
    FULL,
    GENERATED,
    Verifier,
    features,
    fit_model,
    kind_of,
)
from text2sql_dspy.programs.agents.verifier import (
    FOLLOW_UP as FOLLOW_UP_FEATURES,
)
from text2sql_dspy.programs.calibration import doubtful_threshold

__all__ = ["STOPS", "Policy", "Replayed", "choose_policy", "replay", "replay_samples"]

STOPS = (None, 0.5, 0.6, 0.7, 0.8, 0.9)  # None: never stop early, the budget decides
SETTLES = (None, 0.6, 0.7, 0.8, 0.9)  # where one draft is enough; None: the base verifier's early_sure
TODAY = ("draft", "standalone", "sample", "sample")  # V2's drafts without an ensemble, stopped by the majority
WITHOUT_JUDGE = tuple(n for n in FULL if n not in ("judge", "judged"))  # the judge adds nothing on the embedded model
Scores = Callable[[Collected, int], list[float]]  # (question, drafts so far) -> each group's P(right)


@dataclass(frozen=True)
class Policy:
    order: tuple[str, ...]
    budget: int
    stop: float | None
    settle: float | None = None


@dataclass(frozen=True)
class Replayed:
    """A question's replayed answer: whether it is right, the drafts and model seconds it took, its probability,
    whether the early model settled it, whether it carries a warning, and the generators behind it."""

    right: bool
    drafts: int
    seconds: float
    p: float
    early: bool
    noted: bool
    behind: tuple[str, ...]
    any_right: bool


def drafted(q: Collected, order: Sequence[str]) -> list[str]:
    """The generators of ``order`` that drafted for ``q``, in that order (a name twice: where it drafted twice)."""
    left = {g: q.generators.count(g) for g in set(q.generators)}
    found = []
    for g in order:
        if left.get(g, 0) > 0:
            left[g] -= 1
            found.append(g)
    return found


def _best(groups: Sequence[Group], scores: Sequence[float]) -> int:
    """The group V2 chooses (:func:`~text2sql_dspy.programs.agents.candidates.rank`), the first drafted among equals."""
    return min(range(len(groups)), key=lambda i: groups[i].rank(scores[i]))


def replay(q: Collected, policy: Policy, early_p: float | None, early_sure: float, scores: Scores,
           ranks: Scores | None = None) -> Replayed | None:
    """What V2 answers ``q`` with under ``policy`` (``programs/agents/react.py``): the first draft alone where the
    early model gives it ``early_sure`` or more and it is clear and returns rows; else the next generators in order,
    one draft each, until ``policy.budget`` drafts or the choice reaches ``policy.stop`` (from two drafts on); the
    choice is clear of blocking findings and returns rows first, then shows no symptom, then the likeliest (by
    ``ranks`` where given: a chooser apart from the probability, whose choice the probability then stops at)."""
    order = drafted(q, policy.order)
    if not order:
        return None
    first = q.groups(order[:1])
    if early_p is not None and first and settles(early_p, early_sure, blocked=first[0].blocked,
                                                 nothing=first[0].nothing):
        return Replayed(first[0].right, 1, q.cost(order[:1]), early_p, True, first[0].noted, tuple(order[:1]),
                        q.any_right(order[:1]))
    k = 1
    for k in range(2, min(policy.budget, len(order)) + 1):
        groups, p = q.groups(order[:k]), scores(q, k)
        if groups and policy.stop is not None:
            b = _best(groups, ranks(q, k) if ranks else p)
            best = groups[b]
            if stops(p[b], policy.stop, blocked=best.blocked, nothing=best.nothing, symptom=best.symptom):
                break
    return _answered(q, order, min(max(k, 1), len(order), policy.budget), early_p, scores, ranks)


def replay_samples(q: Collected, early_p: float | None, early_sure: float, scores: Scores) -> Replayed | None:
    """What V2 without an ensemble answers ``q`` with: the first draft alone where the early model is sure; else
    :data:`TODAY`'s drafts, three at most, until no draft left could change the majority result."""
    order = drafted(q, TODAY)
    if not order:
        return None
    first = q.groups(order[:1])
    if early_p is not None and first and settles(early_p, early_sure, blocked=first[0].blocked,
                                                 nothing=first[0].nothing):
        return Replayed(first[0].right, 1, q.cost(order[:1]), early_p, True, first[0].noted, tuple(order[:1]),
                        q.any_right(order[:1]))
    budget, k = 3, min(2, len(order))
    votes = sorted((g.reading.votes for g in q.groups(order[:k])), reverse=True) + [0, 0]
    if k < len(order) and not votes[0] > votes[1] + (budget - k):
        k = min(budget, len(order))
    return _answered(q, order, k, early_p, scores)


def _answered(q: Collected, order: Sequence[str], k: int, early_p: float | None, scores: Scores,
              ranks: Scores | None = None) -> Replayed:
    """V2's choice after the first ``k`` drafts of ``order`` (not settled by the first draft alone)."""
    groups = q.groups(order[:k])
    if not groups:
        return Replayed(False, k, q.cost(order[:k]), 0.0, False, True, (), False)
    p = scores(q, k) if k > 1 else [early_p or 0.0] * len(groups)
    b = _best(groups, ranks(q, k) if ranks and k > 1 else p)
    return Replayed(groups[b].right, k, q.cost(order[:k]), float(p[b]), False, groups[b].noted,
                    tuple(groups[b].reading.generators), q.any_right(order[:k]))


def prefix_rows(questions: Sequence[Collected], order: Sequence[str]) -> list[tuple[int, int, Group]]:
    """(question, drafts so far, group) for every result group after each prefix of two drafts or more."""
    rows = []
    for i, q in enumerate(questions):
        mine = drafted(q, order)
        for k in range(2, len(mine) + 1):
            rows += [(i, k, g) for g in q.groups(mine[:k])]
    return rows


def fitted_scores(questions: Sequence[Collected], order: Sequence[str], names: tuple[str, ...]
                  ) -> tuple[Scores, np.ndarray, list[dict], list[bool], list[str], list[int]]:
    """Out-of-fold full-model scores for every prefix group of ``order`` (whole databases held out), as a
    :data:`Scores`; and the rows' scores, features, rightness, databases and (question, prefix) keys."""
    rows = prefix_rows(questions, order)
    found = [g.features(questions[i].question, questions[i].previous) for i, _, g in rows]
    right = [g.right for _, _, g in rows]
    dbs = [questions[i].db for i, _, _ in rows]
    scores = out_of_fold(found, right, dbs, names) if rows else np.zeros(0)
    by_prefix: dict[tuple[int, int], list[float]] = {}
    for (i, k, _), p in zip(rows, scores, strict=True):
        by_prefix.setdefault((i, k), []).append(float(p))
    index = {id(q): i for i, q in enumerate(questions)}
    asked = [i * 100 + k for i, k, _ in rows]
    return (lambda q, k: by_prefix.get((index[id(q)], k), [])), scores, found, right, dbs, asked


def kept_names(questions: Sequence[Collected], order: Sequence[str], base: tuple[str, ...]) -> tuple[str, ...]:
    """``base``, with the question-against-query, follow-up and generator features each added where they gain
    :data:`~.fit_verifier.GAIN` in the out-of-fold ROC AUC of the final answers."""
    names = base
    _, scores, _, right, _, asked = fitted_scores(questions, order, names)
    print(f"  full model: final answers AUC {shown(final_auc(scores, right, asked))} ({len(right)} rows)")
    for group, what in ((ASKED, "question-against-query"), (FOLLOW_UP_FEATURES, "follow-up"), (GENERATED, "generator")):
        _, more, _, _, _, _ = fitted_scores(questions, order, (*names, *group))
        gain = (final_auc(more, right, asked) or 0) - (final_auc(scores, right, asked) or 0)
        print(f"    with the {what} features: {shown(final_auc(more, right, asked))} ({gain:+.3f}"
              f"{', kept' if gain >= GAIN else ''})")
        if gain >= GAIN:
            names, scores = tuple(dict.fromkeys((*names, *group))), more
    return names


def early_scores(questions: Sequence[Collected], base: Verifier) -> list[float | None]:
    """The base verifier's early probability of each question's first draft (None where it gave no valid query)."""
    found: list[float | None] = []
    for q in questions:
        groups = q.groups(drafted(q, ["draft"]))
        reading = groups[0].reading if groups else None
        found.append(None if reading is None else base.early.probability(
            features(reading, q.question, previous=q.previous)))
    return found


def summary(answers: Sequence[Replayed | None]) -> tuple[int, float, float, int]:
    """Right answers, mean drafts, mean model seconds, and questions with any right reading."""
    done = [a for a in answers if a is not None]
    n = max(1, len(answers))
    return (sum(a.right for a in done), sum(a.drafts for a in done) / n, sum(a.seconds for a in done) / n,
            sum(a.any_right for a in done))


def choose_policy(questions: Sequence[Collected], orders: Sequence[tuple[str, ...]], base: Verifier,
                  max_cost: float) -> tuple[Policy, tuple[str, ...], list[Replayed | None]]:
    """The policy right most often out of fold within ``max_cost`` times the model seconds of V2 without an
    ensemble; its full model's feature names and its replayed answers. Prints every policy tried."""
    early = early_scores(questions, base)
    today_scores = lambda q, k: [base.full.probability(g.features(q.question, q.previous))  # noqa: E731
                                 for g in q.groups(drafted(q, TODAY)[:k])]
    today = [replay_samples(q, e, base.early_sure, today_scores) for q, e in zip(questions, early, strict=True)]
    right, drafts, seconds, any_right = summary(today)
    n = len(questions)
    print(f"V2 without an ensemble (replayed, shipped full model): {right} right ({right / n:.1%}), any reading right "
          f"{any_right}, {drafts:.2f} drafts, {seconds:.2f} s")
    limit = max_cost * seconds
    best: tuple | None = None
    for order in orders:
        print(f"order {' > '.join(order)}:")
        names = kept_names(questions, order, WITHOUT_JUDGE)
        scores, *_ = fitted_scores(questions, order, names)
        for budget, stop, settle in itertools.product(range(2, len(order) + 1), STOPS, SETTLES):
            policy = Policy(tuple(order), budget, stop, settle)
            at = base.early_sure if settle is None else settle
            answers = [replay(q, policy, e, at, scores) for q, e in zip(questions, early, strict=True)]
            right, drafts, seconds, any_right = summary(answers)
            within = seconds <= limit
            print(f"  budget {budget}, stop {stop}, settle {at:.2f}: {right} right ({right / n:.1%}), "
                  f"any reading right {any_right}, {drafts:.2f} drafts, {seconds:.2f} s"
                  f"{'' if within else ' (over the cost limit)'}")
            key = (right, -seconds)
            if within and (best is None or key > best[0]):
                best = (key, policy, names, answers)
    if best is None:
        raise SystemExit("no policy is within the cost limit; raise --max-cost")
    return best[1], best[2], best[3]


def provenance(files: Sequence[Path], questions: Sequence[Collected]) -> dict:
    digest = hashlib.sha256()
    for file in files:
        for line in lines(file):
            digest.update(line.encode("utf-8") + b"\n")
    turns = sum(q.turn is not None for q in questions)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"sets": [f.name.split(".")[0] for f in files], "questions": len(questions) - turns, "turns": turns,
            "databases": len({q.db for q in questions}), "digest": digest.hexdigest()[:16], "commit": commit}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--base", type=Path, required=True, help="the verifier whose early model is kept")
    parser.add_argument("--order", action="append", required=True, type=lambda t: tuple(t.split(",")),
                        help="a candidate order of generators, comma-separated, draft first (repeatable)")
    parser.add_argument("--max-cost", type=float, default=2.0,
                        help="model seconds at most this many times V2's without an ensemble (default 2)")
    parser.add_argument("--pool", action="append", default=[], metavar="KIND=FILE",
                        help=f"a pool of solved pairs the ensemble names: {FIRST}=FILE, {FOLLOW_UP}=FILE")
    parser.add_argument("--out-verifier", type=Path, required=True)
    parser.add_argument("--out-ensemble", type=Path, required=True)
    args = parser.parse_args(argv)
    refuse_held_out(args.files)
    base = Verifier.from_json(json.loads(args.base.read_text(encoding="utf-8")))
    questions = list(collected(args.files))
    print(f"{len(questions)} questions ({sum(q.turn is not None for q in questions)} turns) over "
          f"{len({q.db for q in questions})} databases")
    policy, names, answers = choose_policy(questions, args.order, base, args.max_cost)
    print(f"chosen: {' > '.join(policy.order)}, budget {policy.budget}, stop {policy.stop}, settle {policy.settle}")
    rows = prefix_rows(questions, policy.order)
    full = fit_model([g.features(questions[i].question, questions[i].previous) for i, _, g in rows],
                     [g.right for _, _, g in rows], names)
    by_full = {i: (a.p, a.right) for i, a in enumerate(answers) if a is not None and not a.early}
    turns = [q.turn for q in questions]
    noted = {i: a.noted for i, a in enumerate(answers) if a is not None}
    sure, follow_up_sure = cut_offs(by_full, turns, "sure", noted)
    final = sorted(by_full.values())
    doubtful = doubtful_threshold([p for p, _ in final], [y for _, y in final])
    found = dict(base.cut_offs)
    if follow_up_sure is not None:
        found[kind_of(early=False, follow_up=True)] = follow_up_sure
    fitted_on = provenance(args.files, questions)
    verifier = replace(base, full=full.never_raising([]), sure=sure, doubtful=doubtful, judge_helps=False,
                       cut_offs=found, fitted_on={"early": dict(base.fitted_on), "full": fitted_on})
    pools = dict(p.split("=", 1) for p in args.pool)
    ensemble = Ensemble(policy.order, policy.budget, policy.stop, pools, fitted_on | {
        "orders tried": [",".join(o) for o in args.order], "max cost": args.max_cost}, policy.settle)
    args.out_verifier.write_text(json.dumps(verifier.to_json(), indent=1) + "\n")
    args.out_ensemble.write_text(json.dumps(ensemble.to_json(), indent=1) + "\n")
    print(f"sure at {sure:.3f}, follow-ups at {follow_up_sure}, doubtful below {doubtful:.3f}; wrote "
          f"{args.out_verifier} and {args.out_ensemble}")
    auc_final = auc([a.p for a in answers if a], [a.right for a in answers if a])
    print(f"replayed final answers: ROC AUC {shown(auc_final)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
