"""What one question's answer has gathered: each query checked, run and judged once, within the question's budgets.

A :class:`Record` is made by the agent's ``answer`` for one question and kept by it alone: the repair loop's
tools never see it (they return results, which the agent records). Its methods are the three things the agent
does to a query, each once per distinct query, each leaving a :class:`~..answer.Step`:

- :meth:`Record.check`: the validator's rules (``None`` once :attr:`Limits.max_validation_attempts` are spent by
  the model's queries; a reading the program made itself is checked without spending them);
- :meth:`Record.run`: read-only execution;
- :meth:`Record.judged`: the judge's judgment of what the query returned (``None`` without a judge, once its LM
  failed, or once :attr:`Limits.max_judge_calls` are spent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from text2sql_dspy.programs.agents.drafting import Draft
from text2sql_dspy.programs.agents.ensemble import PROGRAM_MADE
from text2sql_dspy.programs.answer import Preview, Reading, Step
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.query.difference import differences
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.query.results import ExecutionFacts, facts_of
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.signatures import LLMJudgeOutput

__all__ = ["Judge", "Limits", "Record"]

# judge(question=..., sql=..., execution_result=...) -> judgment; raises when the judge's LM fails
Judge = Callable[..., LLMJudgeOutput]


@dataclass(frozen=True)
class Limits:
    """Per-question budgets (the V2 card's configuration defaults)."""

    max_iterations: int = 10
    max_retrieval_calls: int = 3
    max_validation_attempts: int = 4
    max_judge_calls: int = 3


@dataclass
class Record:
    """One question: its inputs, and every check, run and judgment so far, in order."""

    question: str
    source: DataSource
    limits: Limits
    judge: Judge | None = None  # None: V1, structural checks only
    previous: str = ""  # in a conversation, the query of the turn this question follows up on
    hint: str = ""  # the user's hint on what the question's terms mean
    checks: dict[str, ValidationResult] = field(default_factory=dict)  # cleaned query -> its validation, in order
    runs: dict[str, QueryResult] = field(default_factory=dict)
    judgments: list[tuple[str, LLMJudgeOutput]] = field(default_factory=list)  # (query, the judge's output), in order
    votes: dict[str, int] = field(default_factory=dict)  # query -> drafts that wrote it (V2: or its result)
    drafts: dict[str, Draft] = field(default_factory=dict)  # query -> the first draft that wrote it
    written: dict[str, list[str]] = field(default_factory=dict)  # query -> the generators behind it, in order (V2: or
    # behind its result)
    by_generator: dict[str, dict[str, float]] = field(default_factory=dict)  # generator -> drafts, seconds
    steps: list[Step] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    judge_calls: int = 0
    judge_errors: list[str] = field(default_factory=list)
    redrafts: int = 0
    made: int = 0  # checks of readings the program made itself (not the model's attempts): outside the budget
    retrievals: int = 1  # the prompt's tables are the question's first retrieval
    repair_steps: int = 0
    draft_confidence: float = 0.5  # the latest greedy draft's own token confidence

    @property
    def ran(self) -> list[str]:
        """The generators that drafted for the question, in order (not the readings the program made itself:
        :data:`~.ensemble.PROGRAM_MADE`)."""
        return [g for g in self.by_generator if g not in PROGRAM_MADE]

    def step(self, kind: str, sql: str = "", note: str = "", thought: str = "", generator: str = "") -> None:
        self.steps.append(Step(kind=kind, sql=sql, note=note, thought=thought, generator=generator))

    def wrote(self, draft: Draft, kind: str = "draft") -> None:
        """Record a drafting call: its step, its generator's cost, and its query as the generator's."""
        self.step(kind, draft.sql, draft.error or f"confidence {draft.confidence:.2f}", generator=draft.generator)
        spent = self.by_generator.setdefault(draft.generator, {"drafts": 0, "seconds": 0.0})
        spent["drafts"] += 1
        spent["seconds"] = round(spent["seconds"] + draft.seconds, 3)
        if draft.sql:
            self.drafts.setdefault(draft.sql, draft)
            behind = self.written.setdefault(draft.sql, [])
            if draft.generator not in behind:
                behind.append(draft.generator)

    @property
    def attempts_left(self) -> int:
        """Validation attempts the model's queries may still spend (:attr:`Limits.max_validation_attempts`)."""
        return self.limits.max_validation_attempts - (len(self.checks) - self.made)

    def check(self, sql: str, *, made: bool = False) -> ValidationResult | None:
        """The validation of ``sql`` (cleaned): kept from before, else checked now; None when the budget is spent.
        ``made``: a reading the program made itself, checked without spending the model's attempts (so that a
        redraft after it is still checked)."""
        sql = clean_sql(sql)
        if sql in self.checks:
            return self.checks[sql]
        if not made and self.attempts_left <= 0:
            return None
        emit("checking", sql=sql)
        result = self.source.validator.validate(sql, question=self.question, previous=self.previous,
                                                 hint=self.hint)
        self.made += made
        self.keep(result, sql)
        self.step("check", sql, result.render())
        return result

    def keep(self, result: ValidationResult, sql: str | None = None) -> None:
        """Record the validation of ``sql`` (default: the query it checked), made here or by the repair loop's tool."""
        self.checks.setdefault(result.sql if sql is None else sql, result)

    def run(self, sql: str) -> QueryResult:
        """``sql``'s result, read-only, once per question."""
        if sql not in self.runs:
            emit("running", sql=sql)
            database = self.source.database
            self.runs[sql] = (database.execute(sql) if database is not None
                              else QueryResult(error="no database to run the query on"))
            self.step("run", sql, facts_of(self.runs[sql]).render())
        return self.runs[sql]

    def facts(self, sql: str) -> ExecutionFacts:
        return facts_of(self.run(sql))

    @property
    def judge_available(self) -> bool:
        return self.judge is not None and not self.judge_errors

    def judged(self, sql: str) -> LLMJudgeOutput | None:
        """The judge's judgment of ``sql``, a query that validated: one call, recorded; None when there is no judge,
        its LM failed (recorded in :attr:`judge_errors`: the agent carries on as V1), or its budget is spent."""
        sql = clean_sql(sql)
        check = self.checks.get(sql)
        if check is None or not check.valid or not self.judge_available:
            return None
        if self.judge_calls >= self.limits.max_judge_calls:
            return None
        self.judge_calls += 1
        try:
            judgment = self.judge(question=self.question, sql=sql, execution_result=self.facts(sql).render())
        except Exception as exc:  # any failure of the judge's LM degrades V2 to V1, recorded in the answer
            self.judge_errors.append(f"{type(exc).__name__}: {exc}")
            return None
        self.keep_judgment(sql, judgment)
        return judgment

    def keep_judgment(self, sql: str, judgment: LLMJudgeOutput, *, step: bool = True) -> None:
        """Record a judgment, made here or by the repair loop's tool (whose own step shows it)."""
        self.judgments.append((sql, judgment))
        if step:
            issues = "; ".join(judgment.issues)
            note = f"P(right) {judgment.correctness_score:.2f}" + (f": {issues}" if issues else "")
            self.step("judge", sql, note + (f"\n{judgment.reasoning}" if judgment.reasoning else ""))

    def judgment_of(self, sql: str) -> LLMJudgeOutput | None:
        """The latest judgment of exactly this query, if any."""
        return next((j for q, j in reversed(self.judgments) if q == sql), None)

    def reading(self, sql: str, *, votes: int | None = None, chosen: bool = False,
                generators: list[str] | None = None) -> Reading:
        """What the record holds on ``sql``, a query it checked: its votes and generators (given: a result group's),
        its draft's token probabilities, its findings, its judgment and the first rows it returned where it ran."""
        check, judgment, result = self.checks[sql], self.judgment_of(sql), self.runs.get(sql)
        draft = self.drafts.get(sql)
        return Reading(
            sql=sql, chosen=chosen, votes=self.votes.get(sql, 1) if votes is None else votes, valid=check.valid,
            confidence=None if draft is None else draft.confidence, weakest=None if draft is None else draft.weakest,
            tokens=0 if draft is None else draft.tokens, doubts=0 if draft is None else draft.doubts,
            margin=None if draft is None else draft.margin, findings=list(check.findings),
            judge_score=None if judgment is None else judgment.correctness_score,
            generator="" if draft is None else draft.generator,
            generators=list(self.written.get(sql, []) if generators is None else generators),
            preview=None if result is None else Preview.of(result),
        )

    def readings(self, chosen: str, alternatives: list[str]) -> list[Reading]:
        """Every distinct query the validator saw, in order (:meth:`reading`); the two ``alternatives`` each with
        what it does that the other does not."""
        one, two = differences(*alternatives[:2], self.source.dialect) if len(alternatives) >= 2 else ([], [])
        return [self.reading(sql, chosen=sql == chosen).model_copy(
            update={"difference": one if alternatives[:1] == [sql] else two if alternatives[1:2] == [sql] else []})
            for sql in self.checks]
