"""The repair loop: a ``dspy.ReAct`` over the drafting signature, for a question whose opening found no answer.

It keeps ReAct's two predictors, so optimizers tune it as any ReAct: ``react`` chooses each step
(a thought, a tool, its arguments) and ``extract`` writes the query from the trajectory when the
steps end without an accepted answer. Its tools are the question's (:class:`~.tools.Tools`),
bound per call; ReAct's generic ``finish`` gives way to ``submit_answer``, which ends the loop
once it accepts a query.
"""

from __future__ import annotations

from typing import Any, Literal

import dspy
from dspy.utils.exceptions import ContextWindowExceededError

from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.agents.state import AgentState
from text2sql_dspy.programs.agents.tools import JUDGE_TOOL, Tools, tool_specs
from text2sql_dspy.programs.agents.trajectory import call_step, progress_of, take_step

__all__ = ["RepairAgent", "step_limit_reached"]

AGENT_INSTRUCTIONS = """You are a SQL agent. Your goal: submit one read-only SQL query that answers the question.
The trajectory shows the query drafted so far and what the checks said about it.
Each turn, write a short next_thought, then pick next_tool_name and give next_tool_args as a JSON object.
- If a check failed, write the corrected FULL query and call validate_sql with it.
- If validate_sql passed{judge_rule}, call submit_answer with that exact query.
- Use retrieve_tables only when a needed table or column is missing from the schemas.
Tools:
{tools}"""
JUDGE_RULE = " and llm_judge_evaluate scored it 70% or more"
STALL_LIMIT = 3  # the loop ends after this many steps in a row that changed nothing (see progress_of)
STEP_MAX_TOKENS = 200  # a thought, a tool name and a full query as its argument
TRUNCATION_TRIES = 3


def step_limit_reached(steps: int) -> str:
    """Why the loop ended without an answer when it took all its ``steps`` (none, where it is off)."""
    return f"repair step limit reached ({steps} agent steps)"


class RepairAgent(dspy.ReAct):
    """ReAct with the question's tools, the agent's stop rules, and ``extract`` as the last word."""

    def __init__(self, signature: type[dspy.Signature], *, with_judge: bool, max_iters: int):
        super().__init__(signature, tool_specs(with_judge), max_iters)
        self.tools.pop("finish", None)
        listing = "\n".join(f"({i + 1}) {tool}" for i, tool in enumerate(self.tools.values()))
        instructions = AGENT_INSTRUCTIONS.format(judge_rule=JUDGE_RULE if JUDGE_TOOL in self.tools else "", tools=listing)
        self.react = dspy.Predict(
            dspy.Signature({**signature.input_fields}, instructions)
            .append("trajectory", dspy.InputField(), type_=str)
            .append("next_thought", dspy.OutputField(), type_=str)
            .append("next_tool_name", dspy.OutputField(), type_=Literal[tuple(self.tools)])
            .append("next_tool_args", dspy.OutputField(), type_=dict[str, Any])
        )

    def forward(self, state: AgentState, trajectory: dict[str, Any], max_steps: int, **inputs: Any) -> dspy.Prediction:
        """Take up to ``max_steps`` steps; then, if nothing was accepted, submit ``extract``'s query.

        Returns ``stop_reason``: why the loop ended without an accepted answer, or None.
        """
        tools = Tools(state)
        reason = self._steps(tools, trajectory, max_steps, inputs)
        if state.final_answer is None and max_steps > 0 and state.iteration < state.limits.max_iterations:
            self._extract(tools, trajectory, inputs)
        return dspy.Prediction(stop_reason=None if state.final_answer is not None else reason)

    def _steps(self, tools: Tools, trajectory: dict[str, Any], max_steps: int, inputs: dict[str, Any]) -> str | None:
        state = tools.state
        idle = 0  # steps in a row that validated no new query, found no new table and asked no judge
        for _ in range(max_steps):
            if state.final_answer is not None:
                return None
            if state.iteration >= state.limits.max_iterations:
                return f"iteration limit reached ({state.limits.max_iterations} tool calls)"
            if idle >= STALL_LIMIT:
                return f"stalled ({STALL_LIMIT} tool calls in a row changed nothing)"
            try:
                pred, error = self._predict(self.react, trajectory, {"max_tokens": STEP_MAX_TOKENS}, inputs)
            except ContextWindowExceededError as exc:
                return f"context window exceeded: {exc}"
            if pred is None:
                return error
            before = progress_of(state)
            take_step(tools, self.tools, trajectory, pred.next_thought, pred.next_tool_name, pred.next_tool_args)
            idle = idle + 1 if progress_of(state) == before else 0
        return None if state.final_answer is not None else step_limit_reached(max_steps)

    def _extract(self, tools: Tools, trajectory: dict[str, Any], inputs: dict[str, Any]) -> None:
        """ReAct's last word: the query the trajectory points to, submitted through the same checks."""
        try:
            pred, _ = self._predict(self.extract, trajectory, {}, inputs)
        except ContextWindowExceededError:
            return
        sql = str(pred.get("sql") or "").strip() if pred is not None else ""
        if sql:
            call_step(tools, trajectory, "Submit the query the steps point to.", tools.submit_answer,
                      query=sql, explanation="", confidence=tools.state.draft_confidence)

    def _predict(
        self, module: dspy.Module, trajectory: dict[str, Any], config: dict[str, Any], inputs: dict[str, Any]
    ) -> tuple[dspy.Prediction | None, str | None]:
        """One step's prediction; on a context overflow the oldest steps are dropped (in place) and it retries."""
        for _ in range(TRUNCATION_TRIES):
            try:
                return predict_or_error(module, trajectory=self.format_trajectory(trajectory), config=config, **inputs)
            except ContextWindowExceededError:
                self.truncate_trajectory(trajectory)
        raise ContextWindowExceededError(message="the trajectory does not fit the context window even when truncated")

    @staticmethod
    def format_trajectory(trajectory: dict[str, Any]) -> str:
        """The trajectory as the adapter renders input fields (as ``dspy.ReAct`` shows it)."""
        adapter = dspy.settings.adapter or dspy.ChatAdapter()
        signature = dspy.Signature(f"{', '.join(trajectory.keys())} -> x")
        return adapter.format_user_message_content(signature, trajectory)
