"""LM calls, tokens and cost of one question or one run, per model.

:func:`metered` wraps any block of DSPy calls. Inside it, on this thread, a DSPy callback counts
every LM call and DSPy's own usage tracker sums the tokens the LM reports. Prices come from
:mod:`programs.llm.pricing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker, track_usage

from text2sql_dspy.programs.llm.pricing import cost_usd


@dataclass
class ModelUsage:
    """Totals for one model."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: ModelUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd


@dataclass
class Usage:
    """Totals per model name, plus the sums across models."""

    by_model: dict[str, ModelUsage] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.by_model.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.by_model.values())

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.by_model.values())

    @property
    def cost_usd(self) -> float:
        return sum(m.cost_usd for m in self.by_model.values())

    def merge(self, other: Usage) -> None:
        for model, usage in other.by_model.items():
            self.by_model.setdefault(model, ModelUsage()).add(usage)

    def by_model_dict(self) -> dict[str, dict]:
        """Per model: calls, tokens and cost, as plain data."""
        return {name: asdict(u) for name, u in self.by_model.items()}

    @classmethod
    def from_tracker(cls, tracker: UsageTracker) -> Usage:
        usage = cls()
        for model, entries in tracker.usage_data.items():
            prompt = sum(int(e.get("prompt_tokens") or 0) for e in entries)
            completion = sum(int(e.get("completion_tokens") or 0) for e in entries)
            usage.by_model[model] = ModelUsage(len(entries), prompt, completion, cost_usd(model, prompt, completion))
        return usage

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        result = cls()
        for u in usages:
            result.merge(u)
        return result


class _CallCounter(BaseCallback):
    """Counts LM calls per model name (also for LMs that report no token usage)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        model = str(getattr(instance, "model", "unknown"))
        self.calls[model] = self.calls.get(model, 0) + 1


@contextmanager
def metered() -> Iterator[Usage]:
    """Count the LM calls made inside the block; the yielded :class:`Usage` is filled in on exit."""
    usage = Usage()
    counter = _CallCounter()
    callbacks = [*dspy.settings.get("callbacks", []), counter]
    with dspy.context(track_usage=True, callbacks=callbacks), track_usage() as tracker:
        try:
            yield usage
        finally:
            usage.merge(Usage.from_tracker(tracker))
            for model, calls in counter.calls.items():
                usage.by_model.setdefault(model, ModelUsage()).calls = calls
