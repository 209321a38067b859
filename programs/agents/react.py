"""The ReAct agents: V1 (structural validation) and V2 (plus an LLM judge on its own LM).

Every question opens the way the seeds' happy path does — retrieve, draft, validate, and for V2
judge — as fixed moves that cost no agent call. When those checks pass (V2: judge score >= 0.7)
the draft is submitted at once. Otherwise :class:`SQLReAct`, a ``dspy.ReAct`` over the drafting
signature, takes over with that opening as its trajectory: it rewrites the query, re-validates,
asks the judge and submits, within the seeds' limits. A malformed reply never crashes a call:
the best validated query so far is returned with low confidence and the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import dspy
from dspy.utils.exceptions import ContextWindowExceededError

from text2sql_dspy.programs.agents.tools import ACCEPT_SCORE, AgentState, AgentStateV2, Limits, Toolbox, combined_confidence
from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.baseline import clamp01
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.recovery import MALFORMED_REPLY_ERRORS, predict_or_error
from text2sql_dspy.programs.retrieval.retriever import make_retriever
from text2sql_dspy.programs.db.source import DataSource
from text2sql_dspy.programs.db.validator import ValidationResult, clean_sql
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

    def run_loop(self, toolbox: Toolbox, trajectory: dict[str, Any], **inputs: Any) -> str | None:
        """Take agent steps until an answer is accepted; the reason it stopped early, or None."""
        state = toolbox.state
        tools = {tool.name: tool for tool in toolbox.tools()}
        idle = 0  # tool calls in a row that validated no new query, found no new table and asked no judge
        while state.final_answer is None:
            if state.iteration >= toolbox.limits.max_iterations:
                return f"iteration limit reached ({toolbox.limits.max_iterations} tool calls)"
            if idle >= STALL_LIMIT:
                return f"stalled ({STALL_LIMIT} tool calls in a row changed nothing)"
            try:
                pred, error = predict_or_error(
                    self._call_with_potential_trajectory_truncation, self.react, trajectory, **inputs
                )
            except ContextWindowExceededError as exc:
                return f"context window exceeded: {exc}"
            if pred is None:
                return error
            name, args = pred.next_tool_name, pred.next_tool_args
            before = _progress(state)
            record_step(trajectory, pred.next_thought, name, args, _call_tool(tools, name, args))
            state.iteration += 1
            idle = idle + 1 if _progress(state) == before else 0
        return None


class ReActAgent(Text2SQLProgram):
    """V1: retrieve, draft, validate structurally, repair with ReAct, submit.

    ``run(question)`` returns ``query``, ``explanation``, ``confidence``, ``judge_score`` (None for
    V1), ``reasoning_steps`` and the per-question metrics; ``forward`` returns the same as a Prediction.
    """

    version = "v1"

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        schema_path: Path | str | None = None,
        retrieval_type: str = "semantic",
        top_k: int = 5,
        model_id: str | None = None,
        lm: dspy.LM | None = None,
        max_iterations: int = 10,
        max_retrieval_calls: int = 3,
        max_validation_attempts: int = 4,
    ):
        super().__init__(
            db_path, schema_path=schema_path, retrieval_type=retrieval_type, top_k=top_k, model_id=model_id, lm=lm
        )
        self.limits = Limits(max_iterations, max_retrieval_calls, max_validation_attempts, self._judge_budget())
        self.draft = dspy.Predict(DraftSQL)
        template = Toolbox(None, None, None, None, self.limits, judge=self._judge_fn())  # type: ignore[arg-type]
        self.agent = SQLReAct(DraftSQL, template.tools(), max_iterations, with_judge=self.uses_judge)

    uses_judge = False

    def _judge_budget(self) -> int:
        return 0

    def _judge_fn(self) -> Any:
        return None

    def new_state(self, question: str) -> AgentState:
        return AgentState(question=question)

    def answer(self, question: str, source: DataSource) -> dict[str, Any]:
        state = self.new_state(question)
        toolbox = Toolbox(
            state, source, make_retriever(source.catalog, self.retrieval_type), source.validator, self.limits,
            top_k=self.top_k, judge=self._judge_fn(),
        )
        schemas = toolbox.retrieve_tables(question, self.top_k)
        trajectory: dict[str, Any] = {}
        stop_reason = self._opening(toolbox, trajectory, question, schemas)
        if state.final_answer is None and stop_reason is None:
            stop_reason = self.agent.run_loop(toolbox, trajectory, question=question, table_schemas=schemas, hints="")
        if state.final_answer is None:
            state.final_answer = best_effort_answer(state, toolbox.agent_confidence, stop_reason)
        return self.result(state, trajectory, stop_reason)

    def _opening(self, toolbox: Toolbox, trajectory: dict[str, Any], question: str, schemas: str) -> str | None:
        """Draft and validate (no agent call); submit if the draft passes. A reason if drafting failed."""
        draft, error = predict_or_error(self.draft, question=question, table_schemas=schemas, hints="")
        if draft is None:
            return None  # no draft: the agent writes the first query itself
        toolbox.agent_explanation = str(draft.explanation or "")
        toolbox.agent_confidence = clamp01(draft.confidence)
        sql = clean_sql(str(draft.sql or ""))
        observation = toolbox.validate_sql(sql)
        toolbox.state.iteration += 1
        record_step(trajectory, "I drafted a query over the retrieved tables; check it.", "validate_sql", {"query": sql}, observation)
        validation = toolbox.state.validation_of(sql)
        if validation is not None and validation.valid and self._accept_opening(toolbox, trajectory, sql):
            record_step(
                trajectory, "The checks passed; submit.", "submit_answer",
                {"query": sql, "explanation": toolbox.agent_explanation, "confidence": toolbox.agent_confidence},
                toolbox.submit_answer(sql, toolbox.agent_explanation, toolbox.agent_confidence),
            )
            toolbox.state.iteration += 1
        return None

    def _accept_opening(self, toolbox: Toolbox, trajectory: dict[str, Any], sql: str) -> bool:
        return True

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
    """V2: V1 plus ``llm_judge_evaluate``, a semantic judge on its own LM (``judge_model_id``).

    Confidence is ``0.4 * agent + 0.6 * judge``, held to the seeds' bands; a judge LM that fails
    makes the agent carry on as V1, and the result says so (``judge_degraded``).
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
        **kwargs: Any,
    ):
        self.judge_model_id = judge_model_id
        self._judge_lm = judge_lm
        self.max_judge_calls = max_judge_calls
        self.judge = dspy.Predict(JudgeSQL)
        super().__init__(db_path, **kwargs)

    @property
    def judge_lm(self) -> dspy.LM:
        """The judge's LM: the one given, else ``judge_model_id`` or the judge's environment variables,
        else the agent's own LM (one shared model when both are local)."""
        if self._judge_lm is None:
            from text2sql_dspy.programs.llm.factory import build_lm, resolve_model_name

            judge_name = resolve_model_name(self.judge_model_id, role="judge")
            same_as_agent = self.judge_model_id is None and judge_name == resolve_model_name(self.model_id)
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

    def evaluate_sql(self, question: str, sql: str, table_schemas: str, explanation: str) -> LLMJudgeOutput:
        """One judge call on the judge LM. Unparseable output scores 0.0 with the reason as an issue."""
        return judge_sql(
            self.judge, self.judge_lm, question=question, sql=sql, table_schemas=table_schemas, explanation=explanation
        )

    def _accept_opening(self, toolbox: Toolbox, trajectory: dict[str, Any], sql: str) -> bool:
        observation = toolbox.llm_judge_evaluate(sql, toolbox.agent_explanation)
        toolbox.state.iteration += 1
        record_step(trajectory, "The query is valid; does it answer the question?", "llm_judge_evaluate",
                    {"query": sql, "explanation": toolbox.agent_explanation}, observation)
        state = toolbox.state
        assert isinstance(state, AgentStateV2)
        verdict = state.judge_of(sql)
        return state.judge_degraded or (verdict is not None and verdict.correctness_score >= ACCEPT_SCORE)

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
        )
        return fields


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
