"""Compile a program with a DSPy optimizer and save it for ``--program PATH``: ``text2sql compile``.

    text2sql compile --program v2 --optimizer bootstrap --metric verifier+execution \\
        --train-split train --dev-split dev --out compiled/v2-bootstrap.json

A folder with no dev split (a Spider training file alone) is split by whole databases, seeded::

    text2sql compile --program v2 --optimizer bootstrap --data ../spider-train --train-split train \\
        --train-databases 24 --dev-databases 8 --per-database 2 --seed 0 --out compiled/v2-spider.json

``python -m optimize`` runs the same from the repository root.
"""

from __future__ import annotations

import argparse
import json

from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.command import Command, add_view_arguments, non_negative_int, positive_int

RESUME_HELP = (
    "where to save the compiled program (.json); a .meta.json goes beside it. Resumable: every LM reply of the "
    "compile is cached in <out>.lm-cache/ beside it, keyed by model name, prompt and sampling options, so rerunning a "
    "stopped compile with the same --out and flags replays the program runs, judge calls and proposals it already "
    "made instead of paying for them again. Not resumed: the store's checks of the training pairs, the SQL runs and "
    "the optimizer's bookkeeping are redone, and a changed flag, program, prompt or model setting makes new "
    "calls. A served model's replies are keyed by its name, not its address: delete the folder to start afresh."
)


def database_count(text: str) -> int | float:
    """argparse type for a number of databases: a whole number (0 or more) or a fraction of them (0 < f < 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number nor a fraction") from None
    if value.is_integer() and value >= 0:
        return int(value)
    if 0 < value < 1:
        return value
    raise argparse.ArgumentTypeError(
        f"give a whole number of databases (0 or more) or a fraction between 0 and 1, got {text}"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``text2sql compile`` and ``python -m optimize``."""
    from text2sql_dspy.optimize.compile import DEV_DATABASES, OPTIMIZERS, Budget
    from text2sql_dspy.optimize.metrics import SCORERS
    from text2sql_dspy.programs.agents.registry import PROGRAMS
    from text2sql_dspy.programs.examples.selector import DEFAULT_K

    defaults = Budget()
    parser.add_argument("--program", required=True, choices=list(PROGRAMS), help="program to compile")
    parser.add_argument("--optimizer", required=True, choices=OPTIMIZERS,
                        help="none: learn the training split's pairs only (retrieval, no prompt optimization)")
    parser.add_argument("--examples", help="the example store to learn into and show (default: beside --out)")
    parser.add_argument("--no-learn", action="store_true", help="do not put the training split into the store")
    parser.add_argument("--k-examples", type=non_negative_int, default=DEFAULT_K,
                        help="stored pairs shown per question")
    parser.add_argument(
        "--metric", default="verifier+execution",
        help=f"metric: {', '.join(SCORERS)}, or several joined by '+' (default: verifier+execution)",
    )
    parser.add_argument("--data", default=str(BUNDLED_DATA), help="Spider-format folder (default: the bundled data/)")
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--dev-split", default="dev", help="dev split (where --data has none: split by database)")
    parser.add_argument(
        "--by-database", action="store_true",
        help="draw the training and validation questions from --train-split by whole databases, none on both sides, "
             "and learn only the training databases' pairs (the default where --data has no --dev-split, and implied "
             "by --train-databases, --dev-databases and --per-database)",
    )
    parser.add_argument(
        "--carry-demos", action="store_true",
        help="show the drafting demos on every database, each under its own database's schema and marked as "
             "another database's worked example (default: a demo is shown only where its SQL names nothing but the "
             "queried database's tables and columns). For a compile on other databases than those it will answer on",
    )
    parser.add_argument("--out", required=True, help=RESUME_HELP)
    budget = parser.add_argument_group("budget (every trial is a full program run)")
    budget.add_argument("--train-limit", type=positive_int, default=defaults.train_limit,
                        help="train examples, drawn with --seed")
    budget.add_argument("--dev-limit", type=non_negative_int, default=defaults.dev_limit,
                        help="dev examples scored before and after (0: none)")
    budget.add_argument("--max-demos", type=int, default=defaults.max_demos, help="bootstrapped demos per predictor")
    budget.add_argument(
        "--max-labeled-demos", type=int, default=defaults.max_labeled_demos,
        help="demos per predictor in all: the bootstrapped ones, then gold-SQL demos for the drafting step (0: none)",
    )
    budget.add_argument(
        "--keep-demos", type=non_negative_int, metavar="K",
        help="of the drafting demos bootstrapped (--max-demos), keep the K whose queries differ most in shape "
             "(joins, grouping, ordering, nesting, aggregates...; default: keep all)",
    )
    budget.add_argument(
        "--varied-first", action="store_true",
        help="bootstrap from the training questions whose gold SQL is most varied in shape first (a bootstrap keeps "
             "the first it answers right, so that its demos are more than lookups)",
    )
    budget.add_argument("--num-trials", type=positive_int, default=defaults.num_trials, help="MIPROv2 trials")
    budget.add_argument("--num-candidates", type=positive_int, default=defaults.num_candidates,
                        help="MIPROv2 candidates")
    budget.add_argument("--max-metric-calls", type=positive_int, default=defaults.max_metric_calls,
                        help="GEPA metric calls")
    budget.add_argument(
        "--train-databases", type=database_count, metavar="N",
        help="by database: training databases, a number or a fraction, drawn with --seed (default: all the others)",
    )
    budget.add_argument(
        "--dev-databases", type=database_count, metavar="M",
        help=f"by database: validation databases, a number or a fraction, drawn with --seed first "
             f"(default: {DEV_DATABASES:g} of them; none with --dev-limit 0)",
    )
    budget.add_argument(
        "--per-database", type=positive_int, metavar="K",
        help="by database: at most K questions from each database, drawn with --seed (default: no cap); "
             "--train-limit and --dev-limit then take one question from each database in turn",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.7, help="score that counts as success when bootstrapping")
    parser.add_argument("--model", help="agent LM (default: TEXT2SQL_MODEL or the embedded local model)")
    parser.add_argument("--judge-model",
                        help="judge LM, for the metric and V2 (default: TEXT2SQL_JUDGE_MODEL / LLM_JUDGE_MODEL)")
    parser.add_argument("--reflection-model",
                        help="LM that proposes instructions for MIPROv2 and GEPA (default: the agent's)")
    add_view_arguments(parser)
    parser.add_argument("--threads", type=positive_int, default=1, help="parallel program runs (1 for the local model)")
    ensemble = parser.add_argument_group(
        "ensemble (V2's generators, their order and the verifier, over many training databases: --ensemble)")
    ensemble.add_argument("--ensemble", action="store_true",
                          help="compile V2's ensemble on every database of --data (with --optimizer none): its pools "
                               "of solved pairs, its answers with every generator, its order, budget and verifier")
    ensemble.add_argument("--conversations", metavar="FOLDER",
                          help="a CoSQL- or SParC-format folder of other conversations: the follow-ups' pool, and "
                               "conversations to fit on (--databases: where its databases are, default --data)")
    ensemble.add_argument("--databases", metavar="FOLDER",
                          help="the Spider-format folder with --conversations' databases")
    ensemble.add_argument("--conversations-per-database", type=positive_int, default=1, metavar="K",
                          help="conversations of each database to fit on (default 1)")
    ensemble.add_argument("--order", action="append", metavar="G1,G2,...",
                          help="a candidate order of generators, draft first (repeatable; default: two of them)")
    ensemble.add_argument("--collected", action="append", default=[], metavar="FILE",
                          help="answers already collected with every generator (optimize/collect.py --generators)")
    ensemble.add_argument("--max-cost", type=float, default=2.0,
                          help="model seconds at most this many times V2's without an ensemble (default 2)")
    ensemble.add_argument("--base-verifier", metavar="FILE", help="the verifier whose early model is kept "
                          "(default: the one shipped)")


def compile_and_save(args: argparse.Namespace) -> int:
    from text2sql_dspy.optimize.compile import Budget, CompileConfig, compile_program

    if args.ensemble:
        return compiled_ensemble(args)

    budget = Budget(
        train_limit=args.train_limit, dev_limit=args.dev_limit, max_demos=args.max_demos,
        max_labeled_demos=args.max_labeled_demos, num_trials=args.num_trials, num_candidates=args.num_candidates,
        max_metric_calls=args.max_metric_calls, train_databases=args.train_databases, dev_databases=args.dev_databases,
        per_database=args.per_database, keep_demos=args.keep_demos, varied_first=args.varied_first,
    )
    by_database = args.by_database or any(
        value is not None for value in (args.train_databases, args.dev_databases, args.per_database)
    )
    config = CompileConfig(
        program=args.program, optimizer=args.optimizer, metric=args.metric, data=args.data, out=args.out,
        train_split=args.train_split, dev_split=args.dev_split, budget=budget, seed=args.seed,
        threshold=args.threshold, model=args.model, judge_model=args.judge_model,
        reflection_model=args.reflection_model, retrieval=args.retrieval, top_k=args.top_k,
        schema_budget=args.schema_budget, threads=args.threads,
        examples=args.examples, learn=not args.no_learn, k_examples=args.k_examples, by_database=by_database,
        carry_demos=args.carry_demos,
    )
    meta = compile_program(config)
    print(json.dumps({k: meta[k] for k in ("program", "optimizer", "metric", "examples", "learned", "demos",
                                           "dev_before", "dev_after", "trace_audit", "seconds")}, indent=2))
    print(f"saved {args.out}; use it with --program {args.out}")
    return 0


def compiled_ensemble(args: argparse.Namespace) -> int:
    from text2sql_dspy.optimize.compile_ensemble import DEFAULT_ORDERS, EnsembleConfig, compile_ensemble
    from text2sql_dspy.programs.errors import ConfigurationError

    if args.program != "v2" or args.optimizer != "none":
        raise ConfigurationError("--ensemble compiles V2 with --optimizer none: give --program v2 --optimizer none.")
    orders = tuple(tuple(o.split(",")) for o in args.order) if args.order else DEFAULT_ORDERS
    meta = compile_ensemble(EnsembleConfig(
        data=args.data, out=args.out, conversations=args.conversations, databases=args.databases,
        per_database=args.per_database or 3, conversations_per_database=args.conversations_per_database,
        orders=orders, collected=tuple(args.collected), base_verifier=args.base_verifier, max_cost=args.max_cost,
        seed=args.seed))
    print(json.dumps({k: meta[k] for k in ("order", "budget", "stop", "pools", "fitted_on")}, indent=2))
    print(f"saved {args.out}; use it with --program {args.out}")
    return 0


COMPILE = Command("compile", "compile a program with a DSPy optimizer and save it for --program PATH", add_arguments,
                  compile_and_save)
main = COMPILE.main
