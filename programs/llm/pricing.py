"""Token prices and cost arithmetic, read from LiteLLM's model cost map.

Contract: :func:`price_for` gives ``(input, output)`` USD per 1M tokens for any model string LiteLLM's map
prices (``anthropic/claude-sonnet-4-5``, ``claude-haiku-4-5-20251001``: a provider prefix, and a date or
``-latest`` suffix the map lacks, are tried without); the embedded model costs nothing and never imports
LiteLLM. :func:`cost_usd` returns ``0.0`` for a model the map does not price; :func:`price_known` tells a free
model from an unpriced one. The map is the copy installed with LiteLLM (pinned in pyproject.toml), never fetched.
"""

from __future__ import annotations

import re

from text2sql_dspy.programs.llm.factory import import_litellm, is_local_model

__all__ = ["Price", "price_known", "price_for", "cost_usd"]

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
