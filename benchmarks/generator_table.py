#!/usr/bin/env python
"""What each generator, and each union of generators, adds on training questions: the table that chooses V2's
generators and their order (issue 80), from collections that ran every generator on every question.

    python benchmarks/generator_table.py benchmarks/results/generators-2026-12-07/spider-train.jsonl.gz \
        benchmarks/results/generators-2026-12-07/cosql-train.jsonl.gz

Per kind of question (single questions and conversations' first turns; follow-ups), prints:

* each generator alone: the questions it drafted for, how many of its drafts validated, were right, and its model
  seconds a draft;
* unions, the first draft plus others: how often any reading is right, how often V2's choice is right where the
  verifier shipped today chooses (no generator features: :func:`choice`), the mean model seconds, and the gain in
  any-reading-right over the first draft alone per second of model time;
* the greedy order: from the first draft, each step adds the generator whose draft adds the most right readings a
  second.

Training data only (:func:`~text2sql_dspy.optimize.collected.refuse_held_out`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from text2sql_dspy.optimize.collected import Collected, Group, collected

KINDS = {"stand-alone": lambda q: not q.previous, "follow-ups": lambda q: bool(q.previous)}


def choice(groups: Sequence[Group], probability) -> Group | None:  # noqa: ANN001 - features -> float
    """The group V2 chooses (:func:`~text2sql_dspy.programs.agents.candidates.rank`) by ``probability`` (a group's
    features to P(right)), the first drafted among equals."""
    if not groups:
        return None
    return min(groups, key=lambda g: g.rank(probability(g)))


def accuracy(questions: Sequence[Collected], chosen: Sequence[str], probability) -> int:  # noqa: ANN001
    """How many of ``questions`` V2's choice among ``chosen`` generators' readings gets right."""
    right = 0
    for q in questions:
        best = choice(q.groups(chosen), lambda g, q=q: probability(g.features(q.question, q.previous)))
        right += best is not None and best.right
    return right


def alone(questions: Sequence[Collected], generator: str) -> tuple[int, int, int, float]:
    """Of the questions ``generator`` drafted for: how many, how many drafts validated, were right, seconds a draft."""
    drafted = [(q, sql) for q in questions for g, sql in q.drafts if g == generator]
    valid = [(q, sql) for q, sql in drafted if q._usable(sql)]
    right = sum(q.right.get(sql, False) for q, sql in valid)
    seconds = [q.seconds.get(generator, 0.0) for q, _ in drafted]
    return len(drafted), len(valid), right, sum(seconds) / max(1, len(seconds))


def greedy(questions: Sequence[Collected], pool: Sequence[str], steps: int) -> list[tuple[str, int, float]]:
    """From the first draft, ``steps`` times the generator of ``pool`` (a name twice: twice) that adds the most
    right readings a second: (generator, questions any reading right, mean seconds) after each step."""
    chosen, left = ["draft"], list(pool)
    found = []
    for _ in range(steps):
        base_right = sum(q.any_right(chosen) for q in questions)
        base_cost = sum(q.cost(chosen) for q in questions)
        options = []
        for g in dict.fromkeys(left):
            trial = [*chosen, g]
            gain = sum(q.any_right(trial) for q in questions) - base_right
            cost = sum(q.cost(trial) for q in questions) - base_cost
            options.append((gain / max(cost, 1e-9), g))
        if not options:
            break
        _, best = max(options)
        chosen.append(best)
        left.remove(best)
        found.append((best, sum(q.any_right(chosen) for q in questions), sum(q.cost(chosen) for q in questions)
                      / len(questions)))
    return found


def table(questions: Sequence[Collected], label: str, probability) -> list[str]:  # noqa: ANN001
    n = len(questions)
    out = [f"## {label}: {n} questions over {len({q.db for q in questions})} databases", "",
           "| generator | drafted for | valid | right | seconds a draft |", "|---|---|---|---|---|"]
    names = list(dict.fromkeys(g for q in questions for g in q.generators))
    for g in names:
        drafted, valid, right, seconds = alone(questions, g)
        out.append(f"| {g} | {drafted} | {valid} | {right} ({right / max(1, drafted):.1%}) | {seconds:.2f} |")
    base = ["draft"]
    base_any = sum(q.any_right(base) for q in questions)
    base_cost = sum(q.cost(base) for q in questions) / n
    out += ["", "| union | any reading right | V2's choice right (today's verifier) | model seconds | "
                "any-right gained a second |", "|---|---|---|---|---|"]
    unions = [base, *([*base, g] for g in names if g != "draft"), [g for q in questions[:1] for g in q.generators]]
    every = list(dict.fromkeys(g for q in questions for g in q.generators))
    unions[-1] = [g for g in names for _ in range(max(q.generators.count(g) for q in questions))] or every
    for chosen in unions:
        any_right = sum(q.any_right(chosen) for q in questions)
        cost = sum(q.cost(chosen) for q in questions) / n
        right = accuracy(questions, chosen, probability)
        per = (any_right - base_any) / n / (cost - base_cost) if cost > base_cost else 0.0
        out.append(f"| {' + '.join(chosen)} | {any_right} ({any_right / n:.1%}) | {right} ({right / n:.1%}) | "
                   f"{cost:.2f} | {per * 100:.2f} points/s |")
    pool = [g for g in unions[-1] if g != "draft"] + (["draft"] * 0)
    out += ["", "greedy order (most right readings added a second first):"]
    for g, any_right, cost in greedy(questions, pool, len(pool)):
        out.append(f"- + {g}: any reading right {any_right} ({any_right / n:.1%}), {cost:.2f} s")
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    from text2sql_dspy.programs.agents.verifier import load_verifier

    verifier = load_verifier()
    questions = list(collected(args.files))
    for label, keep in KINDS.items():
        mine = [q for q in questions if keep(q)]
        if mine:
            print("\n".join(table(mine, label, verifier.full.probability)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
