"""Fit a database's calibration from its verified pairs: ``text2sql calibrate``.

    text2sql calibrate --db shop.sqlite [--program v2] [--examples STORE] [--limit N]

The program answers each verified pair's question of that database, with that pair withheld from the
pairs it is shown, and each answer is scored by running it beside the pair's SQL. A logistic map from the
answers' signals to their rightness (:mod:`text2sql_dspy.programs.calibration`) is saved in the cache dir;
from then on the program's ``confidence`` on that database is that probability.
"""

from __future__ import annotations

import argparse
from typing import Any

from text2sql_dspy.programs.command import Command, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from text2sql_dspy.programs.cli import add_program_arguments

    add_program_arguments(parser)
    parser.add_argument("--limit", type=positive_int, help="answer at most this many pairs (the most recent first)")


def calibrate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from text2sql_dspy.programs.agents.base import lm_name
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.calibration import MIN_ANSWERS, fit, save_calibration
    from text2sql_dspy.programs.cli import build_program
    from text2sql_dspy.programs.errors import ConfigurationError
    from text2sql_dspy.programs.examples.identity import database_key
    from text2sql_dspy.programs.examples.selector import ExampleSelector
    from text2sql_dspy.programs.examples.store import ExampleStore

    db_path = args.db or str(ensure_bundled_database())
    store = ExampleStore(args.examples)
    program = build_program(args, db_path)
    source = program.source(db_path)
    pairs = sorted(store.examples(source, "pair"), key=lambda p: p.created, reverse=True)[: args.limit]
    if len(pairs) < MIN_ANSWERS:
        raise ConfigurationError(
            f"{len(pairs)} verified pairs stored for this database; calibrating needs at least {MIN_ANSWERS}. "
            "Save more with `text2sql ask ... --save` (or the web page's Right button), or `text2sql learn`.")
    if not args.no_examples:  # a question is never shown its own pair
        program.selector = ExampleSelector(store, k=program.selector.k if program.selector else 4,
                                           exclude_same_question=True)
    answers: list[tuple[dict[str, Any], bool]] = []
    for pair in tqdm(pairs, desc="calibrating", unit="pair"):
        fields = program.fields(pair.question, db_path)
        answers.append((fields, same_rows(source.database, fields.get("query") or "", pair.sql)))
    calibration = fit(answers, lm_name(program.lm))
    if calibration is None:
        raise ConfigurationError(f"the program answered {sum(r for _, r in answers)} of {len(answers)} pairs right: "
                                 "a calibration needs both right and wrong answers.")
    file = save_calibration(calibration, database_key(source), type(program).__name__)
    ece = "n/a" if calibration.held_out_ece is None else f"{calibration.held_out_ece:.3f}"
    sure = "no cut-off reaches 90%" if calibration.sure_at is None else f"from {calibration.sure_at:.2f}"
    print(f"{calibration.right} of {calibration.answers} answered right; out-of-fold ECE {ece}; sure {sure}")
    print(f"saved {file}")
    return 0


def same_rows(database: Any, query: str, reference: str) -> bool:
    """Whether ``query`` returns the rows ``reference`` does (in order when the reference orders them)."""
    from text2sql_dspy.programs.db.results import is_ordered, results_match

    if not query.strip():
        return False
    found, wanted = database.execute(query, max_rows=100_000), database.execute(reference, max_rows=100_000)
    return found.ok and wanted.ok and results_match(found, wanted, ordered=is_ordered(reference))


CALIBRATE = Command("calibrate", "fit the confidence to a database from its verified pairs", add_arguments, calibrate)
