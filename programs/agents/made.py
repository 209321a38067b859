"""Readings the program makes itself from drafts the validator refused, with no model call: each a reading of its
own, with one vote (the drafts voted for a query the database refused, not for this guess) and a warning that says
the program made it, so that it never reads "likely right".

- :func:`regrouped`: a query of one table ranked by an aggregate it has no group for, grouped
  (:func:`~..query.grouping.regrouped_readings`);
- :func:`mended`: a refused query's mechanical repairs (:func:`~..query.repairs.repairs`: a name a character or a
  table away, a table named as a column, an ambiguous column, a column of a table one key away, another dialect's
  syntax).
"""

from __future__ import annotations

from dataclasses import replace

from text2sql_dspy.programs.agents.candidates import Candidate
from text2sql_dspy.programs.agents.record import Record
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.grouping import regrouped_readings
from text2sql_dspy.programs.query.validator import ValidationResult

__all__ = ["REGROUPED", "REPAIR", "mended", "regrouped"]

REPAIR = "repair"  # the generator of a reading :func:`mended` made
REGROUPED = Finding(kind=Kind.REGROUPED, message="grouped by the program, not drafted: the drafts ranked by an "
                    "aggregate with no group to count; check which rows it counts")


def regrouped(record: Record, pool: dict[str, Candidate]) -> list[Candidate]:
    """For each drafted query of one table ranked by an aggregate it has no group for, the first of its readings
    (:func:`~.grouping.regrouped_readings`, ordered by the question's words and the table's values) that checks:
    a reading of its own, with one vote (the drafts voted for a query the database refused, not for this guess)
    and a warning that says so, so that it never reads "likely right"."""
    source = record.source
    run = None if source.database is None else (lambda sql: source.database.execute(
        sql, timeout_s=source.validator.dry_run_timeout_s, max_rows=1).rows)
    readings: list[Candidate] = []
    for rejected in [c for c in pool.values() if c.found(Kind.UNGROUPED_AGGREGATE)]:
        for sql in regrouped_readings(rejected.sql, source.catalog, source.dialect, record.question, run):
            if sql in pool or (check := record.check(sql, made=True)) is None or not check.valid:
                continue
            record.checks[sql] = check = ValidationResult.of([*check.findings, REGROUPED], sql, tables=check.tables)
            record.drafts.setdefault(sql, replace(rejected.draft, sql=sql))
            pool[sql] = Candidate(record.drafts[sql], check, votes=1)
            readings.append(pool[sql])
            record.step("regroup", sql, f"{rejected.sql} grouped")
            break
    return readings


def mended(record: Record, pool: dict[str, Candidate]) -> list[Candidate]:
    """For each drafted query the validator refused, in order, its mechanical repairs (:func:`~..query.repairs.
    repairs`: a name a character or a table away, a table named as a column, an ambiguous column, a column of a
    table one key away, another dialect's syntax) that check: each a reading of its own with one vote and a warning
    that says what the program changed, so that it never reads "likely right". No model call; a redraft comes only
    where none checks."""
    from text2sql_dspy.programs.query.repairs import repairs  # only a question whose every draft was refused needs it

    source, mended = record.source, []
    for rejected in [c for c in list(pool.values()) if c.validation is not None and not c.valid]:
        for repair in repairs(rejected.sql, rejected.validation.findings, source.catalog, source.dialect):
            if repair.sql in pool or (check := record.check(repair.sql, made=True)) is None or not check.valid:
                continue
            changed = "; ".join(repair.changes)
            note = Finding(kind=Kind.REPAIRED, message=f"mended by the program, not drafted: {changed}")
            record.checks[repair.sql] = check = ValidationResult.of([*check.findings, note], repair.sql,
                                                                   tables=check.tables)
            draft = replace(rejected.draft, sql=repair.sql, generator=REPAIR)
            record.drafts.setdefault(repair.sql, draft)
            record.written.setdefault(repair.sql, [REPAIR])
            pool[repair.sql] = Candidate(draft, check, votes=1, generators=[REPAIR])
            mended.append(pool[repair.sql])
            record.step("repair", repair.sql, f"{repair.kind}: {changed}", generator=REPAIR)
    return mended
