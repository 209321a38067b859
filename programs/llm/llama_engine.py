"""A DSPy 3.4 engine that runs the embedded GGUF through llama-cpp-python.

Contract:

* :class:`LlamaCppEngine` implements DSPy's engine protocol
  (``complete(Request) -> Response``, ``stream``, ``close``) and is passed as
  ``dspy.LM("local/qwen2.5-coder-1.5b", engine=LlamaCppEngine())``;
  :class:`AsyncLlamaCppEngine` is its ``async_engine=`` counterpart.
* Every engine for the same ``(model path, n_ctx)`` shares ONE
  ``llama_cpp.Llama`` per process (:func:`~.shared_llama.get_shared_llama`), loaded lazily on
  first use and guarded by a lock, so agent and judge LMs and DSPy's worker
  threads (``dspy.Evaluate(num_threads=...)``, ``dspy.Parallel``) are safe;
  calls are serialised.
* Generation uses the model's own chat template (``create_chat_completion``),
  greedy decoding at temperature 0 (the default), ``max_tokens`` and ``stop``
  from the request, and JSON / JSON-schema constrained decoding when the
  request carries ``response_format`` (DSPy's ``JSONAdapter``).
* A reply that starts repeating itself (one token 24 times in a row, or a cycle of 2 to 24 tokens over 48 tokens
  and three cycles) is cut there (:class:`~.shared_llama.RepetitionGuard`) and answered with
  ``finish_reason="length"``, as a reply cut at ``max_tokens`` is; its text is what came before the cut.
* A request whose last message is the assistant's is a *prefill*: the model continues that
  turn (the reply is the prefill plus what the model wrote), as Anthropic's API does. The
  adapter uses it to start each reply with its first field marker, so a small model cannot
  open with another field or a JSON object.
* Usage (``input_tokens``, ``output_tokens`` and ``cache_read_tokens`` = prompt
  tokens served from the KV cache) is reported in the Response, so
  ``track_usage`` / ``get_lm_usage()`` / ``lm.history`` show it.
* Over-long prompts are NOT truncated (cutting the middle of a DSPy prompt
  would silently drop field markers or instructions). They raise
  ``dspy.lm15.ContextLengthError`` naming ``n_ctx``, which DSPy surfaces as
  ``dspy.ContextWindowExceededError``; ``dspy.ReAct`` reacts to that error by
  truncating its trajectory and retrying.
* ``config.logprobs`` (DSPy: ``logprobs=True, top_logprobs=k``) returns token log-probabilities
  in the Response, recorded while sampling (:mod:`~text2sql_dspy.programs.llm.token_logprobs`).
* Requests the local model cannot serve (tools, images) raise
  ``dspy.lm15.UnsupportedFeatureError``; other llama.cpp failures raise
  ``dspy.lm15.ServerError`` after resetting the model state.
* :func:`request_to_messages` renders a Request as OpenAI-style chat messages for the model's own chat
  template. Text-only: thinking parts are dropped, data parts and tool calls become JSON text, tool results
  and developer messages become user turns; other parts raise ``dspy.lm15.UnsupportedFeatureError``.
  ``response_format`` maps to llama-cpp-python's JSON / JSON-schema constrained decoding, and llama.cpp's
  finish reasons to DSPy's.

The shared model instance is in :mod:`~text2sql_dspy.programs.llm.shared_llama`; its public names are importable
from here too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from dspy.lm15 import (
    DataPart,
    Message,
    RefusalPart,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UnsupportedFeatureError,
    Usage,
    response_to_events,
)

from text2sql_dspy.programs.llm.shared_llama import (
    DEFAULT_N_CTX,
    DEFAULT_PREFIX_CACHE,
    PROVIDER,
    EngineStats,
    RepetitionGuard,
    SharedLlama,
    clear_shared_caches,
    get_shared_llama,
    loop_end,
    prefill_of,
    release_shared_llamas,
    repeats_itself,
)
from text2sql_dspy.programs.llm.token_logprobs import LogprobRecorder

__all__ = [
    "LOCAL_MODEL_NAME",
    "DEFAULT_N_CTX",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_PREFIX_CACHE",
    "EngineStats",
    "RepetitionGuard",
    "SharedLlama",
    "LlamaCppEngine",
    "AsyncLlamaCppEngine",
    "get_shared_llama",
    "clear_shared_caches",
    "release_shared_llamas",
    "loop_end",
    "repeats_itself",
    "request_to_messages",
    "llama_response_format",
]

logger = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "local/qwen2.5-coder-1.5b"
DEFAULT_MAX_TOKENS = 1024

# llama.cpp generation options a caller may pass through Config.extensions.
_EXTENSION_OPTIONS = frozenset({"repeat_penalty", "min_p", "typical_p", "mirostat_mode", "mirostat_tau",
                                "mirostat_eta"})

# llama.cpp's finish reasons -> DSPy's
FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "function_call": "tool_call"}


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


class LlamaCppEngine:
    """DSPy engine over the shared in-process llama.cpp model (see module docstring)."""

    # Capability hints read by DSPy adapters (dspy.clients.capabilities).
    supports_function_calling = False
    supports_reasoning = False
    supports_response_schema = True
    supported_params = frozenset(
        {"temperature", "max_tokens", "top_p", "top_k", "stop", "seed", "response_format",
         "frequency_penalty", "presence_penalty", "logprobs", "top_logprobs"}
    )

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        prefix_cache: bool = DEFAULT_PREFIX_CACHE,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if n_ctx < 256:
            raise ValueError(f"n_ctx must be at least 256, got {n_ctx}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = int(n_ctx)
        self.n_threads = n_threads
        self.prefix_cache = prefix_cache
        self.default_max_tokens = default_max_tokens
        self._resolved_path: Path | None = None

    # -- model access ------------------------------------------------------
    def load(self) -> SharedLlama:
        """Load (or fetch) the shared model instance now rather than on first call."""
        if self._resolved_path is None:
            if self.model_path is not None:
                self._resolved_path = self.model_path.expanduser().resolve()
            else:
                from text2sql_dspy.programs.llm.model_files import ensure_local_model

                self._resolved_path = ensure_local_model()
        return get_shared_llama(
            self._resolved_path, n_ctx=self.n_ctx, n_threads=self.n_threads, prefix_cache=self.prefix_cache
        )

    def held_share(self, system_start: str) -> float:
        """How much of a prompt opening with ``system_start`` is already read (:meth:`SharedLlama.held_share`)."""
        return self.load().held_share(system_start)

    @property
    def stats(self) -> EngineStats:
        """Counters of the shared instance (loads the model if needed)."""
        return self.load().stats

    # -- engine protocol ---------------------------------------------------
    def complete(self, request: Request) -> Response:
        from dspy.clients.engines.base import validate_request

        validate_request(request)
        if request.tools:
            raise UnsupportedFeatureError(
                "The local llama.cpp engine does not do native tool calling; use DSPy's text-based tool "
                "use (ChatAdapter/JSONAdapter with use_native_function_calling=False).",
                provider=PROVIDER,
            )
        config = request.config
        messages = request_to_messages(request)
        options: dict[str, Any] = {
            "temperature": 0.0 if config.temperature is None else float(config.temperature),
            "max_tokens": config.max_tokens or self.default_max_tokens,
            "stop": list(config.stop),
            "repeat_penalty": 1.0,
        }
        if config.top_p is not None:
            options["top_p"] = config.top_p
        if config.top_k is not None:
            options["top_k"] = config.top_k
        if config.seed is not None:
            options["seed"] = config.seed
        if config.frequency_penalty is not None:
            options["frequency_penalty"] = config.frequency_penalty
        if config.presence_penalty is not None:
            options["presence_penalty"] = config.presence_penalty
        fmt = llama_response_format(config.response_format)
        if fmt is not None:
            options["response_format"] = fmt
        for key, value in (config.extensions or {}).items():
            if key in _EXTENSION_OPTIONS:
                options[key] = value
            else:
                logger.debug("LlamaCppEngine ignores unsupported option %r", key)

        shared = self.load()
        recorder = None
        if config.logprobs is not None:
            import llama_cpp

            recorder = LogprobRecorder(config.logprobs, shared.piece)
            options["logits_processor"] = llama_cpp.LogitsProcessorList([recorder])
        result, cached = shared.chat(messages, **options)
        choice = (result.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = result.get("usage") or {}
        return Response(
            logprobs=recorder.token_logprobs(text, greedy=options["temperature"] == 0.0, prefill=prefill_of(messages))
            if recorder else None,
            id=result.get("id") or None,
            model=request.model,
            message=Message.assistant([TextPart(text)]),
            finish_reason=FINISH_REASONS.get(choice.get("finish_reason") or "stop", "stop"),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                cache_read_tokens=cached,
            ),
        )

    def stream(self, request: Request) -> Iterator[Any]:
        """One-shot stream: the whole completion as start/delta/end events."""
        return response_to_events(self.complete(request))

    def close(self) -> None:
        """No-op: the shared model belongs to the process (see :func:`release_shared_llamas`)."""

    # -- (de)serialisation for program.save()/dspy.load --------------------
    def dump_state(self) -> dict[str, Any]:
        return {
            "model_path": str(self.model_path) if self.model_path is not None else None,
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "prefix_cache": self.prefix_cache,
            "default_max_tokens": self.default_max_tokens,
        }

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> LlamaCppEngine:
        return cls(
            state.get("model_path"),
            n_ctx=int(state.get("n_ctx") or DEFAULT_N_CTX),
            n_threads=state.get("n_threads"),
            prefix_cache=bool(state.get("prefix_cache", DEFAULT_PREFIX_CACHE)),
            default_max_tokens=int(state.get("default_max_tokens") or DEFAULT_MAX_TOKENS),
        )

    def __repr__(self) -> str:
        return f"LlamaCppEngine(n_ctx={self.n_ctx}, prefix_cache={self.prefix_cache})"


class AsyncLlamaCppEngine:
    """Async counterpart for ``dspy.LM(..., async_engine=...)``: runs the sync engine in a worker thread."""

    def __init__(self, sync: LlamaCppEngine) -> None:
        self.sync = sync

    async def complete(self, request: Request) -> Response:
        import asyncio

        return await asyncio.to_thread(self.sync.complete, request)

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        for event in response_to_events(await self.complete(request)):
            yield event

    def dump_state(self) -> dict[str, Any]:
        return self.sync.dump_state()

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> AsyncLlamaCppEngine:
        return cls(LlamaCppEngine.load_state(state))
