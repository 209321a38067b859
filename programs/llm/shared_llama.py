"""The loaded GGUF model, one per ``(model path, n_ctx)`` per process, with its lock, KV prefix cache and counters.

* :func:`get_shared_llama` returns the process-wide :class:`SharedLlama` for ``(model path, n_ctx)``,
  loaded lazily on first use; every engine for that pair shares it. Its lock serialises calls, so agent and
  judge LMs and DSPy's worker threads (``dspy.Evaluate(num_threads=...)``, ``dspy.Parallel``) are safe.
* :meth:`SharedLlama.chat` runs one chat completion with the model's own chat template; a final assistant
  message is a prefill that the model continues (:func:`prefill_of`). It reports how many
  prompt tokens the KV cache served. A prompt over ``n_ctx`` raises ``dspy.lm15.ContextLengthError`` (it is
  never truncated), other rejected requests ``InvalidRequestError``, and any other llama.cpp failure
  ``ServerError`` after resetting the model state.
* A reply whose tokens start repeating themselves (:func:`repeats_itself`: one token 24 times in a row, or a cycle of
  2 to 24 tokens over 48 tokens and three cycles) is cut there by a stopping criterion (:class:`RepetitionGuard`),
  not left to run to its ``max_tokens``; its ``finish_reason`` is then ``"length"``, as for a reply cut at its
  cap. A request with a ``response_format`` (JSON-constrained decoding by llama-cpp-python's chat handler, which
  takes no stopping criterion) is bounded by its cap alone. ``EngineStats.truncated`` counts the replies cut either way.
* The KV prefix cache keeps slim states in RAM and, unless ``TEXT2SQL_KV_CACHE_BYTES=0``, on disk
  (:mod:`~text2sql_dspy.programs.llm.prefix_cache`).
* :func:`clear_shared_caches` forgets every instance's KV state; :func:`release_shared_llamas` frees them
  (also at interpreter exit).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dspy.lm15 import ContextLengthError, InvalidRequestError, ServerError

from text2sql_dspy.programs.llm.llama_settings import LlamaSettings, engine_settings, model_params_override
from text2sql_dspy.programs.llm.prefix_cache import common_prefix

if TYPE_CHECKING:  # pragma: no cover
    import llama_cpp
    import numpy as np

__all__ = [
    "PROVIDER",
    "DEFAULT_N_CTX",
    "DEFAULT_PREFIX_CACHE",
    "EngineStats",
    "LOOP_RUN",
    "LOOP_REPEATS",
    "LOOP_SPAN",
    "LOOP_WINDOW",
    "RepetitionGuard",
    "SharedLlama",
    "get_shared_llama",
    "clear_shared_caches",
    "release_shared_llamas",
    "prefill_of",
    "loop_end",
    "repeats_itself",
]

PROVIDER = "local"  # the provider that dspy.lm15 errors name

DEFAULT_N_CTX = 12288  # room for a whole ~8k-token schema (programs/retrieval/schema_view.py)
# Whether the shared instance keeps a LlamaRAMCache of KV states (see
# benchmarks/bench_engine.py): it lets alternating prompt families (agent and
# judge) each reuse their own prefix instead of evicting each other's.
DEFAULT_PREFIX_CACHE = True
DEFAULT_PREFIX_CACHE_ENTRIES = 6
DEFAULT_PREFIX_CACHE_BYTES = 1 << 30
DEFAULT_DISK_CACHE_BYTES = 2 << 30
KV_CACHE_BYTES_ENV = "TEXT2SQL_KV_CACHE_BYTES"
_CTX_ERROR = re.compile(r"Requested tokens \((\d+)\) exceed context window")

# What a repetition loop is (:func:`repeats_itself`): no SQL a question needs repeats itself this long.
LOOP_RUN = 24  # one token this many times in a row
LOOP_SPAN = 48  # a cycle of LOOP_PERIODS tokens repeating over at least this many tokens
LOOP_REPEATS = 3  # and at least this many times (what a long cycle, a repeated clause or subquery, must cover)
LOOP_PERIODS = range(2, 25)
LOOP_WINDOW = max(LOOP_SPAN, LOOP_REPEATS * LOOP_PERIODS[-1])  # the most tail tokens a loop can need


@dataclass
class EngineStats:
    """Cumulative counters of one shared model instance (all engines using it)."""

    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: int = 0  # replies cut before they ended: at their max_tokens, or in a repetition loop
    loops_cut: int = 0  # of those, the replies cut in a repetition loop
    seconds: float = 0.0
    load_seconds: float = 0.0

    @property
    def prefix_hit_ratio(self) -> float:
        """Share of prompt tokens served from the KV cache (0.0 with no calls)."""
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "prefix_hit_ratio": self.prefix_hit_ratio}


def _make_prefix_cache(
    capacity_bytes: int, max_entries: int, *, model_path: Path | None = None, n_ctx: int = DEFAULT_N_CTX,
    settings: LlamaSettings | None = None,
) -> llama_cpp.BaseLlamaCache:
    """The engine's KV prefix cache: slim states in RAM, and on disk unless ``TEXT2SQL_KV_CACHE_BYTES=0``.

    See :mod:`~text2sql_dspy.programs.llm.prefix_cache`. The disk folder is keyed by the model
    file, llama-cpp-python's version and the settings that shape a KV state.
    """
    from text2sql_dspy.programs.llm.prefix_cache import DiskPrefixStore, PrefixCache

    disk = None
    disk_bytes = _disk_cache_bytes()
    if model_path is not None and disk_bytes > 0:
        disk = DiskPrefixStore(_disk_cache_folder(model_path, n_ctx, settings), n_ctx=n_ctx, capacity_bytes=disk_bytes)
    return PrefixCache(capacity_bytes, max_entries, disk)


def _disk_cache_bytes() -> int:
    value = os.environ.get(KV_CACHE_BYTES_ENV, "").strip()
    if not value:
        return DEFAULT_DISK_CACHE_BYTES
    try:
        return max(0, int(float(value)))
    except ValueError:
        from text2sql_dspy.programs.errors import ConfigurationError

        raise ConfigurationError(f"{KV_CACHE_BYTES_ENV}={value!r} must be a number of bytes "
                                 "(0 turns the disk cache off).") from None


def _disk_cache_folder(model_path: Path, n_ctx: int, settings: LlamaSettings | None) -> Path:
    import llama_cpp

    from text2sql_dspy.programs.cache import default_cache_dir

    stat = model_path.stat()
    shape = f"{model_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{llama_cpp.__version__}:{n_ctx}"
    if settings is not None:
        shape += f":{settings.use_extra_bufts}:{settings.flash_attn}:{settings.type_kv}"
    return default_cache_dir() / "kv" / hashlib.sha256(shape.encode()).hexdigest()[:16]


def _slim_state_llama(base: type) -> type:
    """``base`` (``llama_cpp.Llama``) whose ``save_state`` keeps one row of logits, not ``n_batch`` rows.

    llama-cpp-python saves the state after every completion when a cache is set, and its own
    ``save_state`` copies ``n_batch x vocab`` floats. ``load_state`` broadcasts
    the one row, and re-evaluates the last token anyway, so nothing is lost.
    """
    import ctypes

    import llama_cpp

    class SlimStateLlama(base):  # type: ignore[misc, valid-type]
        def save_state(self) -> Any:
            size = llama_cpp.llama_state_get_size(self._ctx.ctx)
            buffer = (ctypes.c_uint8 * int(size))()
            used = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size))
            if used > int(size):
                raise RuntimeError("Failed to copy llama state data")
            last = self.scores[max(0, min(self.n_tokens, self.scores.shape[0]) - 1)]
            return llama_cpp.LlamaState(
                input_ids=self.input_ids.copy(), scores=last[None, :].copy(), n_tokens=self.n_tokens,
                llama_state=bytes(memoryview(buffer)[:used]), llama_state_size=used, seed=self._seed,
            )

    return SlimStateLlama


def repeats_itself(tokens: Sequence[Hashable]) -> bool:
    """Whether ``tokens`` (a reply's tokens so far) end in a repetition loop: the same token :data:`LOOP_RUN` times
    in a row, or a cycle of 2 to 24 tokens repeated so that the loop covers :data:`LOOP_SPAN` tokens and
    :data:`LOOP_REPEATS` cycles.

    Only the last :data:`LOOP_WINDOW` tokens are read, so a caller may pass just those.
    """
    n = len(tokens)
    if n >= LOOP_RUN and all(tokens[i] == tokens[n - 1] for i in range(n - LOOP_RUN, n - 1)):
        return True
    return any(_cycles(tokens, period) for period in LOOP_PERIODS)


def _cycles(tokens: Sequence[Hashable], period: int) -> bool:
    """Whether ``tokens`` end in a cycle of ``period`` tokens as long as a loop of that period must be."""
    n, span = len(tokens), max(LOOP_SPAN, LOOP_REPEATS * period)
    return n >= span and all(tokens[i] == tokens[i - period] for i in range(n - span + period, n))


def loop_end(tokens: Sequence[Hashable]) -> int | None:
    """How many of ``tokens`` a reply had when it first ended in a loop (where :class:`RepetitionGuard` cuts it),
    or None when it never did."""
    for end in range(min(LOOP_RUN, LOOP_SPAN), len(tokens) + 1):
        if repeats_itself(tokens[max(0, end - LOOP_WINDOW):end]):
            return end
    return None


class RepetitionGuard:
    """A llama-cpp-python stopping criterion (``(input_ids, logits) -> bool``) that stops a reply whose generated
    tokens end in a loop (:func:`repeats_itself`); ``fired`` says whether it did.

    llama.cpp passes the prompt and the tokens generated so far (the one just sampled is not among them, and is
    dropped when this stops the reply); ``prompt_tokens`` says where the reply starts.
    """

    def __init__(self, prompt_tokens: int):
        self.start = int(prompt_tokens)
        self.fired = False

    def __call__(self, input_ids: Any, logits: Any = None) -> bool:
        if not self.fired:
            tail = input_ids[max(self.start, len(input_ids) - LOOP_WINDOW):]
            self.fired = repeats_itself(tail.tolist() if hasattr(tail, "tolist") else list(tail))
        return self.fired


def prefill_of(messages: list[dict[str, str]]) -> str:
    """The start of the reply that a final assistant message gives (a prefill: the model continues that turn, as
    Anthropic's API does), or ""."""
    return messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""


class SharedLlama:
    """One loaded ``llama_cpp.Llama`` plus its lock and counters."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        prefix_cache: bool = DEFAULT_PREFIX_CACHE,
        prefix_cache_entries: int = DEFAULT_PREFIX_CACHE_ENTRIES,
        prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_BYTES,
        settings: LlamaSettings | None = None,
    ) -> None:
        import llama_cpp

        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.settings = settings or engine_settings(n_threads)
        self.n_threads = self.settings.n_threads
        self.lock = threading.Lock()
        self.stats = EngineStats()
        start = time.perf_counter()
        with model_params_override(use_extra_bufts=self.settings.use_extra_bufts):
            self.llm = _slim_state_llama(llama_cpp.Llama)(
                model_path=str(self.model_path), n_ctx=n_ctx, verbose=False, **self.settings.llama_kwargs()
            )
        self.stats.load_seconds = time.perf_counter() - start
        self._formatter: Any = None
        self.prefix_cache = prefix_cache
        if prefix_cache:
            self.llm.set_cache(self._prefix_cache(prefix_cache_bytes, prefix_cache_entries))

    def _prefix_cache(self, capacity_bytes: int, entries: int) -> llama_cpp.BaseLlamaCache:
        return _make_prefix_cache(capacity_bytes, entries, model_path=self.model_path, n_ctx=self.n_ctx,
                                  settings=self.settings)

    def _served_prefix(self, before: list[np.ndarray], prompt_ids: np.ndarray) -> int:
        n_prompt = len(prompt_ids)
        if n_prompt == 0:
            return 0
        best = max((common_prefix(ids, prompt_ids) for ids in before), default=0)
        # llama.cpp re-evaluates the last prompt token to refresh the logits.
        return min(best, n_prompt - 1)

    def _known_states(self) -> list[np.ndarray]:
        """Token sequences whose KV state can be reused: the live context and the RAM cache."""
        import numpy as np

        states = [self.llm.input_ids[: self.llm.n_tokens].copy()]
        cache = getattr(self.llm, "cache", None)
        for key in list(getattr(cache, "cache_state", {}).keys()):
            states.append(np.asarray(key, dtype=states[0].dtype))
        disk = getattr(cache, "disk", None)
        if disk is not None:
            states.extend(disk.index.values())
        return states

    def held_share(self, system_start: str) -> float:
        """The share of the tokens that open a prompt whose system message starts with ``system_start`` which a KV
        state this process can reuse (the live context, the RAM cache, the disk cache) already holds: 1.0 where
        that opening would be read from the cache, near 0 where it would be read anew."""
        import numpy as np

        rendered = self._chat_formatter()(messages=[{"role": "system", "content": system_start}])
        text = rendered.prompt[: rendered.prompt.find(system_start) + len(system_start)]
        with self.lock:
            ids = np.asarray(self.llm.tokenize(text.encode("utf-8"), add_bos=not rendered.added_special, special=True))
            states = self._known_states()
        if not len(ids):
            return 1.0
        return max((common_prefix(state, ids) for state in states), default=0) / len(ids)

    def chat(self, messages: list[dict[str, str]], **options: Any) -> tuple[dict[str, Any], int]:
        """Run one chat completion; returns ``(llama result dict, prompt tokens served from cache)``."""
        with self.lock:
            start = time.perf_counter()
            before = self._known_states()
            try:
                result = self._complete(messages, options)
            except ValueError as exc:
                self.stats.errors += 1
                match = _CTX_ERROR.search(str(exc))
                if match:
                    raise ContextLengthError(
                        f"Prompt of {match.group(1)} tokens does not fit the local model's context window "
                        f"n_ctx={self.n_ctx} (reserve room for max_tokens too). Shorten the prompt or raise "
                        "n_ctx (TEXT2SQL_N_CTX / build_lm(..., n_ctx=...)); Qwen2.5-Coder supports up to 32768.",
                        provider=PROVIDER,
                    ) from exc
                raise InvalidRequestError(f"llama.cpp rejected the request: {exc}", provider=PROVIDER) from exc
            except Exception as exc:
                self.stats.errors += 1
                self.llm.reset()  # drop a possibly inconsistent KV state
                raise ServerError(f"llama.cpp failed: {type(exc).__name__}: {exc}", provider=PROVIDER) from exc
            usage = result.get("usage") or {}
            n_prompt = int(usage.get("prompt_tokens") or 0)
            cached = self._served_prefix(before, self.llm.input_ids[:n_prompt])
            self.stats.calls += 1
            self.stats.prompt_tokens += n_prompt
            self.stats.cached_prompt_tokens += cached
            self.stats.completion_tokens += int(usage.get("completion_tokens") or 0)
            choice = (result.get("choices") or [{}])[0]
            self.stats.truncated += int(choice.get("finish_reason") == "length")
            self.stats.loops_cut += int(bool(choice.get("repetition")))
            self.stats.seconds += time.perf_counter() - start
            return result, cached

    def _complete(self, messages: list[dict[str, str]], options: dict[str, Any]) -> dict[str, Any]:
        """The model's own chat template rendered and continued (from a prefilled assistant turn, where the last
        message is one) under a :class:`RepetitionGuard`; ``create_chat_completion`` where a ``response_format``
        asks for constrained decoding (and nothing is prefilled), or the GGUF has no chat template."""
        import llama_cpp

        prefill = prefill_of(messages)
        if not prefill and (options.get("response_format") or not self.llm.metadata.get("tokenizer.chat_template")):
            return self.llm.create_chat_completion(messages=messages, stream=False, **options)
        # ends with the assistant turn's opening
        rendered = self._chat_formatter()(messages=messages[:-1] if prefill else messages)
        prompt = self.llm.tokenize((rendered.prompt + prefill).encode("utf-8"), add_bos=not rendered.added_special,
                                   special=True)
        options = {k: v for k, v in options.items() if k != "response_format"}
        rstop = [rendered.stop] if isinstance(rendered.stop, str) else list(rendered.stop or [])
        options["stop"] = list(options.get("stop") or []) + rstop
        guard = RepetitionGuard(len(prompt))
        options["stopping_criteria"] = llama_cpp.StoppingCriteriaList([guard])
        result = self.llm.create_completion(prompt=prompt, stream=False, **options)
        choice = result["choices"][0]
        return {
            "id": result.get("id"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": prefill + choice["text"]},
                         "finish_reason": "length" if guard.fired else choice.get("finish_reason"),
                         "repetition": guard.fired}],
            "usage": result.get("usage") or {},
        }

    def _chat_formatter(self) -> Any:
        """The model's own chat template, rendered as ``create_chat_completion`` renders it."""
        if self._formatter is None:
            from llama_cpp import llama_chat_format

            template = self.llm.metadata.get("tokenizer.chat_template")
            if not template:
                raise InvalidRequestError("this GGUF has no chat template, so a reply cannot be prefilled",
                                          provider=PROVIDER)
            eos, bos = self.llm.token_eos(), self.llm.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=self.llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=self.llm._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        return self._formatter

    def piece(self, token: int) -> str:
        """The text of one token (bytes that are not valid UTF-8 on their own are replaced)."""
        return self.llm.detokenize([token]).decode("utf-8", errors="replace")

    def tokenize(self, text: str) -> list[int]:
        with self.lock:
            return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def clear_kv(self) -> None:
        """Forget the live KV state and the prefix cache (for cold-start measurements)."""
        with self.lock:
            self.llm.reset()  # n_tokens=0: the next evaluation starts from scratch
            cache = getattr(self.llm, "cache", None)
            if cache is not None and hasattr(cache, "cache_state"):
                cache.cache_state.clear()

    def set_prefix_cache(self, enabled: bool, *, slim: bool = True, entries: int = DEFAULT_PREFIX_CACHE_ENTRIES,
                         capacity_bytes: int = DEFAULT_PREFIX_CACHE_BYTES) -> None:
        """Switch the KV-state RAM cache; ``slim=False`` installs a stock ``llama_cpp.LlamaRAMCache``."""
        import llama_cpp

        with self.lock:
            self.prefix_cache = enabled
            if not enabled:
                self.llm.set_cache(None)
            elif slim:
                self.llm.set_cache(self._prefix_cache(capacity_bytes, entries))
            else:
                self.llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=capacity_bytes))

    def close(self) -> None:
        with self.lock:
            close = getattr(self.llm, "close", None)
            if callable(close):
                close()


_registry: dict[tuple[str, int], SharedLlama] = {}
_registry_lock = threading.Lock()


def get_shared_llama(
    model_path: str | Path | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    n_threads: int | None = None,
    prefix_cache: bool = DEFAULT_PREFIX_CACHE,
) -> SharedLlama:
    """The process-wide instance for ``(model_path, n_ctx)``, loading it on first use.

    ``model_path=None`` assembles/verifies the embedded model
    (:func:`programs.llm.model_files.ensure_local_model`). The first caller's
    ``n_threads`` / ``prefix_cache`` win for an already-loaded instance.
    """
    if model_path is None:
        from text2sql_dspy.programs.llm.model_files import ensure_local_model

        model_path = ensure_local_model()
    path = Path(model_path).expanduser().resolve()
    key = (str(path), int(n_ctx))
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = SharedLlama(path, n_ctx=n_ctx, n_threads=n_threads, prefix_cache=prefix_cache)
            _registry[key] = shared
        return shared


def clear_shared_caches() -> None:
    """Forget every loaded instance's KV state and prefix cache, so a measurement starts cold."""
    with _registry_lock:
        items = list(_registry.values())
    for shared in items:
        shared.clear_kv()
    _other_engine("clear_xllama_caches")


def release_shared_llamas() -> None:
    """Free every shared instance (tests, benchmarks); later calls reload lazily."""
    with _registry_lock:
        items = list(_registry.values())
        _registry.clear()
    for shared in items:
        shared.close()
    _other_engine("release_shared_xllamas")


def _other_engine(function: str) -> None:
    """Call ``function`` of the xllamacpp server's module too, where this process has imported it (nothing else)."""
    import sys

    module = sys.modules.get("text2sql_dspy.programs.llm.xllamacpp_server")
    if module is not None:
        getattr(module, function)()


# Free the models before interpreter shutdown: llama-cpp-python's own finalizer then finds its
# modules torn down and prints an ignored TypeError.
atexit.register(release_shared_llamas)
