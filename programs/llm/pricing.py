"""Token prices and cost arithmetic.

Contract: ``PRICES`` maps a canonical model name to ``(input, output)`` USD per
1M tokens. :func:`cost_usd` accepts any model string (``anthropic/`` or other
provider prefixes and date suffixes such as ``-20250929`` are ignored) and
returns ``0.0`` for unknown models; use :func:`price_known` to tell a free
model from an unpriced one.
"""

from __future__ import annotations

import re

__all__ = ["PRICES", "Price", "canonical_model_name", "price_known", "price_for", "cost_usd"]

Price = tuple[float, float]

PRICES: dict[str, Price] = {
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-5": (15.0, 75.0),
    "claude-haiku-3": (0.25, 1.25),
    "qwen2.5-coder-1.5b": (0.0, 0.0),  # the embedded local model
}

_ALIASES: dict[str, str] = {
    "local": "qwen2.5-coder-1.5b",
    "claude-3-haiku": "claude-haiku-3",
    "claude-sonnet-4.5": "claude-sonnet-4-5",
    "claude-haiku-4.5": "claude-haiku-4-5",
    "claude-opus-4.5": "claude-opus-4-5",
}

_DATE_SUFFIX = re.compile(r"(-\d{8}|-latest)$")


def canonical_model_name(model: str) -> str:
    """Lower-case name without provider prefix or date/``-latest`` suffix."""
    name = model.strip().lower()
    if name in _ALIASES:
        return _ALIASES[name]
    if "/" in name:
        name = name.rsplit("/", 1)[1]
    name = _DATE_SUFFIX.sub("", name)
    return _ALIASES.get(name, name)


def price_for(model: str) -> Price | None:
    """``(input, output)`` USD per 1M tokens, or ``None`` if the model is unpriced."""
    return PRICES.get(canonical_model_name(model))


def price_known(model: str) -> bool:
    """True if ``model`` has an entry in the price table (the local model does, at 0)."""
    return price_for(model) is not None


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD cost of a call; ``0.0`` for unknown models (check :func:`price_known`)."""
    if prompt_tokens < 0 or completion_tokens < 0:
        raise ValueError("token counts must be non-negative")
    price = price_for(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
