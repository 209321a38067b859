"""The ReAct agents: V1 (structural validation) and V2 (plus an execution-grounded judge on its own LM).

A question takes one path, step by step, through one step protocol (:func:`take_step`: call a
tool, record thought/tool/args/observation, count the iteration), whether the step is one of the
fixed opening moves or the agent's own choice:

* V1 drafts, validates and submits; an invalid draft is redrafted once with the validator's
  findings as hints; if that fails too, :class:`SQLReAct` (a ``dspy.ReAct`` over the drafting
  signature) takes over with the steps so far as its trajectory.
* V2 drafts greedily and, when the model's own token confidence is low, samples more candidates;
  it validates and runs them read-only, groups them by result, and lets the judge (which sees
  each result) score one query per group. The answer is the group with the best mix of judge
  probability and agreement. A chosen query that errs, returns nothing or is judged wrong is
  redrafted once from those facts.

A malformed reply never crashes a call: the best validated query so far is returned with low
confidence and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import dspy
from dspy.utils.exceptions import ContextWindowExceededError

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.drafting import Draft, draft_sql
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.recovery import MALFORMED_REPLY_ERRORS, predict_or_error
from text2sql_dspy.programs.agents.thresholds import LOW_SCORE
from text2sql_dspy.programs.agents.tools import AgentState, AgentStateV2, Limits, Toolbox, combined_confidence
from text2sql_dspy.programs.db.describe import describe_query
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.programs.db.validator import ValidationResult
from text2sql_dspy.programs.retrieval.schema_view import SchemaView
from text2sql_dspy.signatures import DraftSQL, JudgeSQL, LLMJudgeOutput

AGENT_INSTRUCTIONS = """You are a SQL agent. Your goal: submit one read-only SQL query that answers the question.
The trajectory shows the query drafted so far and what the checks said about it.
Each turn, write a short next_thought, then pick next_tool_name and give next_tool_args as a JSON object.
- If a check failed, write the corrected FULL query and call validate_sql with it.
- If validate_sql passed{judge_rule}, call submit_answer with that exact query.
- Use retrieve_tables only when a needed table or column is missing from the schemas.
Tools:
{tools}"""

JUDGE_RULE = " and llm_judge_evaluate scored it 70% or more"
STALL_LIMIT = 3  # repair ends after this many tool calls in a row that changed nothing (see _progress)
# One agent step is a thought, a tool name and its arguments: a full query fits in 200 tokens. Without
# the cap a run-on step wrote up to 1,024 tokens (~70 s on 2 cores).
STEP_MAX_TOKENS = 200
SAMPLE_TEMPERATURE = 0.7
DEFAULT_REPAIR_STEPS = 3  # agent steps of repair on a served or hosted model (see ReActAgent.max_repair_steps)


class SQLReAct(dspy.ReAct):
    """``dspy.ReAct`` for SQL: tools are made per question, and an accepted ``submit_answer`` ends the loop.

    It keeps ReAct's predictors (``react``, ``extract``), trajectory formatting and truncation,
    so optimizers tune it like any ReAct; it drops the generic ``finish`` tool for ``submit_answer``.
    """

    def __init__(self, signature: type[dspy.Signature], tools: list[dspy.Tool], max_iters: int, with_judge: bool):
        super().__init__(signature, tools, max_iters)
        self.tools.pop("finish", None)
        listing = "\n".join(f"({i + 1}) {tool}" for i, tool in enumerate(self.tools.values()))
        instructions = AGENT_INSTRUCTIONS.format(judge_rule=JUDGE_RULE if with_judge else "", tools=listing)
        self.react = dspy.Predict(
            dspy.Signature({**signature.input_fields}, instructions)
            .append("trajectory", dspy.InputField(), type_=str)
            .append("next_thought", dspy.OutputField(), type_=str)
            .append("next_tool_name", dspy.OutputField(), type_=Literal[tuple(self.tools)])
            .append("next_tool_args", dspy.OutputField(), type_=dict[str, Any])
        )

    def run_loop(self, toolbox: Toolbox, trajectory: dict[str, Any], *, max_steps: int, **inputs: Any) -> str | None:
        """Take up to ``max_steps`` agent steps until an answer is accepted; the reason it stopped early, or None."""
        state = toolbox.state
        idle = 0  # tool calls in a row that validated no new query, found no new table and asked no judge
        for _ in range(max_steps):
            if state.final_answer is not None:
                return None
            if state.iteration >= toolbox.limits.max_iterations:
                return f"iteration limit reached ({toolbox.limits.max_iterations} tool calls)"
            if idle >= STALL_LIMIT:
                return f"stalled ({STALL_LIMIT} tool calls in a row changed nothing)"
            try:
                pred, error = predict_or_error(
                    self._call_with_potential_trajectory_truncation, self.react, trajectory,
                    config={"max_tokens": STEP_MAX_TOKENS}, **inputs,
                )
            except ContextWindowExceededError as exc:
                return f"context window exceeded: {exc}"
            if pred is None:
                return error
            before = _progress(state)
            take_step(toolbox, trajectory, pred.next_thought, pred.next_tool_name, pred.next_tool_args)
            idle = idle + 1 if _progress(state) == before else 0
        return None if state.final_answer is not None else f"repair step limit reached ({max_steps} agent steps)"


def take_step(toolbox: Toolbox, trajectory: dict[str, Any], thought: str, name: str, args: Any) -> str:
    """The one step protocol: call tool ``name`` with ``args``, record the step, count the iteration."""
    observation = _call_tool(toolbox.tools_by_name, name, args)
    record_step(trajectory, thought, name, args, observation)
    toolbox.state.iteration += 1
    return observation


@dataclass
class Candidate:
    """A drafted query and what the checks found."""

    draft: Draft
    validation: ValidationResult | None = None
    votes: int = 1
    verdict: LLMJudgeOutput | None = None

    @property
    def sql(self) -> str:
        return self.draft.sql


class ReActAgent(Text2SQLProgram):
    """V1: draft, validate structurally, repair (one redraft, then ReAct), submit.

    ``run(question)`` returns ``query``, ``explanation``, ``confidence``, ``judge_score`` (None for
    V1), ``reasoning_steps`` and the per-question metrics; ``forward`` returns the same as a Prediction.
    """

    version = "v1"
    uses_judge = False

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        max_iterations: int = 10,
        max_retrieval_calls: int = 3,
        max_validation_attempts: int = 4,
        max_repair_steps: int | None = None,
        **kwargs: Any,
    ):
        super().__init__(db_path, **kwargs)
        self._max_repair_steps = max_repair_steps
        self.limits = Limits(max_iterations, max_retrieval_calls, max_validation_attempts, self._judge_budget())
        self.draft = dspy.Predict(DraftSQL)
        template = Toolbox(None, None, None, None, self.limits, judge=self._judge_fn())  # type: ignore[arg-type]
        self.agent = SQLReAct(DraftSQL, template.tools(), max_iterations, with_judge=self.uses_judge)

    @property
    def max_repair_steps(self) -> int:
        """ReAct steps after the opening found no valid query: as given, else 0 on the embedded model, 3 on others.

        On the embedded 1.5B model a repair step costs 15-60 s (a new ~1,000-token prompt and a
        200-token reply) and repaired none of the 5 questions that reached it while profiling the
        speed benchmark; it often writes ``tool_name_0`` for ``next_tool_name`` (see README).
        """
        if self._max_repair_steps is not None:
            return self._max_repair_steps
        from text2sql_dspy.programs.llm.factory import is_embedded_model

        return 0 if is_embedded_model(self.lm) else DEFAULT_REPAIR_STEPS

    def _judge_budget(self) -> int:
        return 0

    def _judge_fn(self) -> Any:
        return None

    def new_state(self, question: str) -> AgentState:
        return AgentState(question=question)

    def answer(self, question: str, source: DataSource) -> dict[str, Any]:
        state = self.new_state(question)
        toolbox = Toolbox(
            state, source, None, source.validator, self.limits,
            top_k=self.top_k, retrieval_type=self.retrieval_type, judge=self._judge_fn(),
        )
        view = self.schema(source, question)
        toolbox.note_tables(view.tables)
        trajectory: dict[str, Any] = {}
        stop_reason = self._opening(toolbox, trajectory, question, view)
        if state.final_answer is None and stop_reason is None:
            stop_reason = self.agent.run_loop(
                toolbox, trajectory, max_steps=self.max_repair_steps, question=question, table_schemas=view.text, hints=""
            )
        if state.final_answer is None:
            state.final_answer = best_effort_answer(state, toolbox.agent_confidence, stop_reason)
        return self.result(state, trajectory, stop_reason)

    def _draft(self, toolbox: Toolbox, question: str, view: SchemaView, **options: Any) -> Draft:
        draft = draft_sql(self.draft, self.lm, source=toolbox.source, question=question, table_schemas=view.text, **options)
        if draft.sql:
            toolbox.agent_confidence = draft.confidence
            toolbox.agent_explanation = describe_query(draft.sql, toolbox.source.dialect)
        return draft

    def _check(self, toolbox: Toolbox, trajectory: dict[str, Any], candidate: Candidate, thought: str) -> bool:
        take_step(toolbox, trajectory, thought, "validate_sql", {"query": candidate.sql})
        candidate.validation = toolbox.state.validation_of(candidate.sql)
        return candidate.validation is not None and candidate.validation.valid

    def _submit(self, toolbox: Toolbox, trajectory: dict[str, Any], candidate: Candidate, thought: str) -> None:
        explanation = describe_query(candidate.sql, toolbox.source.dialect)
        take_step(toolbox, trajectory, thought, "submit_answer",
                  {"query": candidate.sql, "explanation": explanation, "confidence": candidate.draft.confidence})

    def _opening(self, toolbox: Toolbox, trajectory: dict[str, Any], question: str, view: SchemaView) -> str | None:
        """Draft, validate, submit; one redraft from the validator's findings. A reason if drafting failed."""
        first = Candidate(self._draft(toolbox, question, view))
        if not first.sql:
            return None  # no draft: the agent writes the first query itself
        if self._check(toolbox, trajectory, first, "I drafted a query over the schema; check it."):
            self._submit(toolbox, trajectory, first, "The checks passed; submit.")
            return None
        second = Candidate(self._draft(toolbox, question, view, hints=repair_hints(first)))
        if second.sql and second.sql != first.sql and self._check(
            toolbox, trajectory, second, "I redrafted the query from the validator's findings; check it."
        ):
            self._submit(toolbox, trajectory, second, "The redraft passed the checks; submit.")
        return None

    def result(self, state: AgentState, trajectory: dict[str, Any], stop_reason: str | None) -> dict[str, Any]:
        final = state.final_answer or {}
        return {
            "query": final.get("query", ""),
            "explanation": final.get("explanation", ""),
            "confidence": final.get("confidence", 0.0),
            "judge_score": final.get("judge_score"),
            "valid": final.get("valid", False),
            "reasoning_steps": reasoning_steps(trajectory),
            "fallback_reason": final.get("fallback_reason"),
            "stop_reason": stop_reason,
            "retrieved_tables": list(state.retrieved_tables),
            "retrieval_calls": state.retrieval_calls,
            "structural_validation_calls": state.validation_attempts,
            "iterations": state.iteration,
        }


class ReActAgentV2(ReActAgent):
    """V2: V1 plus candidates run read-only and ``llm_judge_evaluate``, a judge on its own LM that sees results.

    ``candidates``: queries drafted when the greedy draft's token confidence is below
    ``sample_below`` (the greedy one plus samples at temperature 0.7). Confidence is
    ``0.4 * agent + 0.6 * judge``, held to the seeds' bands; a judge LM that fails makes the agent
    carry on as V1, and the result says so (``judge_degraded``).
    """

    version = "v2"
    uses_judge = True

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        judge_model_id: str | None = None,
        judge_lm: dspy.LM | None = None,
        max_judge_calls: int = 3,
        candidates: int = 3,
        sample_below: float = 0.9,
        **kwargs: Any,
    ):
        self.judge_model_id = judge_model_id
        self._judge_lm = judge_lm
        self.max_judge_calls = max_judge_calls
        self.candidates = max(1, candidates)
        self.sample_below = sample_below
        self.judge = dspy.Predict(JudgeSQL)
        super().__init__(db_path, **kwargs)

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

    def _judge_budget(self) -> int:
        return self.max_judge_calls

    def answer(self, question: str, source: DataSource) -> dict[str, Any]:
        _ = self.judge_lm  # a misconfigured judge (bad model string, missing key) is an error, not a degradation
        return super().answer(question, source)

    def _judge_fn(self) -> Any:
        return self.evaluate_sql

    def new_state(self, question: str) -> AgentState:
        return AgentStateV2(question=question)

    def evaluate_sql(self, question: str, sql: str, execution_result: str) -> LLMJudgeOutput:
        """One judge call on the judge LM: the verdict alone, whose score is the judge's P(correct).

        Unparseable output scores 0.0 with the reason as an issue. The judge's written issues cost a
        second call of up to 200 tokens; on the embedded model they did not pay for it (see README),
        so the agent asks only for the verdict; the optimizer metric still asks for the issues.
        """
        return judge_sql(
            self.judge, self.judge_lm, question=question, sql=sql, execution_result=execution_result, explain=False
        )

    def _opening(self, toolbox: Toolbox, trajectory: dict[str, Any], question: str, view: SchemaView) -> str | None:
        state = toolbox.state
        assert isinstance(state, AgentStateV2)
        drafts: list[Draft] = []
        pool: dict[str, Candidate] = {}  # distinct drafted queries, each validated once, with its drafts' votes

        def add(draft: Draft) -> None:
            drafts.append(draft)
            if draft.sql in pool:
                pool[draft.sql].votes += 1
            elif draft.sql:
                pool[draft.sql] = Candidate(draft)
                self._check(toolbox, trajectory, pool[draft.sql], "Check this drafted query.")

        add(self._draft(toolbox, question, view))
        if pool and self.candidates > 1 and drafts[0].confidence < self.sample_below:
            for seed in range(1, self.candidates):
                if majority_settled(toolbox, list(pool.values()), remaining=self.candidates - len(drafts)):
                    break  # adaptive consistency: no further sample could change the majority result
                add(draft_sql(self.draft, self.lm, source=toolbox.source, question=question,
                              table_schemas=view.text, temperature=SAMPLE_TEMPERATURE, seed=seed))
        if not pool:
            return None  # no draft: the agent writes the first query itself
        valid = [c for c in pool.values() if c.validation is not None and c.validation.valid]
        if not valid:
            second = Candidate(self._draft(toolbox, question, view, hints=repair_hints(next(iter(pool.values())))))
            if second.sql and second.sql not in pool and self._check(
                toolbox, trajectory, second, "I redrafted the query from the validator's findings; check it."
            ):
                valid = [second]
        if not valid:
            return None  # the ReAct loop repairs from here
        groups = group_by_result(toolbox, valid)
        total = sum(c.votes for c in valid)  # drafts behind the valid queries: the denominator of a vote share
        state.candidate_queries.update(g.sql for g in groups)
        for group in groups[: max(1, self.max_judge_calls - 1)]:  # one judge call stays for a redraft
            take_step(toolbox, trajectory, "Does this query's result answer the question?", "llm_judge_evaluate",
                      {"query": group.sql})
            group.verdict = state.judge_of(group.sql)
        best = max(groups, key=lambda g: choice_score(g, total))
        facts = toolbox.execution_facts(best.sql)
        if (not facts.ok or facts.empty or facts.all_null) and not state.judge_degraded:  # facts, not the judge's doubt
            redraft = Candidate(self._draft(toolbox, question, view, hints=repair_hints(best, toolbox)))
            if redraft.sql and redraft.sql not in pool and self._check(
                toolbox, trajectory, redraft, "I redrafted the query from the judge's findings; check it."
            ):
                take_step(toolbox, trajectory, "Does the redraft's result answer the question?", "llm_judge_evaluate",
                          {"query": redraft.sql})
                redraft.verdict = state.judge_of(redraft.sql)
                if judged_score(redraft) > judged_score(best):  # the redraft was asked for because the judge doubted best
                    best = redraft
        state.candidate_count = len(drafts)
        state.agreement = best.votes / total
        self._submit(toolbox, trajectory, best, "Submit the query whose result the judge and the candidates support.")
        return None

    def result(self, state: AgentState, trajectory: dict[str, Any], stop_reason: str | None) -> dict[str, Any]:
        fields = super().result(state, trajectory, stop_reason)
        assert isinstance(state, AgentStateV2)
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
        return fields


def majority_settled(toolbox: Toolbox, candidates: list[Candidate], remaining: int) -> bool:
    """True when the most drafted result leads the next by more than ``remaining`` drafts could close.

    Results are compared as :meth:`Toolbox.result_key` compares them; a query that did not
    validate is a result of its own. Stopping here is adaptive consistency (Aggarwal et al.,
    EMNLP 2023): the majority that drawing every sample would give, for fewer samples.
    """
    votes: dict[Any, int] = {}
    for c in candidates:
        key = toolbox.result_key(c.sql) if c.validation is not None and c.validation.valid else ("invalid", c.sql)
        votes[key] = votes.get(key, 0) + c.votes
    top, second = (sorted(votes.values(), reverse=True) + [0, 0])[:2]
    return top > second + remaining


def group_by_result(toolbox: Toolbox, candidates: list[Candidate]) -> list[Candidate]:
    """One representative per distinct result (the first drafted), carrying the group's votes, most votes first."""
    groups: dict[Any, Candidate] = {}
    for candidate in candidates:
        key = toolbox.result_key(candidate.sql)
        if key in groups:
            groups[key].votes += candidate.votes
        else:
            groups[key] = Candidate(candidate.draft, candidate.validation, candidate.votes)
    return sorted(groups.values(), key=lambda g: -g.votes)


UNJUDGED_SCORE = 0.25  # a group the judge budget did not reach: below any neutral verdict


def judged_score(candidate: Candidate) -> float:
    return candidate.verdict.correctness_score if candidate.verdict is not None else UNJUDGED_SCORE


def choice_score(candidate: Candidate, total: int) -> float:
    """How strongly the evidence supports a candidate: the judge's probability and the candidates' agreement."""
    return 0.5 * judged_score(candidate) + 0.5 * candidate.votes / max(1, total)


def repair_hints(candidate: Candidate, toolbox: Toolbox | None = None) -> str:
    """Facts about a rejected query, as hints for one redraft: validator findings, execution, judge issues."""
    lines = [f"A previous attempt was rejected:\n{candidate.sql}"]
    validation = candidate.validation
    if validation is not None and not validation.valid:
        lines += [f"- {e}" for e in validation.errors[:4]] + [f"- {s}" for s in validation.suggestions[:4]]
    if toolbox is not None and validation is not None and validation.valid:
        lines.append("It returned:\n" + toolbox.execution_facts(candidate.sql).render())
    if candidate.verdict is not None:
        lines += [f"- {i}" for i in candidate.verdict.issues[:3]] + [f"- fix: {s}" for s in candidate.verdict.suggestions[:3]]
    lines.append("Write a corrected query.")
    return "\n".join(lines)


def best_effort_answer(state: AgentState, agent_confidence: float, reason: str | None) -> dict[str, Any]:
    """When nothing was submitted: the best validated query so far (V2: highest judge score), low confidence."""
    valid = [v for v in state.validation_results if v.valid]
    best: ValidationResult | None = None
    judge_score = None
    if isinstance(state, AgentStateV2) and valid:
        scored = [(r.correctness_score, q) for q, r in zip(state.judged_queries, state.judge_results)]
        if scored:
            judge_score, sql = max(scored, key=lambda pair: pair[0])
            best = state.validation_of(sql)
    if best is None:
        safe = [v for v in state.validation_results if not v.dangerous]  # never fall back to a write
        best = valid[-1] if valid else (safe[-1] if safe else None)
    confidence = min(0.3, combined_confidence(agent_confidence, best, judge_score))
    return {
        "query": best.sql if best else "",
        "explanation": "Best effort: the agent did not submit an answer.",
        "confidence": confidence,
        "judge_score": judge_score,
        "valid": bool(best and best.valid),
        "fallback_reason": reason or "the agent did not submit an answer",
    }


def record_step(trajectory: dict[str, Any], thought: str, tool: str, args: Any, observation: str) -> None:
    """Append one thought/tool/args/observation step, numbered as ``dspy.ReAct`` numbers them.

    The number follows the last step still present: ReAct's truncation drops the oldest steps'
    keys when the context overflows, so ``len(trajectory)`` would reuse a number still in use.
    """
    idx = max(_step_numbers(trajectory), default=-1) + 1
    trajectory[f"thought_{idx}"] = thought
    trajectory[f"tool_name_{idx}"] = tool
    trajectory[f"tool_args_{idx}"] = args
    trajectory[f"observation_{idx}"] = observation


def reasoning_steps(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """The trajectory's steps still present (truncation may have dropped the oldest) as dicts."""
    return [
        {
            "thought": trajectory[f"thought_{i}"],
            "tool": trajectory[f"tool_name_{i}"],
            "args": trajectory[f"tool_args_{i}"],
            "observation": trajectory[f"observation_{i}"],
        }
        for i in _step_numbers(trajectory)
    ]


def _progress(state: AgentState) -> tuple[int, int, int]:
    """What a repair step can change: queries validated, tables found, judge verdicts."""
    return state.validation_attempts, len(state.retrieved_tables), getattr(state, "judge_calls", 0)


def _step_numbers(trajectory: dict[str, Any]) -> list[int]:
    return sorted(int(key.removeprefix("thought_")) for key in trajectory if key.startswith("thought_"))


def _call_tool(tools: dict[str, dspy.Tool], name: str, args: Any) -> str:
    tool = tools.get(name)
    if tool is None:
        return f"Unknown tool {name!r}. Use one of: {', '.join(tools)}."
    if not isinstance(args, dict):
        return f"next_tool_args must be a JSON object of arguments for {name}."
    try:
        return str(tool(**args))
    except MALFORMED_REPLY_ERRORS as exc:
        return f"Bad arguments for {name}: {exc}. Expected: {tool.args}."
