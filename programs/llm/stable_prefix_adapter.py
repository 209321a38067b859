"""A ChatAdapter whose prompts keep everything that does not change from question to question up front.

DSPy's ChatAdapter renders ``system (instructions) → demos → user (schema, question, format
reminder)``. The local engine reuses a prompt's KV cache only up to its first differing byte, so

* every new set of demos (each optimizer trial, each compiled program) would re-read the whole
  schema: for a 31-table database, minutes on 2 cores;
* each signature over the same database (the draft, the agent's repair step) would re-read it
  too, since their instructions differ ahead of it;
* the format reminder at the end of each user turn ("Respond with the corresponding output
  fields, starting with ...", 35-75 tokens) would be evaluated again on every call.

:class:`StablePrefixAdapter` renders ``system (schema, instructions, format reminder) → demos →
user (question)``: the schema is read once per database, whatever the signature and the demos,
and each call evaluates only its own inputs. Demos keep their own ``table_schemas``. Signatures
without a ``table_schemas`` input only get the reminder moved.

Where the LM can continue an assistant turn (:func:`~text2sql_dspy.programs.llm.factory.supports_prefill`,
the embedded model), the reply is prefilled with the first output field's marker, so a small
model starts with that field instead of echoing an input field or writing JSON. A reply that
still cannot be parsed is an error for the caller; there is no second, JSON-formatted call,
whose prompt would share no prefix with the first.
"""

from __future__ import annotations

import contextvars
from typing import Any

import dspy

from text2sql_dspy.programs.llm.factory import supports_prefill
from text2sql_dspy.programs.llm.fields import field_marker

__all__ = ["IN_SYSTEM_MESSAGE", "SCHEMA_FIELD", "StablePrefixAdapter", "schema_lead"]

SCHEMA_FIELD = "table_schemas"
IN_SYSTEM_MESSAGE = "(the database schema, given in the system message)"
_prefill = contextvars.ContextVar("text2sql_prefill", default=False)


class StablePrefixAdapter(dspy.ChatAdapter):
    """ChatAdapter with ``table_schemas`` leading the system message, the format reminder in it, and a
    prefilled first field marker where the LM supports it (see module docstring)."""

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("use_json_adapter_fallback", False)
        super().__init__(**kwargs)

    def __call__(self, lm: Any, *args: Any, **kwargs: Any) -> Any:
        token = _prefill.set(supports_prefill(lm))
        try:
            return super().__call__(lm, *args, **kwargs)
        finally:
            _prefill.reset(token)

    async def acall(self, lm: Any, *args: Any, **kwargs: Any) -> Any:
        token = _prefill.set(supports_prefill(lm))
        try:
            return await super().acall(lm, *args, **kwargs)
        finally:
            _prefill.reset(token)

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]],
               inputs: dict[str, Any]) -> list[dict[str, Any]]:
        schema = inputs.get(SCHEMA_FIELD)
        moved = SCHEMA_FIELD in signature.input_fields and isinstance(schema, str) and bool(schema.strip())
        messages = super().format(signature, demos, {**inputs, SCHEMA_FIELD: IN_SYSTEM_MESSAGE} if moved else inputs)
        system = f"{messages[0]['content']}\n\n{super().user_message_output_requirements(signature)}"
        if moved:
            system = f"{schema_lead(schema)}\n\n{system}"
        messages[0] = {**messages[0], "content": system}
        if _prefill.get() and signature.output_fields:
            messages.append({"role": "assistant", "content": reply_prefill(signature)})
        return messages

    def user_message_output_requirements(self, signature: type[dspy.Signature]) -> None:
        """None: the reminder is in the system message, where it is part of the cached prefix."""
        return None


def schema_lead(schema: str) -> str:
    """How the system message of every prompt over ``schema`` starts: the prefix its prompts share."""
    return f"{field_marker(SCHEMA_FIELD)}\n{schema}"


def reply_prefill(signature: type[dspy.Signature]) -> str:
    """How a reply to ``signature`` starts: its first output field's marker."""
    return field_marker(next(iter(signature.output_fields))) + "\n"
