"""A ChatAdapter whose prompts keep everything that does not change from question to question up front.

DSPy's ChatAdapter renders ``system (instructions) → demos → user (schema, question, format
reminder)``. The local engine reuses a prompt's KV cache only up to its first differing byte, so

* every new set of demos (each optimizer trial, each compiled program) would re-read the whole
  schema: for a 31-table database, minutes on 2 cores;
* the format reminder at the end of each user turn ("Respond with the corresponding output
  fields, starting with ...", 35-75 tokens) would be evaluated again on every call.

:class:`StablePrefixAdapter` renders ``system (instructions, format reminder, schema) → demos →
user (question)``: the schema is read once per database and instructions, whatever the demos,
and each call evaluates only its own inputs. Demos keep their own ``table_schemas``. Signatures
without a ``table_schemas`` input only get the reminder moved.
"""

from __future__ import annotations

from typing import Any

import dspy

__all__ = ["IN_SYSTEM_MESSAGE", "SCHEMA_FIELD", "StablePrefixAdapter"]

SCHEMA_FIELD = "table_schemas"
IN_SYSTEM_MESSAGE = "(the database schema, given in the system message)"


class StablePrefixAdapter(dspy.ChatAdapter):
    """ChatAdapter with the format reminder and ``table_schemas`` in the system message (see module docstring)."""

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]) -> list[dict[str, Any]]:
        schema = inputs.get(SCHEMA_FIELD)
        moved = SCHEMA_FIELD in signature.input_fields and isinstance(schema, str) and bool(schema.strip())
        messages = super().format(signature, demos, {**inputs, SCHEMA_FIELD: IN_SYSTEM_MESSAGE} if moved else inputs)
        system = f"{messages[0]['content']}\n\n{super().user_message_output_requirements(signature)}"
        if moved:
            system += f"\n\n[[ ## {SCHEMA_FIELD} ## ]]\n{schema}"
        messages[0] = {**messages[0], "content": system}
        return messages

    def user_message_output_requirements(self, signature: type[dspy.Signature]) -> None:
        """None: the reminder is in the system message, where it is part of the cached prefix."""
        return None
