"""The ChatAdapter's reply protocol, in one place: field markers, where a field ends, how many token alternatives to
ask for.

DSPy's ChatAdapter writes each field as ``[[ ## name ## ]]`` followed by its value. Everything
that reads or writes that protocol (the prompt adapter, the readers of token probabilities, the
SQL cleaner, the drafting and judging calls) takes the marker from here. Whether an LM can return
token log-probabilities at all is the LM factory's to say (:func:`~.factory.logprob_config`).
"""

from __future__ import annotations

__all__ = ["FIELD_END", "FIELD_OPEN", "TOP_LOGPROBS", "field_marker"]

FIELD_OPEN = "[[ ## "  # how a field marker starts
FIELD_END = "\n\n[["  # where ChatAdapter starts the next field (or its completion marker): a stop sequence
TOP_LOGPROBS = 5  # alternatives per token: enough to find both "True" and "False" at a verdict


def field_marker(name: str) -> str:
    """``[[ ## name ## ]]``: the line that opens field ``name`` in a prompt or a reply."""
    return f"{FIELD_OPEN}{name} ## ]]"

