"""The ReAct agents. V1 checks structure; V2 is V1 with a judge on its own LM that reads each query's result.

A question takes one path. The opening's fixed moves call the tools (:class:`~.tools.Tools`) as
Python and record each call as a ReAct step (:func:`~.trajectory.call_step`):

1. draft the query (V2, when the draft's own token confidence is low: sample more candidates,
   stopping early once the majority result is settled);
2. validate each distinct draft; if none is valid, redraft once from the validator's findings;
3. V2: run the valid ones read-only, group them by result (:func:`~..db.results.same_result`),
   and let the judge score one query per group; choose by judge probability and agreement; a
   chosen query that errs, returns nothing (or only NULLs) or shows a symptom (:attr:`Candidate.symptoms`)
   is redrafted once from those facts;
4. submit.

When the opening finds no valid query, :class:`~.repair.RepairAgent` (a ``dspy.ReAct``) takes
over with the steps so far as its trajectory. A malformed reply never crashes a call: the best
validated query so far is returned with low confidence and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.answer import Preview, Reading
from text2sql_dspy.programs.agents.drafting import Draft, draft_sql
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.repair import RepairAgent, step_limit_reached
from text2sql_dspy.programs.agents.state import AgentState, Limits
from text2sql_dspy.programs.agents.tools import Tools, combined_confidence
from text2sql_dspy.programs.agents.trajectory import call_step, reasoning_steps
from text2sql_dspy.programs.query.describe import describe_query
from text2sql_dspy.programs.query.difference import differences
from text2sql_dspy.programs.query.literals import MISSING_VALUE
from text2sql_dspy.programs.query.query_warnings import SHOWS_KEY
from text2sql_dspy.programs.query.results import same_result
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.programs.retrieval.schema_view import SchemaView
from text2sql_dspy.signatures import DraftSQL, JudgeSQL, LLMJudgeOutput

__all__ = ["ReActAgent", "ReActAgentV2"]

SAMPLE_TEMPERATURE = 0.7
DEFAULT_REPAIR_STEPS = 3  # ReAct steps on a served or hosted model (see ReActAgent.max_repair_steps)
SYMPTOM_PENALTY = 0.3  # more than a full vote share of three drafts' difference (0.5 / 3 each)
UNJUDGED_SCORE = 0.25  # a group the judge budget did not reach: below any neutral verdict
UNSURE_MARGIN = 0.1  # two judged results whose choice scores are this close: the user is shown both


@dataclass
class Candidate:
    """A distinct drafted query: its draft, its validation, how many drafts wrote it (or its result), its verdict."""

    draft: Draft
    validation: ValidationResult | None = None
    votes: int = 1
    verdict: LLMJudgeOutput | None = None

    @property
    def sql(self) -> str:
        return self.draft.sql

    @property
    def valid(self) -> bool:
        return isinstance(self.validation, ValidationResult) and self.validation.valid

    @property
    def missing_values(self) -> list[str]:
        """The validator's findings of literals the database does not hold (:mod:`~..db.literals`)."""
        warnings = self.validation.warnings if isinstance(self.validation, ValidationResult) else []
        return [w for w in warnings if MISSING_VALUE in w]

    @property
    def symptoms(self) -> list[str]:
        """Findings that the result cannot be what was asked: a literal the column does not hold, a key shown
        where the question asks for no id (:func:`~..db.query_warnings.keys_shown`)."""
        warnings = self.validation.warnings if isinstance(self.validation, ValidationResult) else []
        return [w for w in warnings if MISSING_VALUE in w or SHOWS_KEY in w]


class ReActAgent(Text2SQLProgram):
    """Draft, validate, repair, submit; with ``judge=True`` (or as :class:`ReActAgentV2`), also judge results.

    ``run(question)`` returns ``query``, ``explanation``, ``confidence``, ``judge_score`` (None
    without a judge), ``reasoning_steps`` and the per-question metrics; ``forward`` returns the
    same as a ``dspy.Prediction``. Sub-predictors, for optimizers: ``draft``, ``judge`` (with a
    judge) and ``agent`` (the repair ReAct's ``react`` and ``extract``), the last only where the repair loop
    takes steps (:attr:`max_repair_steps`): a program for the embedded model neither builds nor saves it.
    """

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        judge: bool = False,
        judge_model_id: str | None = None,
        judge_lm: dspy.LM | None = None,
        max_judge_calls: int = 3,
        candidates: int | None = None,
        sample_below: float = 0.9,
        max_iterations: int = 10,
        max_retrieval_calls: int = 3,
        max_validation_attempts: int = 4,
        max_repair_steps: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(db_path, **kwargs)
        self.limits = Limits(max_iterations, max_retrieval_calls, max_validation_attempts, max_judge_calls if judge else 0)
        self.candidates = max(1, candidates if candidates is not None else (3 if judge else 1))
        self.sample_below = sample_below
        self.judge_model_id = judge_model_id
        self._judge_lm = judge_lm
        self._max_repair_steps = max_repair_steps
        self.draft = dspy.Predict(DraftSQL)
        self.judge = dspy.Predict(JudgeSQL) if judge else None
        self.agent = self._repair_agent() if repairs(self.model_id, self._lm, max_repair_steps) else None

    @property
    def judge_lm(self) -> dspy.LM:
        """The judge's LM: the one given, else ``judge_model_id`` or the judge's environment variables,
        else the agent's own LM (one shared model when both are local)."""
        if self._judge_lm is None:
            from text2sql_dspy.programs.llm.factory import build_lm, judge_model_from_env, resolve_model_name

            judge_name = self.judge_model_id or judge_model_from_env()  # None: the agent's model, whatever named it
            same_as_agent = judge_name is None or (
                self.judge_model_id is None and judge_name == resolve_model_name(self.model_id))
            self._judge_lm = self.lm if same_as_agent else build_lm(judge_name, role="judge")
        return self._judge_lm

    @property
    def max_repair_steps(self) -> int:
        """ReAct steps after the opening found no valid query: as given, else 0 on the embedded model, 3 on others.

        On the embedded model a ReAct step is slow and rarely repairs anything (see docs/how-it-works.md).
        """
        if self._max_repair_steps is not None:
            return self._max_repair_steps
        from text2sql_dspy.programs.llm.factory import is_embedded_model

        return 0 if is_embedded_model(self.lm) else DEFAULT_REPAIR_STEPS

    def load_state(self, state: dict[str, Any], **kwargs: Any) -> None:
        """Load a saved program. One saved where the repair loop takes steps carries its predictors (built here if
        this program has none yet); one saved for the embedded model does not, and this program keeps its own."""
        saved = any(name.startswith("agent.") for name in state)
        if saved and self.agent is None:
            self.agent = self._repair_agent()
        elif not saved and self.agent is not None:
            state = {**state, **{k: v for k, v in self.dump_state().items() if k.startswith("agent.")}}
        super().load_state(state, **kwargs)

    def _repair_agent(self) -> RepairAgent:
        return RepairAgent(DraftSQL, with_judge=self.judge is not None, max_iters=self.limits.max_iterations)

    def _repair(self, state: AgentState, trajectory: dict[str, Any], question: str, view: SchemaView) -> str | None:
        """The ReAct loop from the opening's steps, where this model takes any; why it ended without an answer."""
        steps = self.max_repair_steps
        if steps <= 0:
            return step_limit_reached(steps)
        if self.agent is None:  # an LM set after the program was built (dspy.configure) that takes repair steps
            self.agent = self._repair_agent()
        return self.agent(state=state, trajectory=trajectory, max_steps=steps, question=question,
                          table_schemas=view.text, facts=view.facts, hints="").stop_reason

    def answer(self, question: str, source: DataSource, hint: str = "", history: str = "") -> dict[str, Any]:
        judge = None
        if self.judge is not None:  # a misconfigured judge (bad model string, missing key) fails here, not later
            judge = partial(judge_sql, self.judge, self.judge_lm, explain=False)  # the verdict alone
            if hint or history:  # the judge reads the question as the drafts did: in its conversation, with its hint
                judge = partial(_in_context, judge, history, hint)
        view = self.schema(source, question, hint, history)
        state = AgentState(question, source, self.limits, judge, self.retrieval_type, self.top_k)
        state.retrieval_calls, trajectory = 1, {}  # the prompt's tables are the question's first retrieval
        state.note_tables(view.tables)
        self._opening(Tools(state), trajectory, question, view)
        stop_reason = None if state.final_answer is not None else self._repair(state, trajectory, question, view)
        if state.final_answer is None:
            state.final_answer = best_effort_answer(state, stop_reason)
        return self.result(state, trajectory, stop_reason)

    def _opening(self, tools: Tools, trajectory: dict[str, Any], question: str, view: SchemaView) -> None:
        """The fixed moves (see the module docstring); leaves no answer when no drafted query validated."""
        state = tools.state
        pool: dict[str, Candidate] = {}  # distinct drafted queries, each validated once, with their drafts' votes
        drafts = 0

        def add(draft: Draft) -> None:
            nonlocal drafts
            drafts += 1
            if draft.sql:
                state.votes[draft.sql] = state.votes.get(draft.sql, 0) + 1
            if draft.sql in pool:
                pool[draft.sql].votes += 1
            elif draft.sql:
                pool[draft.sql] = self._check(tools, trajectory, Candidate(draft), "Check this drafted query.")

        add(self._draft(state, question, view))
        if pool and self.candidates > 1 and next(iter(pool.values())).draft.confidence < self.sample_below:
            for seed in range(1, self.candidates):
                if majority_settled(state, list(pool.values()), remaining=self.candidates - drafts):
                    break  # adaptive consistency: no further sample could change the majority result
                add(draft_sql(self.draft, self.lm, source=state.source, question=question, table_schemas=view.text, facts=view.facts,
                              temperature=SAMPLE_TEMPERATURE, seed=seed))  # a sample's confidence is not the agent's
        if not pool:
            return  # no draft: the ReAct loop writes the first query itself
        valid = [c for c in pool.values() if c.valid]
        if not valid:
            redraft = self._redraft(tools, trajectory, question, view, next(iter(pool.values())), pool,
                                    "I redrafted the query from the validator's findings; check it.")
            valid = [redraft] if redraft is not None else []
        if not valid:
            return  # the ReAct loop repairs from here
        if state.judge is None and all(c.symptoms for c in valid):  # V2 redrafts after judging, with the facts
            redraft = self._redraft(tools, trajectory, question, view, valid[0], pool,
                                    "The query's result cannot be what was asked; I redrafted it.")
            if redraft is not None and not redraft.symptoms:
                valid.append(redraft)
        groups = group_by_result(state, valid)
        total = sum(c.votes for c in valid)  # drafts behind the valid queries: a vote share's denominator
        best = groups[0]
        if state.judge is not None:
            state.candidate_queries.update(g.sql for g in groups)
            for group in groups[: max(1, state.limits.max_judge_calls - 1)]:  # one judge call stays for a redraft
                group.verdict = self._judged(tools, trajectory, group, "Does this query's result answer the question?")
            best = max(groups, key=lambda g: choice_score(g, total))
            state.votes.update({g.sql: g.votes for g in groups})  # a group's votes go to the query shown for it
            state.alternatives = [c.sql for c in close_readings(groups, total)]
            facts = state.execution_facts(best.sql)
            if (not facts.ok or facts.empty or facts.all_null or best.symptoms) and state.judge_available():  # facts, not the judge's doubt
                redraft = self._redraft(tools, trajectory, question, view, best, pool,
                                        "I redrafted the query from the judge's findings; check it.", facts=True)
                if redraft is not None:
                    redraft.verdict = self._judged(tools, trajectory, redraft, "Does the redraft's result answer the question?")
                    if judged_score(redraft) > judged_score(best):  # asked for because best showed a symptom
                        best, state.alternatives = redraft, []
            state.candidate_count = drafts
            state.agreement = best.votes / total
        explanation = describe_query(best.sql, state.source.dialect)
        call_step(tools, trajectory, "Submit the query the checks support.", tools.submit_answer,
                  query=best.sql, explanation=explanation, confidence=best.draft.confidence)

    def _draft(self, state: AgentState, question: str, view: SchemaView, **options: Any) -> Draft:
        draft = draft_sql(self.draft, self.lm, source=state.source, question=question, table_schemas=view.text, facts=view.facts,
                          **options)
        if draft.sql:
            state.draft_confidence = draft.confidence
        return draft

    def _check(self, tools: Tools, trajectory: dict[str, Any], candidate: Candidate, thought: str) -> Candidate:
        candidate.validation = call_step(tools, trajectory, thought, tools.validate_sql, query=candidate.sql)
        return candidate

    def _judged(self, tools: Tools, trajectory: dict[str, Any], candidate: Candidate, thought: str) -> LLMJudgeOutput | None:
        call_step(tools, trajectory, thought, tools.llm_judge_evaluate, query=candidate.sql)
        return tools.state.judge_of(candidate.sql)

    def _redraft(
        self, tools: Tools, trajectory: dict[str, Any], question: str, view: SchemaView, rejected: Candidate,
        pool: dict[str, Candidate], thought: str, *, facts: bool = False,
    ) -> Candidate | None:
        """One redraft from what was wrong with ``rejected``; the new query if it is new and valid."""
        hints = repair_hints(rejected, tools.state if facts else None)
        redraft = Candidate(self._draft(tools.state, question, view, hints=hints))
        if not redraft.sql or redraft.sql in pool:
            return None
        return redraft if self._check(tools, trajectory, redraft, thought).valid else None

    def result(self, state: AgentState, trajectory: dict[str, Any], stop_reason: str | None) -> dict[str, Any]:
        final = state.final_answer or {}
        fields = {
            "query": final.get("query", ""),
            "explanation": final.get("explanation", ""),
            "confidence": final.get("confidence", 0.0),
            "judge_score": final.get("judge_score"),
            "valid": final.get("valid", False),
            "reasoning_steps": reasoning_steps(trajectory),
            "readings": readings(state, final.get("query", "")),
            "alternatives": list(state.alternatives) if final.get("query") in state.alternatives else [],
            "fallback_reason": final.get("fallback_reason"),
            "stop_reason": stop_reason,
            "retrieved_tables": list(state.retrieved_tables),
            "retrieval_calls": state.retrieval_calls,
            "structural_validation_calls": state.validation_attempts,
            "iterations": state.iteration,
        }
        if self.judge is not None:
            scores = state.judge_scores
            fields.update(
                judge_calls=state.judge_calls,
                final_judge_score=scores[-1] if scores else None,
                judge_improvement=(scores[-1] - scores[0]) if len(scores) >= 2 else 0.0,
                semantic_corrections=state.semantic_corrections,
                judge_degraded=state.judge_degraded,
                judge_errors=list(state.judge_errors),
                candidates=state.candidate_count,
                agreement=state.agreement,
            )
        if fields["alternatives"]:
            with_differences(fields["readings"], fields["alternatives"], state.source.dialect)
        return fields


class ReActAgentV2(ReActAgent):
    """V2: :class:`ReActAgent` with the judge on (``judge=True``) and three candidates when unsure.

    Confidence is ``0.4 * agent + 0.6 * judge``, held to the V2 card's bands; a judge LM that
    fails makes the agent carry on as V1, and the result says so (``judge_degraded``).
    """

    def __init__(self, db_path: Path | str | None = None, **kwargs: Any):
        super().__init__(db_path, judge=True, **kwargs)


def repairs(model_id: str | None, lm: Any, max_repair_steps: int | None) -> bool:
    """Whether a program built with these takes repair steps, as far as is known before its LM is built: the steps
    given, else whether the LM given (or configured in DSPy, or named) is not the embedded model."""
    from text2sql_dspy.programs.llm.factory import is_embedded_model, is_local_model, resolve_model_name

    if max_repair_steps is not None:
        return max_repair_steps > 0
    if lm is None and model_id is None:
        lm = dspy.settings.lm
    if lm is not None:
        return not is_embedded_model(lm)
    return not is_local_model(resolve_model_name(model_id))


def readings(state: AgentState, chosen: str) -> list[dict[str, Any]]:
    """Every distinct query the validator saw, in order, with its votes, findings, verdict and the rows it
    returned when it ran (:class:`~text2sql_dspy.programs.answer.Reading`, as plain data)."""
    seen: dict[str, dict[str, Any]] = {}
    for validation in state.validations:
        verdict = state.judge_of(validation.sql)
        result = state.executions.get(validation.sql)
        seen[validation.sql] = Reading(
            sql=validation.sql, chosen=validation.sql == chosen, votes=state.votes.get(validation.sql, 1),
            valid=validation.valid, findings=[*validation.errors, *validation.warnings],
            judge_score=None if verdict is None else verdict.correctness_score,
            preview=None if result is None else Preview.of(result),
        ).model_dump()
    return list(seen.values())


def with_differences(found: list[dict[str, Any]], alternatives: list[str], dialect: str) -> None:
    """Mark each of two alternative readings with what it does that the other does not (:func:`differences`)."""
    first, second = alternatives[:2]
    one, two = differences(first, second, dialect)
    for reading in found:
        if reading["sql"] in (first, second):
            reading["difference"] = one if reading["sql"] == first else two


def majority_settled(state: AgentState, candidates: list[Candidate], remaining: int) -> bool:
    """True when the most drafted result leads the next by more than ``remaining`` drafts could close.

    Results are compared with :func:`~..db.results.same_result`; a query that did not validate is
    a result of its own. This is adaptive consistency (Aggarwal et al., EMNLP 2023): the majority
    that drawing every sample would give, for fewer samples.
    """
    votes = sorted((g.votes for g in group_by_result(state, candidates)), reverse=True) + [0, 0]
    return votes[0] > votes[1] + remaining


def group_by_result(state: AgentState, candidates: list[Candidate]) -> list[Candidate]:
    """One representative per distinct result (the first drafted), carrying the group's votes, most votes first.

    Only valid queries that ran can share a result; any other candidate is a group of its own.
    """
    groups: list[Candidate] = []
    for candidate in candidates:
        match = None
        if candidate.valid:  # same_result is False for a query that failed to run
            result = state.execute(candidate.sql)
            match = next((g for g in groups if g.valid and same_result(state.execute(g.sql), result)), None)
        if match is not None:
            match.votes += candidate.votes
        else:
            groups.append(Candidate(candidate.draft, candidate.validation, candidate.votes))
    return sorted(groups, key=lambda g: -g.votes)


def judged_score(candidate: Candidate) -> float:
    return candidate.verdict.correctness_score if candidate.verdict is not None else UNJUDGED_SCORE


def close_readings(groups: list[Candidate], total: int) -> list[Candidate]:
    """The two best-supported judged results when their choice scores are within :data:`UNSURE_MARGIN`
    (best first), else none: the program cannot decide between them, and says so."""
    judged = sorted((g for g in groups if g.verdict is not None), key=lambda g: -choice_score(g, total))
    if len(judged) < 2 or choice_score(judged[0], total) - choice_score(judged[1], total) >= UNSURE_MARGIN:
        return []
    return judged[:2]


def choice_score(candidate: Candidate, total: int) -> float:
    """How strongly the evidence supports a candidate: the judge's probability and the candidates' agreement,
    less :data:`SYMPTOM_PENALTY` when it shows a symptom (:attr:`Candidate.symptoms`)."""
    penalty = SYMPTOM_PENALTY if candidate.symptoms else 0.0
    return 0.5 * judged_score(candidate) + 0.5 * candidate.votes / max(1, total) - penalty


def repair_hints(candidate: Candidate, state: AgentState | None = None) -> str:
    """Facts about a rejected query, as hints for one redraft: validator findings, execution (given ``state``), judge issues."""
    lines = [f"A previous attempt was rejected:\n{candidate.sql}"]
    validation = candidate.validation
    if isinstance(validation, ValidationResult) and not validation.valid:
        lines += [f"- {e}" for e in validation.errors[:4]] + [f"- {s}" for s in validation.suggestions[:4]]
    lines += [f"- {m}: use a stored value" for m in candidate.missing_values[:4]]
    lines += [f"- {m}" for m in candidate.symptoms if m not in candidate.missing_values][:2]
    if state is not None and candidate.valid:
        lines.append("It returned:\n" + state.execution_facts(candidate.sql).render())
    if candidate.verdict is not None:
        lines += [f"- {i}" for i in candidate.verdict.issues[:3]] + [f"- fix: {s}" for s in candidate.verdict.suggestions[:3]]
    lines.append("Write a corrected query.")
    return "\n".join(lines)


def _in_context(judge: Any, history: str, hint: str, *, question: str, **inputs: Any) -> Any:
    text = "\n".join(part for part in (history, f"Now: {question}" if history else question,
                                       f"Hint: {hint}" if hint else "") if part)
    return judge(question=text, **inputs)


def best_effort_answer(state: AgentState, reason: str | None) -> dict[str, Any]:
    """When nothing was submitted: the best validated query so far (with a judge: the highest score), low
    confidence; when no query passed the validator, no query at all, and the last one's findings as the reason."""
    valid = [v for v in state.validations if v.valid]
    reason = reason or "the agent did not submit an answer"
    if not valid:
        last = state.validations[-1] if state.validations else None
        findings = "; ".join(last.errors) if last is not None and last.errors else ""
        refused = "refused, the draft is not a read-only query: " if last is not None and last.dangerous else ""
        return {"query": "", "explanation": "", "confidence": 0.0, "judge_score": None, "valid": False,
                "fallback_reason": f"{refused}no query passed the validator ({findings}); {reason}" if findings else
                f"{refused}no query passed the validator; {reason}"}
    best: ValidationResult | None = None
    judge_score = None
    if state.verdicts:
        sql, verdict = max(state.verdicts, key=lambda pair: pair[1].correctness_score)
        best, judge_score = state.validation_of(sql), verdict.correctness_score
    if best is None or not best.valid:
        best, judge_score = valid[-1], None
    confidence = min(0.3, combined_confidence(state.draft_confidence, best, judge_score))
    return {
        "query": best.sql,
        "explanation": "Best effort: the agent did not submit an answer.",
        "confidence": confidence,
        "judge_score": judge_score,
        "valid": True,
        "fallback_reason": reason,
    }
