"""A DSPy 3.4 engine that runs the embedded GGUF through xllamacpp: llama.cpp from a prebuilt wheel, no compiler.

An option beside :class:`~.llama_engine.LlamaCppEngine` (llama-cpp-python, built from source at install), chosen
with ``TEXT2SQL_ENGINE=xllamacpp`` (:func:`~.factory.build_lm`). The product's default is unchanged.

Contract (the same as :class:`~.llama_engine.LlamaCppEngine`'s, point by point):

* :class:`XLlamaCppEngine` implements DSPy's engine protocol (``complete(Request) -> Response``, ``stream``,
  ``close``). It subclasses :class:`~.llama_engine.LlamaCppEngine`, so every check for the embedded model
  (:func:`~.factory.is_embedded_model`: prefilled replies, token log-probabilities, ``held_share``) holds for it.
* One :class:`~.xllamacpp_server.SharedXLlama` per ``(model path, n_ctx)`` per process: xllamacpp's in-process
  llama.cpp server (``xllamacpp.Server``) with one slot, loaded lazily, its calls serialised by a lock (the server is
  thread-safe itself; the lock keeps the prefix-cache bookkeeping and the slot's state consistent).
* The prompt is the model's own chat template rendered in-process (:class:`~.chat_template.ChatTemplate`, byte
  for byte what llama-cpp-python's ``Jinja2ChatFormatter`` renders), plus the prefill where the last message is the
  assistant's; it is tokenized by the server and sent as token ids to the text-completion endpoint. The reply
  is the prefill plus what the model wrote. A ``response_format`` becomes the server's ``json_schema``.
* Greedy at temperature 0 (the default); ``max_tokens``, ``stop``, ``seed``, ``top_p``, ``top_k``, penalties
  from the request; ``repeat_penalty`` 1.0.
* The reply is streamed token by token; a reply that starts repeating itself
  (:func:`~.shared_llama.repeats_itself`) is stopped there, as :class:`~.shared_llama.RepetitionGuard` stops it
  on llama-cpp-python, and answered with ``finish_reason="length"``; its text is every token written up to the cut.
* Token log-probabilities (``config.logprobs``) come from the server (the full distribution at each step, before
  sampling), in the Response's shape: a prefill first with log-probability 0, then one entry per token of the
  text, each with its top alternatives.
* KV prefix cache: the server reuses its slot's KV state for a prompt's common prefix, and keeps earlier
  prompts' states in RAM (``cache_ram_mib``, 1 GiB as the RAM tier of
  :mod:`~.prefix_cache`). The disk tier is built around the server's slot save and restore
  (:class:`~.prefix_cache.SlotFileStore`): a prompt that brings at least 256 tokens no saved state holds is saved to
  ``<cache>/kv/xl-<key>/``, and a new process restores the saved state that shares the longest prefix with its
  prompt before reading it. Unless ``TEXT2SQL_KV_CACHE_BYTES=0``; at most 2 GiB, oldest out first; a bad entry
  is a miss, never an error.
* A prompt of ``n_ctx`` tokens or more raises ``dspy.lm15.ContextLengthError`` naming ``n_ctx`` (never
  truncated); other failures raise ``InvalidRequestError`` / ``ServerError``.
* Settings come from :func:`~.llama_settings.engine_settings` (threads, batch, flash attention, KV type, extra
  buffer types). The prebuilt x86-64 CPU wheel has no AMX kernels, so llama.cpp issue 20824's crash cannot
  occur in it; the extra-buffer-types default (off) is kept as it is for llama-cpp-python, to compare like with
  like.
* The server also listens on a loopback port, which this engine needs for tokenizing and for slot save and
  restore; it demands a random API key, so no other local process can use it, and serves no web UI.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from dspy.lm15 import (
    Message,
    Request,
    Response,
    TextPart,
    TokenLogprob,
    TopLogprob,
    UnsupportedFeatureError,
    Usage,
)

from text2sql_dspy.programs.llm.llama_engine import (
    _EXTENSION_OPTIONS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_PREFIX_CACHE,
    FINISH_REASONS,
    AsyncLlamaCppEngine,
    LlamaCppEngine,
    request_to_messages,
)
from text2sql_dspy.programs.llm.shared_llama import PROVIDER
from text2sql_dspy.programs.llm.xllamacpp_server import SharedXLlama, _piece, get_shared_xllama

__all__ = ["ENGINE_NAME", "AsyncXLlamaCppEngine", "XLlamaCppEngine", "reply_logprobs"]

logger = logging.getLogger(__name__)

ENGINE_NAME = "xllamacpp"


# -- token log-probabilities ----------------------------------------------------------------------------------------
def reply_logprobs(steps: Sequence[dict[str, Any]], text: str, *, prefill: str = "", top: int = 0,
                   piece: Callable[[int], str]) -> tuple[TokenLogprob, ...]:
    """The server's per-token entries (``{"id", "logprob", "top_logprobs": [{"id", "bytes", "logprob"}]}``) as the
    Response's ``TokenLogprob``s, in :class:`~.token_logprobs.LogprobRecorder`'s shape: a ``prefill`` that ``text``
    starts with comes first as one entry of log-probability 0; then one entry per token until the entries spell
    ``text`` (steps past it, an end-of-turn token or a stop string, are dropped), each with ``top`` alternatives.

    ``piece`` gives a token's text from its id (the server's own ``token`` field of the chosen token is the text it
    sent with it, which differs while a stop string may be starting).
    """
    out: list[TokenLogprob] = []
    produced = ""
    if prefill and text.startswith(prefill):
        out.append(TokenLogprob(token=prefill, logprob=0.0))
        produced = prefill
    for step in steps:
        if len(produced) >= len(text):
            break
        token = piece(int(step["id"]))
        produced += token
        alternatives = list(step.get("top_logprobs") or [])[:top]
        out.append(TokenLogprob(
            token=token, logprob=float(step["logprob"]), token_id=int(step["id"]),
            top=tuple(TopLogprob(token=_piece(a), logprob=float(a["logprob"])) for a in alternatives),
        ))
    return tuple(out)

# -- the engine -----------------------------------------------------------------------------------------------------
class XLlamaCppEngine(LlamaCppEngine):
    """DSPy engine over the shared xllamacpp server (see the module docstring)."""

    def load(self) -> SharedXLlama:  # type: ignore[override]
        """Load (or fetch) the shared model instance now rather than on first call."""
        if self._resolved_path is None:
            if self.model_path is not None:
                self._resolved_path = self.model_path.expanduser().resolve()
            else:
                from text2sql_dspy.programs.llm.model_files import ensure_local_model

                self._resolved_path = ensure_local_model()
        return get_shared_xllama(self._resolved_path, n_ctx=self.n_ctx, n_threads=self.n_threads,
                                 prefix_cache=self.prefix_cache)

    def complete(self, request: Request) -> Response:
        from dspy.clients.engines.base import validate_request

        validate_request(request)
        if request.tools:
            raise UnsupportedFeatureError(
                "The local xllamacpp engine does not do native tool calling; use DSPy's text-based tool "
                "use (ChatAdapter/JSONAdapter with use_native_function_calling=False).",
                provider=PROVIDER,
            )
        config = request.config
        messages = request_to_messages(request)
        options: dict[str, Any] = {
            "temperature": 0.0 if config.temperature is None else float(config.temperature),
            "max_tokens": config.max_tokens or self.default_max_tokens,
            "stop": list(config.stop),
            "top_p": config.top_p, "top_k": config.top_k, "seed": config.seed,
            "frequency_penalty": config.frequency_penalty, "presence_penalty": config.presence_penalty,
            "response_format": config.response_format or None,
            "logprobs": config.logprobs,
        }
        for key, value in (config.extensions or {}).items():
            if key in _EXTENSION_OPTIONS:
                options[key] = value
            else:
                logger.debug("XLlamaCppEngine ignores unsupported option %r", key)
        shared = self.load()
        result, cached = shared.chat(messages, **options)
        choice = result["choices"][0]
        text = choice["message"]["content"]
        usage = result["usage"]
        logprobs = None
        if config.logprobs is not None:
            logprobs = reply_logprobs(result["steps"], text, prefill=result["prefill"], top=int(config.logprobs),
                                      piece=shared.step_piece(result["steps"]))
        return Response(
            logprobs=logprobs,
            id=result.get("id") or None,
            model=request.model,
            message=Message.assistant([TextPart(text)]),
            finish_reason=FINISH_REASONS.get(choice.get("finish_reason") or "stop", "stop"),
            usage=Usage(input_tokens=int(usage["prompt_tokens"]), output_tokens=int(usage["completion_tokens"]),
                        cache_read_tokens=cached),
        )

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> XLlamaCppEngine:
        return cls(
            state.get("model_path"),
            n_ctx=int(state.get("n_ctx") or DEFAULT_N_CTX),
            n_threads=state.get("n_threads"),
            prefix_cache=bool(state.get("prefix_cache", DEFAULT_PREFIX_CACHE)),
            default_max_tokens=int(state.get("default_max_tokens") or DEFAULT_MAX_TOKENS),
        )

    def __repr__(self) -> str:
        return f"XLlamaCppEngine(n_ctx={self.n_ctx}, prefix_cache={self.prefix_cache})"


class AsyncXLlamaCppEngine(AsyncLlamaCppEngine):
    """Async counterpart for ``dspy.LM(..., async_engine=...)``."""

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> AsyncXLlamaCppEngine:
        return cls(XLlamaCppEngine.load_state(state))

