#!/usr/bin/env python
"""V2's choice replayed by other verifier files on the readings an ``evaluate`` run recorded, asking nothing of the
model: how many answers would change, and how many of those would be right (each new choice run against gold);
each verifier after the first is also compared with the first one's replay.

    python benchmarks/replay_choice.py RUN_DIR [RUN_DIR ...] --verifier A.json [--verifier B.json ...] \
        --data-root DIR [--data-root DIR ...] [--program v2] [--databases A,B]

Per answer, as V2 chooses, by its one rule (``programs/agents/candidates.py``: ``settles``, then ``rank``): the first
draft alone where the verifier's early model is sure of it (at its ``early_sure``) and it is neither blocked nor
empty; else the reading the full model prefers (no blocking finding first, then rows returned, then no symptom, then
the probability). Where the run
stopped at one draft and the replayed verifier would sample (or, for a symptom, redraft), nothing more was drawn:
the answer is counted as unknown and kept as it was. Redrafts and loosened readings are kept only where the run
recorded them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/
from rescore_verifier import answers_of, arguments, verifiers_of  # noqa: E402

from text2sql_dspy.optimize.fit_verifier import blocked, rechecked, returns_nothing, symptomatic  # noqa: E402
from text2sql_dspy.optimize.metrics import compare_execution  # noqa: E402
from text2sql_dspy.optimize.report import paired_comparison  # noqa: E402
from text2sql_dspy.programs.agents.candidates import rank, settles  # noqa: E402
from text2sql_dspy.programs.agents.verifier import Verifier  # noqa: E402
from text2sql_dspy.programs.answer import Reading  # noqa: E402
from text2sql_dspy.programs.query.results import Scoring  # noqa: E402


def choice(record: dict, verifier: Verifier, previous: str, db: Path) -> str | None:
    """The query the verifier would answer with, among the recorded readings; None where it would have sampled
    and the run did not."""
    question = record["question"]
    readings = [rechecked(Reading.model_validate(r), question, db, previous) for r in record.get("readings") or []]
    readings = [r for r in readings if r.valid and r.preview is not None]
    if not readings:
        return record.get("sql") or ""
    greedy = next((s.get("sql") for s in record.get("steps") or [] if s.get("kind") == "draft"), "")
    first = next((r for r in readings if r.sql == greedy), None)
    if first is not None and settles(verifier.probability(first, question, early=True, previous=previous),
                                     verifier.early_sure, blocked=blocked(first), nothing=returns_nothing(first)):
        return first.sql
    if int(record.get("drafts") or 1) == 1 and len(readings) == 1:
        return None  # the run stopped at its first draft; this verifier would have drawn more
    drafts = int(record.get("drafts") or 1)

    def key(r: Reading) -> tuple[bool, bool, bool, float]:
        p = verifier.probability(r, question, drafts=drafts, groups=len(readings), previous=previous)
        return rank(blocked=blocked(r), nothing=returns_nothing(r), symptom=symptomatic(r), p=p)

    return min(readings, key=key).sql


def right(record: dict, sql: str, db: Path, relaxed: bool) -> bool:
    if sql == (record.get("sql") or ""):
        return bool(record["correct"])
    if not sql:
        return False
    found = compare_execution(sql, record["gold"], str(db), Scoring(record.get("scored_as", "spider")))
    return bool(found.match or (relaxed and found.relaxed_match))


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__.split("\n\n")[0]).parse_args(argv)
    verifiers = verifiers_of(args)
    for run in args.runs:
        answers = answers_of(run, args)
        before = [bool(r["correct"]) for r, _, _ in answers]
        print(f"{run}: {len(answers)} answers of {args.program}, {sum(before)} right as recorded")
        reference = None  # the first verifier's replayed answers: the others are compared with them too
        for name, verifier in verifiers.items():
            after, changed, unknown = [], 0, 0
            for (r, previous, db), was in zip(answers, before, strict=True):
                sql = choice(r, verifier, previous, db)
                if sql is None:
                    unknown += 1
                    after.append(was)
                    continue
                changed += sql != (r.get("sql") or "")
                after.append(right(r, sql, db, args.relaxed))
            test = paired_comparison([{"index": i, "correct": b} for i, b in enumerate(before)],
                                     [{"index": i, "correct": a} for i, a in enumerate(after)])
            print(f"  {name}: {sum(after)} right ({sum(after) / len(answers):.1%}); {changed} answers changed, "
                  f"{test['gained']} gained, {test['lost']} lost, sign test p = {test['sign_test_p']:.2f}; "
                  f"{unknown} would sample where the run did not (kept as they were)")
            if reference is None:
                reference = after
                continue
            test = paired_comparison([{"index": i, "correct": b} for i, b in enumerate(reference)],
                                     [{"index": i, "correct": a} for i, a in enumerate(after)])
            print(f"    against the first verifier replayed: {test['gained']} gained, {test['lost']} lost, "
                  f"sign test p = {test['sign_test_p']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
