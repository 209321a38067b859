"""One drafting call: the SQL alone, and its confidence from the model's own token probabilities.

Every program drafts through :func:`draft_sql`, so they all read a reply, cap its length and
score its confidence the same way.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import dspy

from text2sql_dspy.programs.agents.carried import shown_demos
from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.programs.llm.factory import logprob_config, supports_seed
from text2sql_dspy.programs.llm.fields import FIELD_END, field_marker
from text2sql_dspy.programs.llm.shared_llama import loop_end
from text2sql_dspy.programs.llm.token_logprobs import (
    doubtful_tokens,
    field_tokens,
    lowest_token_probability,
    mean_token_probability,
    narrowest_margin,
    reply_tokens,
)
from text2sql_dspy.programs.progress import emit
from text2sql_dspy.programs.query.reply import clean_sql
from text2sql_dspy.programs.source import DataSource

__all__ = ["DRAFT_MAX_TOKENS", "LOOP_ERROR", "NEUTRAL_CONFIDENCE", "Draft", "draft_sql"]

# The draft's (and the edit's) reply: its one field, the SQL, ends at FIELD_END; the cap is 1.5 times the longest
# query a question needs, and its field markers, so that it cuts a run-on reply and never an answer.
DRAFT_MAX_TOKENS = 320
LOOP_ERROR = "the reply repeated itself until it was cut"
NEUTRAL_CONFIDENCE = 0.5  # for LMs that return no token probabilities (Anthropic)
COMPLETED = f"\n\n{field_marker('completed')}"  # where ChatAdapter ends a reply of several fields


@dataclass(frozen=True)
class Draft:
    """A drafted query (cleaned), its confidence in [0, 1], and why drafting failed, if it did; where the LM gives
    token probabilities, the least likely token's (``weakest``) and how many tokens the SQL took."""

    sql: str
    confidence: float
    error: str | None = None
    weakest: float | None = None
    tokens: int = 0
    doubts: int = 0  # tokens written with a probability under 0.5
    margin: float | None = None  # the smallest lead of a written token over the likeliest other
    truncated: bool = False  # the reply was cut before it ended: in a repetition loop, or at its token cap
    generator: str = "draft"  # what wrote it (:mod:`.generators`): a generator's name, or how the program made it
    seconds: float = 0.0  # the drafting call's wall time


def draft_sql(
    predictor: dspy.Predict, lm: Any, *, source: DataSource | None = None, temperature: float | None = None,
    seed: int | None = None, max_tokens: int = DRAFT_MAX_TOKENS, shown: Mapping[str, str] = MappingProxyType({}),
    **inputs: Any,
) -> Draft:
    """Run ``predictor`` (over :class:`~signatures.DraftSQL`) on ``lm``; never raises for a bad reply.

    Of ``predictor``'s demos (a compiled program's), those :func:`~.carried.shown_demos` keeps are shown: a demo
    over another database is shown only when carried, under its own schema and marked as that database's, since
    shown bare it teaches a small model names that do not exist here (this database's own verified pairs come in
    ``facts``). The reply is cleaned (:func:`~..db.reply.clean_sql`) and, given the ``source`` it is for, made
    runnable on that engine (:meth:`~.source.DataSource.runnable`), with the tables ``table_schemas`` showed under
    other names (``shown``: :attr:`~.schema_view.SchemaView.renamed`) renamed back.

    Greedy unless ``temperature`` is given (then ``seed`` tells samples apart, also in DSPy's
    cache). Confidence is the geometric-mean probability of the SQL's tokens where ``lm`` returns
    token log-probabilities, else :data:`NEUTRAL_CONFIDENCE`. SQL whose tokens repeat themselves (a runaway
    literal, ``'rec000…'``: the embedded engine cuts such a reply there, a served model runs it to the cap) is no
    draft: no SQL, :data:`LOOP_ERROR`, confidence 0, whatever its token probabilities say.
    """
    fields = predictor.signature.output_fields
    # The SQL is the last field: a reply of one field ends where the next would start, one of several at "completed".
    config = logprob_config(lm, max_tokens=max_tokens, stop=[FIELD_END if len(fields) == 1 else COMPLETED])
    if temperature is not None:
        config.update(temperature=temperature, rollout_id=seed)
        if supports_seed(lm):
            config["seed"] = seed
    if predictor.demos:  # set even when none is kept: without "demos", Predict shows all of its own
        inputs["demos"] = shown_demos(predictor.demos, source)
    emit("drafting", sample=seed or 0, redraft=bool(inputs.get("hints")))
    start = time.perf_counter()
    with dspy.context(lm=lm):
        pred, error = predict_or_error(predictor, config=config, **inputs)
    seconds = time.perf_counter() - start
    if pred is None:
        return Draft("", 0.0, error, seconds=seconds)
    reply = reply_tokens(pred.get("logprobs"))
    tokens = field_tokens(reply, "sql")
    if loop_end([str(t.get("token", "")) for t in tokens]) is not None:
        return Draft("", 0.0, LOOP_ERROR, tokens=len(tokens), truncated=True, seconds=seconds)
    sql = clean_sql(str(pred.get("sql") or ""))
    if sql and source is not None:
        sql = source.runnable(sql, shown)
    confidence = mean_token_probability(tokens)
    return Draft(sql, NEUTRAL_CONFIDENCE if confidence is None else confidence,
                 None if sql else "the reply held no SQL",
                 weakest=lowest_token_probability(tokens), tokens=len(tokens), doubts=doubtful_tokens(tokens),
                 margin=narrowest_margin(tokens), truncated=_ran_to_cap(reply, max_tokens, next(iter(fields))),
                 seconds=seconds)


def _ran_to_cap(reply: list[dict[str, Any]], cap: int, first: str = "sql") -> bool:
    """Whether a reply's tokens fill its ``cap``. A prefilled field marker (of the ``first`` field: one entry) was not
    generated; the last token of a sampled reply carries no probability, so one short of the cap counts."""
    generated = len(reply) - int(bool(reply) and reply[0].get("token") == field_marker(first) + "\n")
    return generated >= cap - 1
