"""Compile a program with a DSPy optimizer and save it for ``--program PATH``: ``text2sql compile``.

    text2sql compile --program v2 --optimizer bootstrap --metric verifier+execution \\
        --train-split train --dev-split dev --out compiled/v2-bootstrap.json

``python -m optimize`` runs the same from the repository root.
"""

from __future__ import annotations

import argparse
import json

from text2sql_dspy.programs.command import Command, non_negative_int, positive_int
from text2sql_dspy.programs.bundled import BUNDLED_DATA

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``text2sql compile`` and ``python -m optimize``."""
    from text2sql_dspy.optimize.compile import OPTIMIZERS, Budget
    from text2sql_dspy.optimize.metrics import SCORERS
    from text2sql_dspy.programs.agents.registry import PROGRAMS
    from text2sql_dspy.programs.examples.selector import DEFAULT_K

    defaults = Budget()
    parser.add_argument("--program", required=True, choices=list(PROGRAMS), help="program to compile")
    parser.add_argument("--optimizer", required=True, choices=OPTIMIZERS,
                        help="none: learn the training split's pairs only (retrieval, no prompt optimization)")
    parser.add_argument("--examples", help="the example store to learn into and show (default: beside --out)")
    parser.add_argument("--no-learn", action="store_true", help="do not put the training split into the store")
    parser.add_argument("--k-examples", type=non_negative_int, default=DEFAULT_K, help="stored pairs shown per question")
    parser.add_argument(
        "--metric", default="verifier+execution",
        help=f"metric: {', '.join(SCORERS)}, or several joined by '+' (default: verifier+execution)",
    )
    parser.add_argument("--data", default=str(BUNDLED_DATA), help="Spider-format folder (default: the bundled data/)")
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--dev-split", default="dev")
    parser.add_argument("--out", required=True, help="where to save the compiled program (.json); a .meta.json goes beside it")
    budget = parser.add_argument_group("budget (every trial is a full program run)")
    budget.add_argument("--train-limit", type=positive_int, default=defaults.train_limit, help="train examples, drawn with --seed")
    budget.add_argument("--dev-limit", type=non_negative_int, default=defaults.dev_limit, help="dev examples scored before and after (0: none)")
    budget.add_argument("--max-demos", type=int, default=defaults.max_demos, help="bootstrapped demos per predictor")
    budget.add_argument(
        "--max-labeled-demos", type=int, default=defaults.max_labeled_demos,
        help="demos per predictor in all: the bootstrapped ones, then gold-SQL demos for the drafting step (0: none)",
    )
    budget.add_argument("--num-trials", type=positive_int, default=defaults.num_trials, help="MIPROv2 trials")
    budget.add_argument("--num-candidates", type=positive_int, default=defaults.num_candidates, help="MIPROv2 candidates")
    budget.add_argument("--max-metric-calls", type=positive_int, default=defaults.max_metric_calls, help="GEPA metric calls")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.7, help="score that counts as success when bootstrapping")
    parser.add_argument("--model", help="agent LM (default: TEXT2SQL_MODEL or the embedded local model)")
    parser.add_argument("--judge-model", help="judge LM, for the metric and V2 (default: TEXT2SQL_JUDGE_MODEL / LLM_JUDGE_MODEL)")
    parser.add_argument("--reflection-model", help="LM that proposes instructions for MIPROv2 and GEPA (default: the agent's)")
    parser.add_argument("--retrieval", choices=["semantic", "keyword"], default="semantic")
    parser.add_argument("--top-k", type=positive_int, default=5)
    parser.add_argument("--threads", type=positive_int, default=1, help="parallel program runs (1 for the local model)")


def compile_and_save(args: argparse.Namespace) -> int:
    from text2sql_dspy.optimize.compile import Budget, CompileConfig, compile_program

    budget = Budget(
        train_limit=args.train_limit, dev_limit=args.dev_limit, max_demos=args.max_demos,
        max_labeled_demos=args.max_labeled_demos, num_trials=args.num_trials, num_candidates=args.num_candidates, max_metric_calls=args.max_metric_calls,
    )
    config = CompileConfig(
        program=args.program, optimizer=args.optimizer, metric=args.metric, data=args.data, out=args.out,
        train_split=args.train_split, dev_split=args.dev_split, budget=budget, seed=args.seed,
        threshold=args.threshold, model=args.model, judge_model=args.judge_model,
        reflection_model=args.reflection_model, retrieval=args.retrieval, top_k=args.top_k, threads=args.threads,
        examples=args.examples, learn=not args.no_learn, k_examples=args.k_examples,
    )
    meta = compile_program(config)
    print(json.dumps({k: meta[k] for k in ("program", "optimizer", "metric", "examples", "learned", "demos", "dev_before", "dev_after", "trace_audit", "seconds")}, indent=2))
    print(f"saved {args.out}; use it with --program {args.out}")
    return 0


COMPILE = Command("compile", "compile a program with a DSPy optimizer and save it for --program PATH", add_arguments, compile_and_save)
main = COMPILE.main
