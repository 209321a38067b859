"""Evaluate programs side by side on a held-out Spider-format split: ``text2sql evaluate``.

    text2sql evaluate --split test --program baseline --program v2 --out runs/test
    python evaluate.py --data data --split test --program baseline --program v2 --out runs/test

Every program answers the same questions, scored as the benchmark's own evaluator scores them
(:func:`~..programs.dataset.scoring_of`: BIRD's rows as sets, Spider's and SParC's as a multiset; the
rule is kept in ``run.json``, on each record and in the report). Per program it reports execution accuracy, valid-SQL
rate, judge reliability against execution (agreement, Cohen's kappa, ROC AUC), confidence
calibration (ECE), latency, LM calls, tokens and cost, and the V2 card's agent metrics. It writes
``results.json``, ``report.md`` and PNG plots to ``--out``. Records are appended to
``records.jsonl`` as they finish, so Ctrl-C keeps what is done and a rerun resumes.

A question the model service could not answer (server down, too slow, garbled reply: see
:mod:`programs.llm.service_errors`) is recorded with the reason and asked again by the rerun;
after :data:`STOP_AFTER_SERVICE_FAILURES` such failures in a row the run stops (exit 3), since
every further question would fail the same way.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from tqdm import tqdm

from text2sql_dspy.optimize.provenance import code_identity, described
from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.command import (
    EXIT_MODEL_SERVICE_ERROR,
    Command,
    add_view_arguments,
    positive_int,
    view_options,
)
from text2sql_dspy.programs.dataset import is_turn, load_split, per_database, scoring_of
from text2sql_dspy.programs.errors import Text2SQLError
from text2sql_dspy.programs.query.results import Scoring

DEFAULT_OUT = Path("runs") / "latest"
DEFAULT_PROGRAM = "v2"  # the same default as `text2sql ask`
STOP_AFTER_SERVICE_FAILURES = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``text2sql evaluate`` and ``python evaluate.py``."""
    parser.add_argument("--data", default=str(BUNDLED_DATA), help="Spider-format folder (default: the bundled data/)")
    parser.add_argument("--split", default="test", help="split file to evaluate, <data>/<split>.json (default: test)")
    parser.add_argument(
        "--program", action="append", dest="programs",
        help=f"baseline, v1, v2 or a compiled .json; repeat to compare (default: {DEFAULT_PROGRAM})",
    )
    parser.add_argument("--limit", type=positive_int, help="only the first N questions (after --per-database)")
    parser.add_argument("--per-database", type=positive_int, metavar="N",
                        help="only the first N questions of each database (in conversations: its first N "
                        "conversations), so that no one database fills a sample")
    parser.add_argument("--model", help="agent LM (default: TEXT2SQL_MODEL or the embedded local model)")
    parser.add_argument("--judge-model", help="judge LM for v2 (default: TEXT2SQL_JUDGE_MODEL, else the agent's)")
    add_view_arguments(parser)
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="questions answered in parallel (1 for the local model)")
    parser.add_argument("--docs", help="column and table descriptions for every question's database (BIRD, dbt)")
    parser.add_argument("--examples", help="an example store shown to the named programs (compiled ones use their own)")
    parser.add_argument("--carried", metavar="FOLDER",
                        help="solved pairs over other databases, the nearest shown with each question (a folder in "
                        "Spider's layout: train.json and tables.json, e.g. ../shared/benchmarks/spider-train)")
    parser.add_argument("--evidence", choices=["on", "off"], default="on",
                        help="pass each question's evidence (BIRD's hint) to the programs when the data has it "
                             "(default: on)")
    parser.add_argument("--databases", help="the Spider-format folder with the SQLite files when --data holds only "
                        "questions (SParC over Spider: --databases ../shared/benchmarks/spider-public)")
    parser.add_argument("--history", choices=["on", "off"], default="on",
                        help="in conversations (SParC), show each turn the program's own earlier turns (default: on)")
    parser.add_argument("--values", choices=["on", "off"], default="on",
                        help="show the drafting step stored values like the question's words (default: on)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (rerun with the same --out to resume)")


def selected(args: argparse.Namespace) -> list:
    """The questions ``args`` asks for: the split, each database's first ``--per-database``, the first ``--limit``."""
    if not args.per_database:
        return load_split(args.data, args.split, limit=args.limit, databases=args.databases)
    examples = load_split(args.data, args.split, databases=args.databases)
    return [examples[i] for i in per_database(examples, args.per_database)][: args.limit]


def evaluate(args: argparse.Namespace) -> int:
    from text2sql_dspy.optimize.report import summarize, write_report
    from text2sql_dspy.programs.llm.llama_engine import clear_shared_caches

    programs = args.programs or [DEFAULT_PROGRAM]
    examples = selected(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records_file = out / "records.jsonl"
    evidence = args.evidence == "on" and any(str(ex.get("evidence") or "").strip() for ex in examples)
    scoring = scoring_of(args.data, args.split)
    run = {"data": str(Path(args.data).resolve()), "split": args.split, "scoring": scoring.value,
           "scored as": scoring.description}
    if evidence:
        run["evidence"] = "on"
    if args.values == "off":
        run["values"] = "off"
    if args.per_database:
        run["per database"] = args.per_database
    conversations = any(is_turn(ex) for ex in examples)
    history = conversations and args.history == "on"
    if conversations:
        run["history"] = "on" if history else "off"
    if args.docs:
        run["docs"] = str(Path(args.docs).resolve())
    if args.examples:
        run["examples"] = str(Path(args.examples).resolve())
    if args.carried:
        run["carried"] = str(Path(args.carried).resolve())
    _check_resumable(out, run)
    done = load_records(records_file)
    _forget_service_failures(done, records_file)
    _rescore_stale(done, examples, records_file, scoring)
    print(f"{len(examples)} questions from {Path(args.data) / (args.split + '.json')}; programs: {', '.join(programs)}"
          f"; scored as {scoring.description}"
          f"; evidence {'on' if evidence else 'off'}; value lookup {args.values}"
          + (f"; conversation history {'on' if history else 'off'}" if conversations else "")
          + f"; code {described(code_identity())}")
    for spec in programs:
        todo = [(i, ex) for i, ex in enumerate(examples) if (spec, i) not in done]
        if not todo:
            continue
        program = _build(spec, args)
        clear_shared_caches()  # no program may reuse the KV cache another one warmed
        failed_in_a_row = 0
        try:
            answers = (_answer_conversations(program, spec, examples, done, evidence, scoring) if history
                       else _answer_all(program, spec, todo, args.threads, evidence, scoring))
            for record in answers:
                done[(spec, record["index"])] = record
                with records_file.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, default=str) + "\n")
                failed_in_a_row = failed_in_a_row + 1 if record.get("service_failure") else 0
                if failed_in_a_row >= STOP_AFTER_SERVICE_FAILURES:
                    print(f"\nstopped: {failed_in_a_row} questions in a row failed on the model service. "
                          f"{record['error']}\nAnswers so far are kept in {records_file}; "
                          "rerun the same command to resume", file=sys.stderr)
                    return EXIT_MODEL_SERVICE_ERROR
        except KeyboardInterrupt:
            print(f"\ninterrupted: {sum(1 for k in done if k[0] == spec)} answers of {spec} kept in {records_file}; "
                  "rerun the same command to resume", file=sys.stderr)
            return 130
    records = {spec: [done[(spec, i)] for i in range(len(examples)) if (spec, i) in done] for spec in programs}
    summaries = {spec: summarize(rows) for spec, rows in records.items()}
    write_report(out, summaries, records, meta={"data": str(args.data), "split": args.split, "questions": len(examples),
                                                        "scored as": scoring.description,
                                                        "evidence": "on" if evidence else "off",
                                                        "value lookup": args.values,
                                                        **({"history": "on" if history else "off"}
                                                           if conversations else {})})
    print_table(summaries)
    print(f"report and plots: {out / 'report.md'}")
    return 0


def print_table(summaries: dict[str, dict[str, Any]]) -> None:
    """The comparison as a plain-text table: one row per program."""
    print(f"\n{'program':<34} {'exec acc':>9} {'relaxed':>8} {'valid':>6} {'p50 s':>7} {'p95 s':>7} {'judge AUC':>9}")
    for spec, s in summaries.items():
        auc = s.get("judge_auc")
        print(f"{spec:<34} {s['execution_accuracy']:8.1%} {s.get('relaxed_accuracy', 0.0):7.1%} "
              f"{s.get('valid_sql_rate', 0.0):5.0%} {s['latency_p50']:7.1f} {s.get('latency_p95', 0.0):7.1f} "
              f"{'' if auc is None else f'{auc:.2f}':>9}")


def _build(spec: str, args: argparse.Namespace) -> Any:
    from text2sql_dspy.programs.agents.registry import make_program

    program = make_program(
        spec, model_id=args.model, judge_model_id=args.judge_model, examples=args.examples, docs=args.docs,
        lookup_values=args.values == "on", carried=args.carried, **view_options(args),
    )
    _ = program.lm, getattr(program, "judge_lm", None)  # built once here, not raced for by the threads
    return program


def _answer_all(program: Any, spec: str, todo: list, threads: int, evidence: bool = False,
                scoring: Scoring = Scoring.SPIDER):
    """Yield one record per question; with threads > 1 questions run concurrently (order of completion).

    Closing the generator early (a stopped run, Ctrl-C) cancels the questions not yet started and
    waits for those in flight, each bounded by the LM's timeout.
    """
    bar = tqdm(total=len(todo), desc=spec, unit="q")
    try:
        if threads <= 1:
            for index, example in todo:
                yield answer_one(program, spec, index, example, evidence, scoring=scoring)
                bar.update()
        else:
            from concurrent.futures import ThreadPoolExecutor, as_completed

            pool = ThreadPoolExecutor(threads)
            try:
                futures = [pool.submit(answer_one, program, spec, i, ex, evidence, scoring=scoring) for i, ex in todo]
                for future in as_completed(futures):
                    yield future.result()
                    bar.update()
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
    finally:
        bar.close()


def answer_one(program: Any, spec: str, index: int, example: Any, evidence: bool = False,
               history: list | None = None, scoring: Scoring = Scoring.SPIDER) -> dict[str, Any]:
    """Answer and score one question by ``scoring``'s rule (with ``evidence``, its evidence as the hint; in a
    conversation, with the ``history`` of its earlier turns); a failure is recorded, never raised."""
    record: dict[str, Any] = {"program": spec, "index": index, "question": example.question, "db_id": example.db_id,
                              "gold": example.gold_sql, "code": code_identity()}
    if is_turn(example):
        record.update(interaction=example.interaction, turn=example.turn, history_turns=len(history or []))
    hint = str(example.get("evidence") or "") if evidence else ""
    if hint:
        record["hint"] = hint
    try:
        answer = program(question=example.question, db_path=example.db_path, hint=hint, history=history).answer
        record.update(answer.model_dump(mode="json"))
    except Exception as exc:  # one failing question must not abort the run
        from text2sql_dspy.programs.llm.service_errors import describe_lm_failure

        service = describe_lm_failure(exc)
        record.update(sql="", status="failed", error=service or f"{type(exc).__name__}: {exc}",
                      traceback=traceback.format_exc(limit=3))
        if service is not None:
            record["service_failure"] = True  # not an answer: the rerun asks again
    record.update(scored(record.get("sql") or "", example, scoring))
    alternatives = record.get("alternatives") or []
    if len(alternatives) >= 2:  # an unsure answer: is either of the readings it shows right?
        record["alternatives_correct"] = [compare_reading(reading["sql"], example, scoring) for reading in alternatives]
    return record


def answer_of(record: dict[str, Any]) -> Answer | None:
    """The :class:`~..programs.answer.Answer` a record holds (its own fields), or None for a failed question."""
    if record.get("error") or "status" not in record:
        return None
    return Answer.model_validate({key: record[key] for key in Answer.model_fields if key in record})


def compare_reading(query: str, example: Any, scoring: Scoring = Scoring.SPIDER) -> bool:
    return compare_as(query, example, scoring).match


def compare_as(query: str, example: Any, scoring: Scoring = Scoring.SPIDER) -> Any:
    """:func:`~.metrics.compare_execution` of ``query`` with the example's gold query, by ``scoring``'s rule."""
    from text2sql_dspy.optimize.metrics import compare_execution

    return compare_execution(query, example.gold_sql, example.db_path, scoring)


def _answer_conversations(program: Any, spec: str, examples: list, done: dict, evidence: bool = False,
                          scoring: Scoring = Scoring.SPIDER):
    """Yield a record per turn not yet answered, each conversation's turns in order, each with the program's own
    earlier answers in that conversation as its history (answers kept from an earlier run included)."""
    from text2sql_dspy.programs.conversation import Turn

    todo = sum(1 for i in range(len(examples)) if (spec, i) not in done)
    bar = tqdm(total=todo, desc=spec, unit="turn")
    history: dict[Any, list] = {}
    try:
        for index, example in enumerate(examples):
            turns = history.setdefault(example.interaction, [])
            record = done.get((spec, index))
            if record is None:
                record = answer_one(program, spec, index, example, evidence, history=list(turns), scoring=scoring)
                bar.update()
                yield record
            answer = answer_of(record)
            if answer is not None and answer.sql:
                turns.append(Turn.of(answer))
    finally:
        bar.close()


def scored(query: str, example: Any, scoring: Scoring = Scoring.SPIDER) -> dict[str, Any]:
    """A record's execution fields for ``query``, and the comparison version and rule that scored them."""
    from text2sql_dspy.optimize.metrics import COMPARISON_VERSION

    comparison = compare_as(query, example, scoring)
    return {
        "correct": comparison.match,
        "correct_relaxed": comparison.relaxed_match,
        "executes": comparison.pred_error is None,
        "execution_note": comparison.describe(),
        "scored_with": COMPARISON_VERSION,
        "scored_as": scoring.value,
    }


def _forget_service_failures(done: dict[tuple[str, int], dict[str, Any]], records_file: Path) -> None:
    """Drop the records of questions the model service failed, so this run asks them again; rewrite ``records_file``."""
    failed = [key for key, record in done.items() if record.get("service_failure")]
    if not failed:
        return
    for key in failed:
        del done[key]
    records_file.write_text("".join(json.dumps(r, default=str) + "\n" for r in done.values()), encoding="utf-8")
    print(f"{len(failed)} questions the model service failed last time are asked again")


def _rescore_stale(done: dict[tuple[str, int], dict[str, Any]], examples: list, records_file: Path,
                   scoring: Scoring = Scoring.SPIDER) -> None:
    """Score again (no LM call) the records an older execution comparison or another benchmark's rule scored
    (a record without ``scored_as`` was scored by Spider's), and rewrite ``records_file``."""
    from text2sql_dspy.optimize.metrics import COMPARISON_VERSION

    stale = [(index, record) for (_, index), record in done.items()
             if (record.get("scored_with") != COMPARISON_VERSION
                 or record.get("scored_as", Scoring.SPIDER.value) != scoring.value) and index < len(examples)]
    if not stale:
        return
    changed = []
    for index, record in stale:
        before = record.get("correct")
        record.update(scored(record.get("sql") or "", examples[index], scoring))
        alternatives = record.get("alternatives") or []
        if record.get("alternatives_correct") and len(alternatives) >= 2:
            record["alternatives_correct"] = [compare_reading(r["sql"], examples[index], scoring) for r in alternatives]
        if before != record["correct"]:
            changed.append(f"{record['program']} #{index}: {before} -> {record['correct']}")
    records_file.write_text("".join(json.dumps(r, default=str) + "\n" for r in done.values()), encoding="utf-8")
    print(f"{len(stale)} earlier answers scored again by the current execution comparison, as {scoring.description}; "
          f"{len(changed)} now scored otherwise" + ("".join(f"\n  {c}" for c in changed) if changed else ""))


SCORING_KEYS = ("scoring", "scored as")  # in run.json: the rule the run's answers are scored by


def _check_resumable(out: Path, run: dict[str, str]) -> None:
    """Refuse to mix answers from another dataset or split into ``out``.

    A run scored by another rule (a ``run.json`` without one was scored by Spider's) resumes: ``run.json`` is
    rewritten with this run's rule, and :func:`_rescore_stale` scores the kept answers again by it.
    """
    marker = out / "run.json"
    if not marker.is_file():
        marker.write_text(json.dumps(run))
        return
    previous = json.loads(marker.read_text())
    setting = {k: v for k, v in run.items() if k not in SCORING_KEYS}
    before_setting = {k: v for k, v in previous.items() if k not in SCORING_KEYS}
    if before_setting != setting:
        differ = "; ".join(f"{k}: {before_setting.get(k, 'none')} there, {setting.get(k, 'none')} here"
                           for k in sorted({*before_setting, *setting}) if before_setting.get(k) != setting.get(k))
        raise Text2SQLError(
            f"{out} holds a run on {previous.get('data')} ({previous.get('split')}) with other settings ({differ}); "
            "use another --out for this one."
        )
    before = previous.get("scoring", Scoring.SPIDER.value)
    if before != run["scoring"]:
        print(f"{out} was scored as {previous.get('scored as', before)}; its answers are scored again "
              f"as {run['scored as']}")
    if previous != run:
        marker.write_text(json.dumps(run))


def load_records(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The records of ``path`` (``records.jsonl``, or beside it ``records.jsonl.gz`` as committed under
    ``benchmarks/results``) by (program, index); none where neither exists. A line cut short is skipped."""
    done: dict[tuple[str, int], dict[str, Any]] = {}
    packed = path.with_name(path.name + ".gz")
    if path.is_file() or packed.is_file():
        text = path.read_text(encoding="utf-8") if path.is_file() else gzip.decompress(packed.read_bytes()).decode()
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by Ctrl-C
            done[(record["program"], record["index"])] = record
    return done


EVALUATE = Command("evaluate", "evaluate programs side by side on a Spider-format split and write a report",
                   add_arguments, evaluate)
main = EVALUATE.main
