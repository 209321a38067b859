"""LM calls, tokens and cost of one question or one run, per model, and the token prices that cost them.

:func:`metered` wraps any block of DSPy calls. Inside it, on this thread, a DSPy callback counts
every LM call and DSPy's own usage tracker sums the tokens the LM reports.

Prices come from LiteLLM's model cost map: :func:`price_for` gives ``(input, output)`` USD per 1M tokens for any
model string the map prices (``anthropic/claude-sonnet-4-5``, ``claude-haiku-4-5-20251001``: a provider prefix,
and a date or ``-latest`` suffix the map lacks, are tried without); the embedded model costs nothing and never
imports LiteLLM. :func:`cost_usd` returns ``0.0`` for a model the map does not price; :func:`price_known` tells a
free model from an unpriced one. The map is the copy installed with LiteLLM (pinned in pyproject.toml), never
fetched (:func:`~.llm.factory.import_litellm`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker, track_usage

from text2sql_dspy.programs.llm.factory import cut_replies, import_litellm, is_local_model, quiet_truncation_warnings

Price = tuple[float, float]

_SUFFIX = re.compile(r"(-\d{8}|-latest)$")


def _lookup_names(model: str) -> list[str]:
    """The keys to look ``model`` up by, in order: as given, without the provider, without a date suffix."""
    name = model.strip().lower()
    bare = name.rsplit("/", 1)[-1]
    return list(dict.fromkeys([name, bare, _SUFFIX.sub("", bare)]))


def price_for(model: str) -> Price | None:
    """``(input, output)`` USD per 1M tokens, or ``None`` if the model is unpriced."""
    if is_local_model(model):
        return (0.0, 0.0)
    cost_map = import_litellm().model_cost
    for name in _lookup_names(model):
        entry = cost_map.get(name) or {}
        prices = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if None not in prices:
            return (prices[0] * 1_000_000, prices[1] * 1_000_000)
    return None


def price_known(model: str) -> bool:
    """True if ``model`` has a price (the embedded model does, at 0)."""
    return price_for(model) is not None


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD cost of a call; ``0.0`` for unknown models (check :func:`price_known`)."""
    if prompt_tokens < 0 or completion_tokens < 0:
        raise ValueError("token counts must be non-negative")
    price = price_for(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


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
    cut_replies: int = 0  # replies cut before they ended: at their token cap, or in a repetition loop

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
        self.cut_replies += other.cut_replies

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
    """Count the LM calls made inside the block, and the replies cut; the yielded :class:`Usage` is filled in on
    exit. The cut replies are counted for any LM, also one not made by :func:`~.llm.factory.build_lm`."""
    quiet_truncation_warnings()  # the filter that counts them
    usage = Usage()
    counter = _CallCounter()
    cut_before = cut_replies()
    callbacks = [*dspy.settings.get("callbacks", []), counter]
    with dspy.context(track_usage=True, callbacks=callbacks), track_usage() as tracker:
        try:
            yield usage
        finally:
            usage.merge(Usage.from_tracker(tracker))
            for model, calls in counter.calls.items():
                usage.by_model.setdefault(model, ModelUsage()).calls = calls
            usage.cut_replies = cut_replies() - cut_before
