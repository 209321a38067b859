"""The trajectory: one question's tool calls as ReAct records them (thought, tool, args, observation).

A fixed move of the agent calls its tool as Python (:func:`call_step`); the ReAct loop's step calls the tool
its LM named (:func:`take_step`). Both record the step from the tool's result object and count the
iteration the same way, so the trace and the iteration count mean the same in both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dspy

from text2sql_dspy.programs.agents.recovery import MALFORMED_REPLY_ERRORS
from text2sql_dspy.programs.agents.state import AgentState
from text2sql_dspy.programs.agents.tools import Refusal, Tools

__all__ = ["call_step", "record_step", "reasoning_steps", "take_step"]


def take_step(tools: Tools, allowed: dict[str, Any], trajectory: dict[str, Any], thought: str, name: str, args: Any) -> Any:
    """Call tool ``name`` (one of ``allowed``) with ``args``, record the step, count the iteration; the tool's result.

    A tool that is not allowed, or arguments that do not fit, give a :class:`~.tools.Refusal`
    whose text tells the agent what to do instead.
    """
    return _recorded(tools, trajectory, thought, name, args, call_tool(tools, allowed, name, args))


def call_step(tools: Tools, trajectory: dict[str, Any], thought: str, tool: Callable[..., Any], **args: Any) -> Any:
    """Call ``tool`` (a method of ``tools``) with ``args`` as Python, record the step, count the iteration; its result."""
    return _recorded(tools, trajectory, thought, tool.__name__, args, tool(**args))


def _recorded(tools: Tools, trajectory: dict[str, Any], thought: str, name: str, args: Any, result: Any) -> Any:
    record_step(trajectory, thought, name, args, result.render())
    tools.state.iteration += 1
    return result


def call_tool(tools: Tools, allowed: dict[str, Any], name: str, args: Any) -> Any:
    if name not in allowed:
        return Refusal(f"Unknown tool {name!r}. Use one of: {', '.join(allowed)}.")
    if not isinstance(args, dict):
        return Refusal(f"next_tool_args must be a JSON object of arguments for {name}.")
    try:
        return dspy.Tool(getattr(tools, name))(**args)  # dspy.Tool checks the arguments against the tool's types
    except MALFORMED_REPLY_ERRORS as exc:
        return Refusal(f"Bad arguments for {name}: {exc}. Expected: {allowed[name].args}.")


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


def progress_of(state: AgentState) -> tuple[int, int, int]:
    """What a step can change: queries validated, tables found, judge verdicts."""
    return state.validation_attempts, len(state.retrieved_tables), state.judge_calls


def _step_numbers(trajectory: dict[str, Any]) -> list[int]:
    return sorted(int(key.removeprefix("thought_")) for key in trajectory if key.startswith("thought_"))
