"""The :class:`~..answer.Answer` a question's :class:`~.record.Record` ends in: the chosen query submitted
(:func:`submitted`), or no query (:func:`no_answer`: the best validated one so far, else the reading closest to
passing, unrun)."""

from __future__ import annotations

from text2sql_dspy.programs.agents.base import ESTIMATED
from text2sql_dspy.programs.agents.candidates import Candidate, combined_confidence
from text2sql_dspy.programs.agents.record import Record
from text2sql_dspy.programs.agents.verifier import Verifier
from text2sql_dspy.programs.answer import Answer, Metrics, Status
from text2sql_dspy.programs.query.describe import describe_query
from text2sql_dspy.programs.query.difference import changes

__all__ = ["BEST_EFFORT_CAP", "UNSURE_REASON", "closest_reading", "metrics_of", "no_answer", "submitted"]

UNSURE_REASON = "two readings give different results and the checks support both about as much"
BEST_EFFORT_CAP = 0.3  # the confidence of a query the agent validated but did not submit


def submitted(record: Record, best: Candidate, drafts: int, verifier: Verifier | None,
              alternatives: list[str] | None = None, agreement: float | None = None) -> Answer:
    """The answer with ``best``'s query, a valid one: its confidence blends the draft's and the judge's."""
    sql = best.sql
    judge_score = None
    if record.judge is not None:
        judgment = record.judgment_of(sql) or (record.judged(sql) if best.p is None else None)
        judge_score = None if judgment is None else judgment.correctness_score
    alternatives = alternatives if alternatives and sql in alternatives else []
    reason = UNSURE_REASON if len(alternatives) >= 2 else ""
    if record.judge_errors:
        failed = f"the judge failed ({record.judge_errors[0]}); answered without it"
        reason = "; ".join(p for p in (reason, failed) if p)
    readings = record.readings(sql, alternatives)
    by_sql = {r.sql: r for r in readings}
    confidence = combined_confidence(best.draft.confidence, True, judge_score) if best.p is None else best.p
    chosen = by_sql[sql]
    inputs = (verifier.inputs(early=best.early, follow_up=bool(record.previous), noted=bool(chosen.warnings),
                              valid=chosen.valid) if best.p is not None and verifier is not None else None)
    explanation = describe_query(sql, record.source.dialect)
    if record.previous and (changed := changes(record.previous, sql, record.source.dialect)):
        explanation = f"{explanation} Against the query before: {changed}."
    return Answer(
        question=record.question, sql=sql, explanation=explanation,
        status=Status.UNSURE if len(alternatives) >= 2 else Status.ANSWERED, reason=reason,
        confidence=confidence, judge_score=judge_score, verdict_inputs=inputs, basis=ESTIMATED if inputs else "",
        drafts=drafts, agreement=agreement, tables=record.tables, readings=readings,
        alternatives=[by_sql[q] for q in alternatives if q in by_sql], steps=record.steps, metrics=metrics_of(record),
    )


def metrics_of(record: Record) -> Metrics:
    """What the question's answer cost, as far as the record counts it (usage and latency: the caller's)."""
    return Metrics(validations=len(record.checks), judge_calls=record.judge_calls, redrafts=record.redrafts,
                   repair_steps=record.repair_steps, retrievals=record.retrievals, judge_errors=record.judge_errors,
                   by_generator=record.by_generator)


def closest_reading(record: Record) -> str:
    """Of the queries that failed validation, the one with the fewest errors (the latest among equals): where nothing
    passed, the answer keeps it, unrun, for a person to correct; "" where the validator saw none."""
    failed = [(len(check.errors), n, sql) for n, (sql, check) in enumerate(record.checks.items()) if sql]
    return min(failed, key=lambda f: (f[0], -f[1]))[2] if failed else ""


def no_answer(record: Record, reason: str | None, drafts: int, verifier: Verifier | None = None) -> Answer:
    """No query submitted: the best validated one so far (with a judge: the best judged), with confidence at most
    :data:`BEST_EFFORT_CAP` (with a ``verifier``: its probability so capped, worded as a query not submitted: never
    "likely right"); with none, no query at all, and the last one's findings as the reason (with a ``verifier``:
    worded as a query that failed validation: "likely wrong")."""
    valid = [sql for sql, check in record.checks.items() if check.valid]
    metrics = metrics_of(record)
    if not valid:  # the findings say why; ``reason`` (where a repair loop ran) says what it did
        last = list(record.checks.values())[-1] if record.checks else None
        refused = last is not None and last.dangerous
        closest = "" if refused else closest_reading(record)
        check = record.checks[closest] if closest else last
        findings = "; ".join(check.errors) if check is not None and check.errors else ""
        reason = (f"{'refused, the draft is not a read-only query: ' if refused else ''}no query passed the validator"
                  + (f" ({findings})" if findings else "") + (f"; {reason}" if reason else ""))
        return Answer(question=record.question, status=Status.REFUSED if refused else Status.FAILED, reason=reason,
                      drafts=drafts, tables=record.tables, readings=record.readings(closest, []), steps=record.steps,
                      metrics=metrics, basis=ESTIMATED if verifier is not None else "",
                      verdict_inputs=None if verifier is None else verifier.inputs(
                          follow_up=bool(record.previous), valid=False, submitted=False))
    judged = [(sql, j) for sql, j in record.judgments if sql in valid]
    sql, judgment = max(judged, key=lambda pair: pair[1].correctness_score) if judged else (valid[-1], None)
    judge_score = None if judgment is None else judgment.correctness_score
    confidence = min(BEST_EFFORT_CAP, combined_confidence(record.draft_confidence, True, judge_score))
    inputs = None
    if verifier is not None:
        record.run(sql)
        reading = record.reading(sql)
        probability = verifier.probability(reading, record.question, drafts=drafts, groups=len(valid),
                                           previous=record.previous)
        confidence = min(BEST_EFFORT_CAP, probability)
        inputs = verifier.inputs(follow_up=bool(record.previous), noted=bool(reading.warnings), submitted=False)
    return Answer(
        question=record.question, sql=sql, explanation="Best effort: the agent did not submit an answer.",
        status=Status.ANSWERED, reason=reason or "the agent did not submit an answer", confidence=confidence,
        judge_score=judge_score, verdict_inputs=inputs,
        basis=ESTIMATED if inputs else "", drafts=drafts, tables=record.tables, readings=record.readings(sql, []),
        steps=record.steps, metrics=metrics,
    )
