"""DSPy's canonical requests in llama.cpp's terms: chat messages, ``response_format`` and finish reasons.

* :func:`request_to_messages` renders a Request as OpenAI-style chat messages for the model's own chat
  template. Text-only: thinking parts are dropped, data parts and tool calls become JSON text, tool results
  and developer messages become user turns; other parts raise ``dspy.lm15.UnsupportedFeatureError``.
* :func:`prefill_of` is the start of the reply that a final assistant message gives (a *prefill*: the
  model continues that turn, as Anthropic's API does).
* ``response_format`` maps to llama-cpp-python's JSON / JSON-schema constrained decoding, and llama.cpp's
  finish reasons to DSPy's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dspy.lm15 import (
    DataPart,
    RefusalPart,
    Request,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedFeatureError,
)

__all__ = ["PROVIDER", "FINISH_REASONS", "prefill_of", "request_to_messages", "llama_response_format"]

PROVIDER = "local"  # the provider that dspy.lm15 errors name


def _text_of(parts: Sequence[Any]) -> str:
    """Flatten message parts to the text a text-only chat template can carry."""
    chunks: list[str] = []
    for part in parts:
        if isinstance(part, (TextPart, RefusalPart)):
            chunks.append(part.text)
        elif isinstance(part, ThinkingPart):
            continue  # reasoning traces are not replayed
        elif isinstance(part, DataPart):
            chunks.append(json.dumps(part.value, ensure_ascii=False))
        elif isinstance(part, ToolCallPart):
            chunks.append(json.dumps({"tool_call": part.name, "arguments": part.input}, ensure_ascii=False))
        elif isinstance(part, ToolResultPart):
            chunks.append(_text_of(part.content))
        else:
            kind = getattr(part, "type", type(part).__name__)
            raise UnsupportedFeatureError(
                f"The local model is text-only; a {kind!r} part cannot be sent to it.",
                provider=PROVIDER,
            )
    return "\n".join(chunks)


def prefill_of(messages: list[dict[str, str]]) -> str:
    """The start of the reply that a final assistant message gives (a prefill, see module docstring), or ""."""
    return messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""


def request_to_messages(request: Request) -> list[dict[str, str]]:
    """Render a canonical Request as OpenAI-style chat messages for llama.cpp."""
    messages: list[dict[str, str]] = []
    if request.system is not None:
        system = request.system if isinstance(request.system, str) else _text_of(request.system)
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        content = _text_of(message.parts)
        if message.role == "developer":
            if not messages:
                messages.append({"role": "system", "content": content})
            else:
                messages.append({"role": "user", "content": f"[developer]\n{content}"})
        elif message.role == "tool":
            messages.append({"role": "user", "content": f"[tool result]\n{content}"})
        else:
            messages.append({"role": message.role, "content": content})
    return messages


def llama_response_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """Canonical ``response_format`` -> llama-cpp-python's ``{"type": "json_object", "schema"?: ...}``."""
    if not response_format:
        return None
    if response_format.get("type") == "json_schema" and isinstance(response_format.get("schema"), dict):
        return {"type": "json_object", "schema": response_format["schema"]}
    return {"type": "json_object"}


FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "function_call": "tool_call"}
