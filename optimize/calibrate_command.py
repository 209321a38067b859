"""Fit a database's calibration from its verified pairs: ``text2sql calibrate``.

    text2sql calibrate --db shop.sqlite [--program v2] [--examples STORE] [--limit N]

The program answers each verified pair's question of that database, with that pair withheld from the
pairs it is shown, and each answer is scored by running it beside the pair's SQL. Each scored answer is kept
beside the calibration as it comes, so a stopped run resumes and a later one answers only new pairs
(``--fresh`` answers them all again); every kept answer is scored again on the data as it is now, so a
database whose rows changed is never fitted on what was right before. A logistic map from the
answers' signals to their rightness (:mod:`text2sql_dspy.programs.calibration`) is saved in the cache dir;
from then on the program's ``confidence`` on that database is that probability.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.command import Command, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from text2sql_dspy.programs.cli import add_program_arguments

    add_program_arguments(parser)
    parser.add_argument("--limit", type=positive_int, help="answer at most this many pairs (the most recent first)")
    parser.add_argument("--fresh", action="store_true", help="answer every pair again, not only those not yet answered")


def calibrate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from text2sql_dspy.programs.agents.base import lm_name
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.calibration import MIN_ANSWERS, calibration_file, fit, save_calibration
    from text2sql_dspy.programs.cli import build_program
    from text2sql_dspy.programs.errors import ConfigurationError
    from text2sql_dspy.programs.examples.identity import database_key
    from text2sql_dspy.programs.examples.selector import ExampleSelector
    from text2sql_dspy.programs.examples.store import ExampleStore

    db_path = args.db or str(ensure_bundled_database())
    store = ExampleStore(args.examples)
    program = build_program(args, db_path)
    source = program.source(db_path)
    pairs = sorted(store.examples(source, "pair"), key=lambda p: (p.created, p.id), reverse=True)[: args.limit]
    if len(pairs) < MIN_ANSWERS:
        raise ConfigurationError(
            f"{len(pairs)} verified pairs stored for this database; calibrating needs at least {MIN_ANSWERS}. "
            "Save more with `text2sql ask ... --save` (or the web page's Right button), or `text2sql learn`.")
    if not args.no_examples:  # a question is never shown its own pair
        program.selector = ExampleSelector(store, k=program.selector.k if program.selector else 4,
                                           exclude_same_question=True)
    model, name = lm_name(program.lm), program.calibration_name()
    kept = answers_file(calibration_file(database_key(source), name, model))
    if args.fresh:
        kept.unlink(missing_ok=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    done = read_answers(kept)
    for pair in tqdm([p for p in pairs if answer_key(p) not in done], desc="calibrating", unit="pair"):
        done[answer_key(pair)] = answer = program.run(pair.question, db_path)  # scored below, on the data as it is then
        with kept.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"key": answer_key(pair), "answer": answer.model_dump(mode="json")}) + "\n")
    answers = [(done[answer_key(p)], same_rows(source.database, done[answer_key(p)].sql, p.sql))
               for p in pairs]  # scored on the data as it is now, which may have changed since it was answered
    calibration = fit(answers, model)
    if calibration is None:
        raise ConfigurationError(f"the program answered {sum(r for _, r in answers)} of {len(answers)} pairs right: "
                                 "a calibration needs both right and wrong answers.")
    file = save_calibration(calibration, database_key(source), name)
    ece = "n/a" if calibration.held_out_ece is None else f"{calibration.held_out_ece:.3f}"
    sure = "no cut-off reaches 90%" if calibration.sure_at is None else f"from {calibration.sure_at:.2f}"
    print(f"{calibration.right} of {calibration.answers} answered right; out-of-fold ECE {ece}; sure {sure}")
    print(f"saved {file}")
    return 0


def answer_key(pair: Any) -> str:
    """A kept answer stands for its pair while the pair's question and SQL are unchanged."""
    return f"{pair.id}|{pair.question}|{pair.sql}"


def answers_file(calibration: Path) -> Path:
    return calibration.with_suffix(".answers.jsonl")


def read_answers(file: Path) -> dict[str, Answer]:
    """The answers kept so far; a line cut short by a killed run, or kept in an older form, is skipped."""
    done = {}
    if file.is_file():
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
                done[record["key"]] = Answer.model_validate(record["answer"])
            except (ValueError, KeyError, TypeError):
                continue
    return done


def same_rows(database: Any, query: str, reference: str) -> bool:
    """Whether ``query`` returns the rows ``reference`` does (in order when the reference orders them)."""
    from text2sql_dspy.programs.query.results import is_ordered, results_match

    if not query.strip():
        return False
    found, wanted = database.execute(query, max_rows=100_000), database.execute(reference, max_rows=100_000)
    return found.ok and wanted.ok and results_match(found, wanted, ordered=is_ordered(reference))


CALIBRATE = Command("calibrate", "fit the confidence to a database from its verified pairs", add_arguments, calibrate)
