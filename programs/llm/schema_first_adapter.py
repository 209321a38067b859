"""A ChatAdapter that puts the database schema in the system message, ahead of the few-shot demos.

DSPy's ChatAdapter renders ``system (instructions) → demos → user (schema, question)``. The
local engine reuses a prompt's KV cache only up to its first differing byte, so every new set of
demos (each optimizer trial, each compiled program) would re-read the whole schema: for a
31-table database, minutes on 2 cores. :class:`SchemaFirstAdapter` renders
``system (instructions, schema) → demos → user (question)`` instead: the schema is read once
per database and instructions, whatever the demos. Demos keep their own ``table_schemas``.

Only signatures with a ``table_schemas`` input are changed; every other call is plain ChatAdapter.
"""

from __future__ import annotations

from typing import Any

import dspy

__all__ = ["SCHEMA_FIELD", "SchemaFirstAdapter"]

SCHEMA_FIELD = "table_schemas"
IN_SYSTEM_MESSAGE = "(the database schema, given in the system message)"


class SchemaFirstAdapter(dspy.ChatAdapter):
    """ChatAdapter with the ``table_schemas`` input moved into the system message (see module docstring)."""

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]], inputs: dict[str, Any]) -> list[dict[str, Any]]:
        schema = inputs.get(SCHEMA_FIELD)
        if SCHEMA_FIELD not in signature.input_fields or not isinstance(schema, str) or not schema.strip():
            return super().format(signature, demos, inputs)
        messages = super().format(signature, demos, {**inputs, SCHEMA_FIELD: IN_SYSTEM_MESSAGE})
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n[[ ## {SCHEMA_FIELD} ## ]]\n{schema}"}
        return messages
