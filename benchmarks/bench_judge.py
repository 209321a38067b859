#!/usr/bin/env python
"""Judge benchmark: how well a judge's score separates right queries from wrong ones, offline.

    python benchmarks/bench_judge.py --data ../shared/benchmarks/spider-public --split train --limit 40 \\
        --out runs/judge-spider-train --variant facts --variant schema
    python benchmarks/bench_judge.py --split train --limit 20 --out runs/judge-bundled-train   # the bundled data

1. Collect (resumable, ``<out>/candidates.jsonl``): for ``--limit`` questions drawn with ``--seed``
   from the split, the drafting step writes a greedy draft and ``--samples`` samples at temperature
   0.7, as V2 does. Every distinct query that validates is run read-only and labelled by execution
   against the gold SQL. Training splits keep the test questions out of judge development.
2. Score (resumable per variant, ``<out>/scores.jsonl``): each judge variant scores every candidate
   from the same execution facts the agent shows it. Printed per variant: ROC AUC against execution,
   ECE, and the mean score on right and on wrong candidates.

Variants: ``facts`` is the agent's judge as it ships (question, query, execution result); ``schema``
adds the table schemas in front, as the drafting prompt shows them (their KV prefix is shared);
``pairs`` adds the question's nearest verified pairs of the same database from ``--examples STORE``
(never the scored question's own pair; with ``--examples`` the drafts of step 1 are shown them too);
``fewshot`` is ``facts`` with labelled demos (half right, half wrong, with their execution results)
drawn from another run's candidates, ``--demos OTHER_OUT``: use a run on other databases, so that
no demo shares a database with a scored candidate (P(True) with few-shot demos: Kadavath et al., 2022).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
from pathlib import Path
from typing import Any

import dspy
from tqdm import tqdm

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.optimize.report import expected_calibration_error, judge_reliability
from text2sql_dspy.programs.agents.drafting import draft_sql
from text2sql_dspy.programs.agents.generators import SAMPLE_TEMPERATURE
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.llm.factory import build_lm
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
from text2sql_dspy.programs.query.results import facts_of
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.signatures import JudgeSQL

SCHEMA_DESC = "CREATE TABLE statements of the database the query ran on"
PAIRS_DESC = "verified question -> SQL pairs on this database, the most similar to the question"
VARIANTS = {
    "facts": JudgeSQL,
    "schema": JudgeSQL.prepend("table_schemas", dspy.InputField(desc=SCHEMA_DESC), type_=str),
    "fewshot": JudgeSQL,
    "pairs": JudgeSQL.prepend("verified_pairs", dspy.InputField(desc=PAIRS_DESC), type_=str),
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def collect(program: Any, examples: list[tuple[int, Any]], samples: int, out: Path) -> list[dict[str, Any]]:
    """Draft, validate, run and label candidates for each example not yet in ``out``."""
    rows = read_jsonl(out)
    done = {r["index"] for r in rows}
    with out.open("a", encoding="utf-8") as fh:
        for index, example in tqdm([(i, e) for i, e in examples if i not in done], desc="collect", unit="q"):
            source = open_source(example.db_path)
            view = program.schema(source, example.question)
            seen: set[str] = set()
            for seed in range(samples + 1):
                sampling = {"temperature": SAMPLE_TEMPERATURE, "seed": seed} if seed else {}
                draft = draft_sql(program.draft, program.lm, source=source, question=example.question,
                                  table_schemas=view.text, facts=view.facts, **sampling)
                validation = source.validator.validate(draft.sql) if draft.sql else None
                if validation is None or not validation.valid or validation.sql in seen:
                    continue
                seen.add(validation.sql)
                row = {
                    "index": index, "question": example.question, "db_path": str(example.db_path),
                    "sql": validation.sql, "sampled": bool(seed), "draft_confidence": draft.confidence,
                    "facts": facts_of(source.database.execute(validation.sql)).render(),
                    "correct": compare_execution(validation.sql, example.gold_sql, example.db_path).match,
                }
                rows.append(row)
                fh.write(json.dumps(row) + "\n")
            fh.flush()
    return rows


def labelled_demos(pool: list[dict[str, Any]], per_label: int, seed: int) -> list[dspy.Example]:
    """``per_label`` right and ``per_label`` wrong candidates from ``pool``, one per question, as judge demos."""
    rng = random.Random(seed)
    chosen: list[dict[str, Any]] = []
    for label in (True, False):
        by_question = {c["index"]: c for c in pool if c["correct"] is label}
        chosen += rng.sample(sorted(by_question.values(), key=lambda c: c["index"]), min(per_label, len(by_question)))
    rng.shuffle(chosen)
    return [dspy.Example(question=c["question"], sql_query=c["sql"], execution_result=c["facts"],
                         is_correct=c["correct"], issues=[], suggestions=[]) for c in chosen]


def pairs_text(program: Any, candidate: dict[str, Any]) -> str:
    """The candidate's question's nearest stored pairs (its own excluded), one "question / SQL" block each."""
    pairs = program.selector.pairs(open_source(candidate["db_path"]), candidate["question"])
    return "\n\n".join(f"Question: {p.question}\nSQL: {p.sql}" for p in reversed(pairs)) or "(none stored)"


def score(program: Any, variant: str, candidates: list[dict[str, Any]], out: Path,
          demos: list[dspy.Example]) -> list[dict[str, Any]]:
    """Each candidate's score under ``variant``, reusing the scores already in ``out``."""
    rows = [r for r in read_jsonl(out) if r["variant"] == variant]
    done = {(r["index"], r["sql"]) for r in rows}
    predictor = dspy.Predict(VARIANTS[variant])
    if variant == "fewshot":
        predictor.demos = demos
    with out.open("a", encoding="utf-8") as fh:
        for cand in tqdm([c for c in candidates if (c["index"], c["sql"]) not in done], desc=variant, unit="query"):
            context = {}
            if variant == "schema":
                context["table_schemas"] = program.schema(open_source(cand["db_path"]), cand["question"]).text
            if variant == "pairs":
                context["verified_pairs"] = pairs_text(program, cand)
            start = time.perf_counter()
            verdict = judge_sql(predictor, program.lm, question=cand["question"], sql=cand["sql"],
                                execution_result=cand["facts"], explain=False, **context)
            row = {"variant": variant, "index": cand["index"], "sql": cand["sql"], "correct": cand["correct"],
                   "score": verdict.correctness_score, "seconds": time.perf_counter() - start}
            rows.append(row)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BUNDLED_DATA)
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int, default=40, help="questions drawn from the split")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=2, help="sampled drafts per question besides the greedy one")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS), help="judge variants (default: all)")
    parser.add_argument("--demos", type=Path, help="another run's --out, whose candidates are the fewshot demos")
    parser.add_argument("--demos-per-label", type=int, default=2)
    parser.add_argument("--examples", type=Path,
                        help="an example store: drafts are shown its pairs; the pairs variant uses it")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    needs = {"fewshot": ("demos", "--demos (another run's --out)"), "pairs": ("examples", "--examples STORE")}
    variants = args.variant or [v for v in VARIANTS if v not in needs or getattr(args, needs[v][0])]
    for variant in variants:  # before collecting, which takes minutes
        if variant in needs and not getattr(args, needs[variant][0]):
            parser.error(f"the {variant} variant needs {needs[variant][1]}")
    logging.getLogger("dspy").setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)

    examples = list(enumerate(load_split(args.data, args.split)))
    examples = sorted(random.Random(args.seed).sample(examples, min(args.limit, len(examples))), key=lambda e: e[0])
    program = make_program("baseline", lm=build_lm("local"), examples=args.examples)
    if program.selector is not None:
        program.selector.exclude_same_question = True  # a stored question is never shown its own pair
    with dspy.context(lm=program.lm, adapter=StablePrefixAdapter()):
        candidates = collect(program, examples, args.samples, args.out / "candidates.jsonl")
        right = sum(c["correct"] for c in candidates)
        print(f"{len(candidates)} distinct valid candidates from {len(examples)} questions: {right} right, "
              f"{len(candidates) - right} wrong")
        pool = read_jsonl(args.demos / "candidates.jsonl") if args.demos else []
        demos = labelled_demos(pool, args.demos_per_label, args.seed)
        for variant in variants:
            rows = score(program, variant, candidates, args.out / "scores.jsonl", demos)
            pairs = [(r["score"], r["correct"]) for r in rows]
            reliability = judge_reliability(pairs)
            mean_right = statistics.mean([s for s, c in pairs if c] or [float("nan")])
            mean_wrong = statistics.mean([s for s, c in pairs if not c] or [float("nan")])
            auc = reliability.get("judge_auc")
            print(f"{variant:<8} n={len(pairs)} ROC AUC {'n/a' if auc is None else f'{auc:.3f}'} "
                  f"ECE {expected_calibration_error(pairs):.3f} mean score right {mean_right:.2f} wrong "
                  f"{mean_wrong:.2f} "
                  f"median {statistics.median(r['seconds'] for r in rows):.2f} s a verdict")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
