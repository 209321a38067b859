"""Token log-probabilities from llama.cpp without ``logits_all``.

llama-cpp-python returns logprobs only for models loaded with ``logits_all=True``, which keeps
``n_ctx x vocab`` floats (5 GB for this model at 8k context) and computes the output layer for
every prompt token. :class:`LogprobRecorder` instead rides the sampler as a logits processor:
at each generation step it sees the logits llama.cpp already computed, and records the chosen
token's log-probability and the top alternatives. Cost: about 1 ms a generated token.

The result is lm15's ``TokenLogprob`` tuple, so DSPy shows it as ``Prediction.logprobs`` in the
OpenAI shape (``{"content": [{"token", "logprob", "top_logprobs": [...]}]}``), the same shape a
served model returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from dspy.lm15 import TokenLogprob, TopLogprob

from text2sql_dspy.programs.llm.fields import FIELD_OPEN, field_marker

__all__ = ["LogprobRecorder"]


class LogprobRecorder:
    """A llama-cpp-python logits processor that records each step's distribution (see module docstring)."""

    def __init__(self, top: int, piece: Callable[[int], str]):
        self.top = max(0, int(top))
        self.piece = piece  # token id -> its text
        self._base: int | None = None
        self._pending: tuple[np.ndarray, float] | None = None
        self.steps: list[tuple[int, float, list[tuple[int, float]]]] = []  # (chosen id, logprob, top alternatives)
        self._tops: list[list[tuple[int, float]]] = []

    def __call__(self, input_ids: Any, logits: np.ndarray) -> np.ndarray:
        n = len(input_ids)
        if self._base is None:
            self._base = n
        elif self._pending is not None:
            self._resolve(int(input_ids[n - 1]))
        row = np.asarray(logits, dtype=np.float32)
        peak = float(row.max())
        lse = peak + float(np.log(np.exp(row - peak, dtype=np.float32).sum(dtype=np.float64)))
        if self.top:
            k = min(self.top, row.size)
            idx = np.argpartition(-row, k - 1)[:k]
            idx = idx[np.argsort(-row[idx])]
            self._tops.append([(int(i), float(row[i]) - lse) for i in idx])
        else:
            self._tops.append([])
        self._pending = (row.copy(), lse)
        return logits

    def _resolve(self, chosen: int) -> None:
        assert self._pending is not None
        row, lse = self._pending
        self.steps.append((chosen, float(row[chosen]) - lse, self._tops[len(self.steps)]))
        self._pending = None

    def token_logprobs(self, text: str, greedy: bool, prefill: str = "") -> tuple[TokenLogprob, ...]:
        """The steps that produced ``text``, as lm15 ``TokenLogprob``s.

        A ``prefill`` that ``text`` starts with was given, not generated: it comes first as one
        entry with log-probability 0, so the entries still spell ``text``.

        The last step's token is never evaluated by llama.cpp, so it is not in ``input_ids``: under
        greedy decoding it is the arg-max; otherwise it is dropped. Steps past ``text`` (the
        end-of-turn token, a stop string) are dropped too.
        """
        if self._pending is not None and greedy:
            row, _ = self._pending
            self._resolve(int(np.argmax(row)))
        out: list[TokenLogprob] = []
        produced = ""
        if prefill and text.startswith(prefill):
            out.append(TokenLogprob(token=prefill, logprob=0.0))
            produced = prefill
        for chosen, logprob, alternatives in self.steps:
            if len(produced) >= len(text):
                break
            token = self.piece(chosen)
            produced += token
            out.append(TokenLogprob(
                token=token, logprob=logprob, token_id=chosen,
                top=tuple(TopLogprob(token=self.piece(i), logprob=lp) for i, lp in alternatives),
            ))
        return tuple(out)


def reply_tokens(logprobs: Any) -> list[dict[str, Any]]:
    """The token entries of a ``Prediction.logprobs`` (OpenAI shape), or [] when there are none."""
    if not logprobs:
        return []
    content = logprobs.get("content") if isinstance(logprobs, dict) else getattr(logprobs, "content", None)
    return [dict(t) for t in content or []]


def field_tokens(tokens: list[dict[str, Any]], marker: str) -> list[dict[str, Any]]:
    """The tokens of one ChatAdapter output field: after ``[[ ## marker ## ]]``, up to the next ``[[ ##``.

    The reply text is the tokens joined, so character offsets locate the field; a token counts if
    it starts inside the field's value (leading whitespace excluded).
    """
    text = "".join(str(t.get("token", "")) for t in tokens)
    head = field_marker(marker)
    start = text.find(head)
    if start < 0:
        return []
    start += len(head)
    while start < len(text) and text[start].isspace():
        start += 1
    end = text.find(FIELD_OPEN.rstrip(), start)
    end = len(text) if end < 0 else end
    while end > start and text[end - 1].isspace():
        end -= 1
    out, offset = [], 0
    for token in tokens:
        if start <= offset < end:
            out.append(token)
        offset += len(str(token.get("token", "")))
    return out


def mean_token_probability(tokens: list[dict[str, Any]]) -> float | None:
    """exp(mean log-probability) of ``tokens`` (their geometric-mean probability), or None without tokens."""
    values = [float(t["logprob"]) for t in tokens if t.get("logprob") is not None]
    return float(np.exp(np.mean(values))) if values else None


def lowest_token_probability(tokens: list[dict[str, Any]]) -> float | None:
    """The probability of the least likely of ``tokens``, or None without tokens."""
    values = [float(t["logprob"]) for t in tokens if t.get("logprob") is not None]
    return float(np.exp(min(values))) if values else None


def narrowest_margin(tokens: list[dict[str, Any]]) -> float | None:
    """The smallest lead of a written token over the likeliest token not written (top alternatives), in probability;
    None without alternatives."""
    margins = []
    for token in tokens:
        if token.get("logprob") is None:
            continue
        written = str(token.get("token", ""))
        others = [float(a["logprob"]) for a in token.get("top_logprobs") or [] if str(a.get("token", "")) != written
                  and a.get("logprob") is not None]
        margins.append(float(np.exp(token["logprob"])) - (float(np.exp(max(others))) if others else 0.0))
    return min(margins) if margins else None


def doubtful_tokens(tokens: list[dict[str, Any]], below: float = 0.5) -> int:
    """How many of ``tokens`` the model wrote with a probability under ``below``."""
    return sum(1 for t in tokens if t.get("logprob") is not None and float(np.exp(t["logprob"])) < below)


def probability_of_true(tokens: list[dict[str, Any]]) -> float | None:
    """P(true) / (P(true) + P(false)) at the first token of a boolean field, from its top alternatives.

    None when neither answer is among the alternatives (the caller keeps the written value).
    """
    if not tokens:
        return None
    first = tokens[0]
    candidates = list(first.get("top_logprobs") or []) or [first]
    mass = {"true": 0.0, "false": 0.0}
    for alt in candidates:
        word = str(alt.get("token", "")).strip().lower()
        for answer in mass:
            if word and answer.startswith(word) and len(word) >= 1 and word[0] in "tf":
                mass[answer] += float(np.exp(float(alt["logprob"])))
    total = mass["true"] + mass["false"]
    return mass["true"] / total if total > 0 else None
