#!/usr/bin/env python
"""Answer a training split with V2 drawing every reading it could weigh, and keep each reading with whether it is
right: the data the verifier (``programs/agents/verifier.py``) is fitted on.

    python -m text2sql_dspy.optimize.collect --data ../shared/benchmarks/spider-train --split train \
        --per-database 15 --out benchmarks/results/verifier-data/spider-train.jsonl.gz
    python -m text2sql_dspy.optimize.collect --data ../shared/benchmarks/cosql-train --split train \
        --databases ../shared/benchmarks/spider-train --per-database 5 \
        --out benchmarks/results/verifier-data/cosql-train.jsonl.gz
    python -m text2sql_dspy.optimize.fit_verifier benchmarks/results/verifier-data/*.jsonl.gz \
        --data-root ../shared/benchmarks/spider-train --out programs/agents/verifier.json

The program is V2 without the verifier (:func:`build_program`), so nothing the verifier learned decides what is
drawn: it samples whatever its first draft's confidence (``sample_below`` above 1, until the majority result is
settled, as V2 does) and judges every result group, with one judge call left for a redraft. Each question so leaves
every reading, and every verdict, that V2 could weigh. A follow-up of a conversation (SParC or CoSQL format: one
example a turn) is answered with the program's own earlier answers in its conversation as history, so its readings
include the edit of the query before it and the draft of the question rewritten to stand alone.

One line a question (a turn): its ``index`` in the split, ``db_id``, the ``gold`` SQL, the ``scoring`` rule, the
:class:`~text2sql_dspy.programs.answer.Answer` as JSON, for each of its readings whether it returns the gold query's
rows (``readings_correct``) and whether the answer does (``correct``); ``interaction`` and ``turn`` for a turn. A
question whose run raised is a line with its ``error`` and a failed answer with no readings. ``--out`` is JSONL,
gzip-compressed where it ends with ``.gz``; rerun with the same ``--out`` to resume (a question the model service
failed is asked again). ``--databases``: the Spider-format folder holding the SQLite files (``database/<db_id>/``)
when ``--data`` holds only questions. ``--per-database N --shuffled`` takes each database's first N questions
(conversations) in a fixed shuffled order of its own rather than the split's, whose first questions are the easy ones;
a rerun with a larger N keeps those and adds others. Use only splits that are no one's dev or test set.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import traceback
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

from text2sql_dspy.optimize.collected import refuse_held_out
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.agents.ensemble import MODEL_GENERATORS, Ensemble
from text2sql_dspy.programs.agents.react import ReActAgentV2
from text2sql_dspy.programs.answer import Answer, Status
from text2sql_dspy.programs.command import EXIT_MODEL_SERVICE_ERROR, positive_int
from text2sql_dspy.programs.conversation import Turn
from text2sql_dspy.programs.dataset import is_turn, load_split, scoring_of
from text2sql_dspy.programs.dataset import per_database as first_per_database  # `per_database` names the option here
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.query.results import Scoring, same_result

SAMPLE_ALWAYS = 1.01  # above any draft's confidence: the first draft is never sure enough alone
NEVER_SETTLED = 1.01  # above any probability: no answer stops the generators early
JUDGE_CALLS = 4  # one verdict for each result group of V2's three drafts, and one for a redraft
STOP_AFTER_SERVICE_FAILURES = 3  # in a row: the model service is down, and every further question would fail


def build_program(lm: Any = None, generators: tuple[str, ...] | None = None, **options: Any) -> ReActAgentV2:
    """V2 as ``text2sql evaluate --program v2`` builds it, less the verifier, sampling always and judging every
    result group: its answers' readings are every one V2 could weigh, each group's with its verdict. ``lm``: the
    agent's and the judge's LM (default: the environment's, as for any program). ``generators``: each of these
    generators once, in this order (a name twice: twice), whatever the first draft's results, and no judge (it
    weighs nothing in a verifier for the embedded model); ``carried`` and ``carried_turns`` give the ``pairs``
    generator its pools."""
    from text2sql_dspy.programs.agents.registry import make_program

    if generators:
        ensemble = Ensemble(order=generators, budget=len(generators), stop=NEVER_SETTLED)
        return make_program("v2", lm=lm, judge_lm=lm, verifier=False, sample_below=SAMPLE_ALWAYS, max_judge_calls=0,
                            ensemble=ensemble, **options)
    return make_program("v2", lm=lm, judge_lm=lm, verifier=False, sample_below=SAMPLE_ALWAYS,
                        max_judge_calls=JUDGE_CALLS, ensemble=Ensemble(), **options)


def selected(examples: list, per_database: int | None = None, *, shuffled: bool = False) -> list[tuple[int, Any]]:
    """Each example with its index in ``examples``, in order; with ``per_database``, only those
    :func:`~text2sql_dspy.programs.dataset.per_database` keeps."""
    if per_database is None:
        return list(enumerate(examples))
    return [(index, examples[index]) for index in first_per_database(examples, per_database, shuffled=shuffled)]


def plan(chosen: list[tuple[int, Any]], done: dict[int, dict]) -> str:
    """What the run collects, in one line: questions (turns and conversations), databases, how many are done."""
    examples = [example for _, example in chosen]
    databases = len({e.db_id for e in examples})
    turns = [e for e in examples if is_turn(e)]
    what = (f"{len(examples)} turns of {len({e.interaction for e in turns})} conversations" if turns
            else f"{len(examples)} questions")
    finished = sum(1 for index, _ in chosen if index in done)
    return f"collecting {what} over {databases} databases; {finished} done before, {len(examples) - finished} to do"


def opened(path: Path, mode: str) -> IO[str]:
    """``path`` as text in ``mode`` (``"rt"``, ``"at"`` or ``"wt"``): gzip where its name ends with ``.gz``."""
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")
    return path.open(mode[0], encoding="utf-8")


def read_records(path: Path) -> tuple[dict[int, dict], bool]:
    """The records in ``path`` by index (the last of each index), less those the model service failed; and whether
    the file holds exactly those (False: a line cut short, a repeated index or a service failure, to be written
    again by :func:`write_records`). A missing file holds none."""
    if not path.is_file():
        return {}, True
    text, whole = gunzipped(path.read_bytes()) if path.suffix == ".gz" else (path.read_text(encoding="utf-8"), True)
    lines = text.splitlines(keepends=True)
    records: dict[int, dict] = {}
    for line in lines:
        record = parsed(line)
        if record is not None:
            records[record["index"]] = record
    kept = {index: record for index, record in records.items() if not record.get("service_failure")}
    return kept, whole and len(kept) == len(lines)


def gunzipped(data: bytes) -> tuple[str, bool]:
    """The text of gzip members ``data``, as far as it can be read, and whether all of it could (False: the last
    member cut short by a killed run, or garbled)."""
    text, whole = [], True
    while data and whole:
        member = zlib.decompressobj(wbits=31)  # one gzip member
        try:
            text.append(member.decompress(data))
        except zlib.error:
            whole = False
        whole = whole and member.eof
        data = member.unused_data
    return b"".join(text).decode("utf-8", errors="replace"), whole


def parsed(line: str) -> dict | None:
    """A whole line's record; None for a line cut short (no newline), blank or garbled."""
    try:
        return json.loads(line) if line.endswith("\n") and line.strip() else None
    except json.JSONDecodeError:
        return None


def write_records(path: Path, records: dict[int, dict]) -> None:
    """Replace ``path`` with ``records``, one line each, in index order."""
    tmp = path.with_name(f"{path.stem}.tmp{path.suffix}")  # compressed as ``path`` is
    with opened(tmp, "wt") as fh:
        fh.writelines(json.dumps(records[index]) + "\n" for index in sorted(records))
    tmp.replace(path)


def append(path: Path, record: dict) -> None:
    """Add ``record`` as one line to ``path`` (to a ``.gz`` file as a gzip member of its own)."""
    with opened(path, "at") as fh:
        fh.write(json.dumps(record) + "\n")


def check_same_data(done: dict[int, dict], examples: list, out: Path) -> None:
    """Refuse to resume ``out`` when it holds answers to other questions than ``examples`` at the same indexes."""
    other = [i for i, record in done.items() if i < len(examples) and record.get("gold") != examples[i].gold_sql]
    if other:
        raise ConfigurationError(f"{out} holds answers to another split (index {other[0]} has another gold query); "
                                 "use another --out for this one.")


def is_right(sql: str, example: Any, scoring: Scoring) -> bool:
    """Whether ``sql`` returns the example's gold rows, by ``scoring``'s rule (no query: not right)."""
    return bool(sql) and compare_execution(sql, example.gold_sql, example.db_path, scoring).match


def result_groups(queries: list[str], db_path: Any) -> list[int | None]:
    """For each of ``queries``, the number of its result group (queries whose results are the same, by the one notion
    of it: :func:`~text2sql_dspy.programs.query.results.same_result`), numbered by first appearance; None for one that
    did not run."""
    from text2sql_dspy.programs.source import open_source

    database = open_source(db_path).database
    results = [database.execute(sql) for sql in queries]
    groups: list[int | None] = []
    firsts: list[int] = []
    for i, result in enumerate(results):
        if not result.ok:
            groups.append(None)
            continue
        group = next((n for n, j in enumerate(firsts) if same_result(results[j], result)), None)
        if group is None:
            firsts.append(i)
            group = len(firsts) - 1
        groups.append(group)
    return groups


def collected(program: Any, index: int, example: Any, history: list[Turn], scoring: Scoring) -> dict[str, Any]:
    """One question's line: the program's answer (with ``history``, the turns before it) and which of its readings
    are right. A question whose run raises gives a line with the error and a failed answer, never an exception."""
    record: dict[str, Any] = {"index": index, "db_id": example.db_id, "question": example.question,
                              "gold": example.gold_sql, "scoring": scoring.value}
    if is_turn(example):
        record.update(interaction=example.interaction, turn=example.turn, history_turns=len(history))
    try:
        answer = program.run(example.question, example.db_path, hint=str(example.get("evidence") or ""),
                             history=history or None)
        record.update(answer=answer.model_dump(mode="json"),
                      readings_correct=[is_right(r.sql, example, scoring) for r in answer.readings],
                      correct=is_right(answer.sql, example, scoring),
                      result_groups=result_groups([r.sql for r in answer.readings], example.db_path))
    except Exception as exc:  # one failing question must not end the run
        from text2sql_dspy.programs.llm.service_errors import describe_lm_failure

        service = describe_lm_failure(exc)
        error = service or f"{type(exc).__name__}: {exc}"
        failed = Answer(question=example.question, status=Status.FAILED, reason=error)
        record.update(answer=failed.model_dump(mode="json"), readings_correct=[], correct=False, error=error,
                      traceback=traceback.format_exc(limit=3))
        if service is not None:
            record["service_failure"] = True  # not an answer: the next run asks again
    return record


def answers(program: Any, chosen: list[tuple[int, Any]], done: dict[int, dict], scoring: Scoring
            ) -> Iterator[dict[str, Any]]:
    """A line for each chosen question not ``done``, in order; each turn of a conversation with the program's own
    earlier answers in it (those ``done`` before included) as its history. A turn without a query adds none."""
    histories: dict[Any, list[Turn]] = {}
    for index, example in chosen:
        turns = histories.setdefault(example.interaction, []) if is_turn(example) else []
        record = done.get(index)
        if record is None:
            record = collected(program, index, example, list(turns), scoring)
            yield record
        if is_turn(example) and not record.get("error") and (record.get("answer") or {}).get("sql"):
            turns.append(Turn.of(Answer.model_validate(record["answer"])))


def collect(program: Any, chosen: list[tuple[int, Any]], out: Path, scoring: Scoring,
            done: dict[int, dict] | None = None) -> int:
    """Answer the chosen questions not ``done`` and append a line for each to ``out`` as it finishes; the exit
    status: 0, or :data:`EXIT_MODEL_SERVICE_ERROR` after that many service failures in a row, 130 on Ctrl-C."""
    done = done or {}
    bar = tqdm(total=sum(1 for index, _ in chosen if index not in done), desc=out.name, unit="q")
    failures = 0
    try:
        for record in answers(program, chosen, done, scoring):
            append(out, record)
            bar.update()
            failures = failures + 1 if record.get("service_failure") else 0
            if failures >= STOP_AFTER_SERVICE_FAILURES:
                print(f"\nstopped: {failures} questions in a row failed on the model service. {record['error']}\n"
                      "rerun the same command to resume", file=sys.stderr)
                return EXIT_MODEL_SERVICE_ERROR
    except KeyboardInterrupt:
        print(f"\ninterrupted: the answers so far are kept in {out}; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        bar.close()
    return 0


def main(argv: list[str] | None = None, *, program: Any = None) -> int:
    """The command; ``program`` answers instead of :func:`build_program`'s (a test's, on a scripted LM)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a Spider-format folder (SParC and CoSQL format too)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--databases", help="the Spider-format folder holding the databases, where --data does not")
    parser.add_argument("--limit", type=positive_int, help="only the first N questions (turns) of the split")
    parser.add_argument("--per-database", type=positive_int,
                        help="only the first N questions (conversations) of each database")
    parser.add_argument("--shuffled", action="store_true",
                        help="with --per-database: each database's first N in a fixed shuffled order, not the split's")
    parser.add_argument("--out", type=Path, required=True, help="JSONL to write or resume; gzip where it ends .gz")
    parser.add_argument("--generators", type=generator_names,
                        help="every one of these generators, in this order, for every question, and no judge "
                             f"(comma-separated, of {', '.join(MODEL_GENERATORS)}; a name twice: twice)")
    parser.add_argument("--carried", metavar="FOLDER", help="the pairs generator's pool for first questions: a "
                        "Spider-format folder of other databases (spider-train)")
    parser.add_argument("--carried-turns", metavar="FOLDER", help="its pool for follow-ups: a CoSQL- or "
                        "SParC-format folder of other databases' conversations (cosql-train)")
    parser.add_argument("--tables", help="the tables file for --carried-turns, where its folder has none")
    args = parser.parse_args(argv)
    refuse_held_out([args.data, f"{args.data}/{args.split}"])
    examples = load_split(args.data, args.split, limit=args.limit, databases=args.databases)
    chosen = selected(examples, args.per_database, shuffled=args.shuffled)
    done, whole = read_records(args.out)
    check_same_data(done, examples, args.out)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not whole:
        write_records(args.out, done)
    print(plan(chosen, done))
    if program is None:
        from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

        turns = CarriedPairs.from_split(args.carried_turns, tables=args.tables) if args.carried_turns else None
        program = build_program(generators=args.generators, carried=args.carried, carried_turns=turns)
    return collect(program, chosen, args.out, scoring_of(args.data, args.split), done)


def generator_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in MODEL_GENERATORS]
    if unknown or not names or names[0] != "draft":
        raise argparse.ArgumentTypeError(f"give generators of {', '.join(MODEL_GENERATORS)}, draft first "
                                         f"(unknown: {', '.join(unknown) or 'none'})")
    return names


if __name__ == "__main__":
    raise SystemExit(main())
