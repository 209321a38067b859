"""The in-process llama.cpp server behind :class:`~.xllamacpp_engine.XLlamaCppEngine`: one :class:`SharedXLlama` per
``(model path, n_ctx)`` per process (:func:`get_shared_xllama`), freed by :func:`release_shared_xllamas` (and at exit).

A :class:`SharedXLlama` is one ``xllamacpp.Server`` with one slot, loaded when it is built, its calls serialised by a
lock; :meth:`SharedXLlama.chat` renders the prompt (:class:`~.chat_template.ChatTemplate`), streams the reply, cuts
one that repeats itself and keeps the prefix cache's RAM and disk tiers (:class:`~.prefix_cache.SlotFileStore`), as
:mod:`.xllamacpp_engine`'s docstring states point by point. xllamacpp is imported only when a server starts.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from dspy.lm15 import ContextLengthError, InvalidRequestError, ServerError

from text2sql_dspy.programs.llm.chat_template import ChatTemplate
from text2sql_dspy.programs.llm.llama_engine import _EXTENSION_OPTIONS, DEFAULT_N_CTX, DEFAULT_PREFIX_CACHE
from text2sql_dspy.programs.llm.llama_settings import LlamaSettings, engine_settings
from text2sql_dspy.programs.llm.prefix_cache import SlotFileStore, common_prefix
from text2sql_dspy.programs.llm.shared_llama import (
    DEFAULT_PREFIX_CACHE_BYTES,
    DEFAULT_PREFIX_CACHE_ENTRIES,
    LOOP_WINDOW,
    PROVIDER,
    EngineStats,
    _disk_cache_bytes,
    prefill_of,
    repeats_itself,
)

__all__ = ["SharedXLlama", "clear_xllama_caches", "get_shared_xllama", "release_shared_xllamas"]

logger = logging.getLogger(__name__)


# -- token text -----------------------------------------------------------------------------------------------------
def _piece(entry: dict[str, Any]) -> str:
    raw = entry.get("bytes")
    return bytes(raw).decode("utf-8", errors="replace") if raw is not None else str(entry.get("token", ""))


# -- the disk tier of the prefix cache ------------------------------------------------------------------------------
def _disk_folder(model_path: Path, n_ctx: int, settings: LlamaSettings) -> Path:
    import xllamacpp

    from text2sql_dspy.programs.cache import default_cache_dir

    stat = model_path.stat()
    shape = (f"{model_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:xllamacpp-{xllamacpp.__version__}:{n_ctx}"
             f":{settings.use_extra_bufts}:{settings.flash_attn}:{settings.type_kv}")
    return default_cache_dir() / "kv" / ("xl-" + hashlib.sha256(shape.encode()).hexdigest()[:16])


# -- the shared model -----------------------------------------------------------------------------------------------
class SharedXLlama:
    """One ``xllamacpp.Server`` over the GGUF, with its lock, chat template, prefix-cache bookkeeping and counters."""

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
        self.model_path = Path(model_path)
        self.n_ctx = int(n_ctx)
        self.settings = settings or engine_settings(n_threads)
        self.n_threads = self.settings.n_threads
        self.prefix_cache = prefix_cache
        self.prefix_cache_bytes = prefix_cache_bytes
        self.lock = threading.Lock()
        self.stats = EngineStats()
        self.last_timings: dict[str, Any] = {}
        self._seen: deque[np.ndarray] = deque(maxlen=max(1, prefix_cache_entries))  # prompts the slot or RAM hold
        self._pieces: dict[int, str] = {}
        self.disk: SlotFileStore | None = None
        disk_bytes = _disk_cache_bytes()
        if prefix_cache and disk_bytes > 0:
            self.disk = SlotFileStore(_disk_folder(self.model_path, self.n_ctx, self.settings),
                                      capacity_bytes=disk_bytes)
        self._api_key = secrets.token_hex(16)
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        start = time.perf_counter()
        self.server = self._start_server()
        self.stats.load_seconds = time.perf_counter() - start
        props = self._get("/props")
        template = props.get("chat_template") or ""
        if not template:
            raise InvalidRequestError("this GGUF has no chat template, so a reply cannot be prefilled",
                                      provider=PROVIDER)
        self.template = ChatTemplate(template, eos_token=props.get("eos_token") or "",
                                     bos_token=props.get("bos_token") or "")

    def server_params(self) -> Any:
        """The ``xllamacpp.CommonParams`` this model is served with (see :mod:`.xllamacpp_engine`'s docstring)."""
        import xllamacpp as xlc

        s = self.settings
        p = xlc.CommonParams()
        p.model.path = str(self.model_path)
        p.n_ctx = self.n_ctx
        p.n_parallel = 1  # one slot with the whole context; calls are serialised as on llama-cpp-python
        p.cpuparams.n_threads = s.n_threads
        p.cpuparams_batch.n_threads = s.n_threads
        p.n_batch = s.n_batch
        p.n_ubatch = s.n_ubatch
        p.flash_attn_type = (xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED if s.flash_attn
                             else xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        if s.type_kv is not None:
            p.cache_type_k = p.cache_type_v = xlc.ggml_type(s.type_kv)
        p.no_extra_bufts = not s.use_extra_bufts
        p.fit_params = False  # n_ctx as asked, never fitted to a device
        p.warmup = False  # llama-cpp-python does not warm up either
        p.ctx_shift = False  # an over-long prompt is an error, never silently shifted
        p.cache_prompt = True
        p.cache_ram_mib = (self.prefix_cache_bytes >> 20) if self.prefix_cache else 0
        p.slot_save_path = str(self.disk.folder) + os.sep if self.disk is not None else ""
        p.endpoint_slots = True
        p.api_keys = [self._api_key]
        if hasattr(p, "ui"):
            p.ui = False
        else:  # xllamacpp 2026.4.x calls it webui
            p.webui = False
        p.n_threads_http = 2
        p.verbosity = 0
        return p

    def _start_server(self) -> Any:
        import xllamacpp as xlc

        if self.disk is not None:
            self.disk.folder.mkdir(parents=True, exist_ok=True)
        try:
            return xlc.Server(self.server_params())
        except Exception as exc:  # noqa: BLE001 - the native server's failures carry no common type
            raise ServerError(f"xllamacpp could not load {self.model_path}: {type(exc).__name__}: {exc}",
                              provider=PROVIDER) from exc

    # -- the server's HTTP side (loopback, with this process's key) -------------------------------------------------
    def _http(self, path: str, body: dict[str, Any] | None = None, timeout: float = 300.0) -> dict[str, Any]:
        url = self.server.listening_address + path
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self._api_key}"})
        try:
            with self._opener.open(request, timeout=timeout) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode(errors="replace")
            raise InvalidRequestError(f"xllamacpp {path}: HTTP {exc.code}: {detail}", provider=PROVIDER) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ServerError(f"xllamacpp {path}: {exc}", provider=PROVIDER) from exc

    def _get(self, path: str) -> dict[str, Any]:
        return self._http(path)

    def _tokenize(self, text: str) -> list[int]:
        # the rendered template carries its special tokens, so none are added (llama-cpp-python: add_bos=False)
        reply = self._http("/tokenize", {"content": text, "add_special": False, "parse_special": True})
        return [int(t["id"]) if isinstance(t, dict) else int(t) for t in reply.get("tokens", [])]

    def tokenize(self, text: str) -> list[int]:
        with self.lock:
            return self._tokenize(text)

    def piece(self, token: int) -> str:
        """The text of one token (bytes that are not valid UTF-8 on their own are replaced)."""
        text = self._pieces.get(token)
        if text is None:
            detok = self._http("/detokenize", {"tokens": [int(token)]})
            text = self._pieces[token] = str(detok.get("content", ""))
        return text

    # -- the prefix cache ---------------------------------------------------------------------------------------
    def _known_states(self) -> list[np.ndarray]:
        states = list(self._seen)
        if self.disk is not None:
            states.extend(self.disk.index.values())
        return states

    def held_share(self, system_start: str) -> float:
        """The share of the tokens that open a prompt whose system message starts with ``system_start`` which a KV
        state this process can reuse (the slot, the RAM cache, the disk cache) already holds."""
        rendered = self.template.render([{"role": "system", "content": system_start}], add_generation_prompt=False)
        text = rendered[: rendered.find(system_start) + len(system_start)]
        with self.lock:
            ids = self._tokenize(text)
            states = self._known_states()
        if not ids:
            return 1.0
        return max((common_prefix(state, ids) for state in states), default=0) / len(ids)

    def _restore_from_disk(self, ids: Sequence[int]) -> None:
        """Load the saved state sharing the longest prefix with ``ids`` into the slot, where it beats what the slot
        and the RAM cache hold."""
        if self.disk is None:
            return
        name, length = self.disk.best(ids)
        held = max((common_prefix(state, ids) for state in self._seen), default=0)
        if name is None or length <= held:
            return
        try:
            self._http("/slots/0?action=restore", {"filename": self.disk.slot_file(name).name})
        except (InvalidRequestError, ServerError) as exc:
            logger.info("KV cache entry %s unusable (%s); dropped", name, exc)
            self.disk.drop(name)
            return
        self.disk.touch(name)
        self._seen.append(np.asarray(self.disk.index[name]))

    def _save_to_disk(self, ids: Sequence[int]) -> None:
        if self.disk is None or not self.disk.worth_saving(ids):
            return
        name = self.disk.name_for(ids)
        try:
            self._http("/slots/0?action=save", {"filename": self.disk.slot_file(name).name})
        except (InvalidRequestError, ServerError) as exc:  # a full or read-only disk costs speed, never the answer
            logger.warning("could not save a KV state to %s: %s", self.disk.folder, exc)
            self.disk.drop(name)
            return
        self.disk.added(name, ids)

    # -- completions --------------------------------------------------------------------------------------------
    def chat(self, messages: list[dict[str, str]], **options: Any) -> tuple[dict[str, Any], int]:
        """Run one chat completion; returns ``(result dict, prompt tokens served from cache)``.

        The result has llama-cpp-python's chat shape (``choices[0].message.content``, ``finish_reason``,
        ``repetition``, ``usage``) plus ``steps``: the server's per-token entries (id, log-probability, top
        alternatives) of every token written.
        """
        with self.lock:
            start = time.perf_counter()
            try:
                result = self._complete(messages, options)
            except (ContextLengthError, InvalidRequestError):
                self.stats.errors += 1
                raise
            except ServerError:
                self.stats.errors += 1
                raise
            except Exception as exc:  # noqa: BLE001
                self.stats.errors += 1
                raise ServerError(f"xllamacpp failed: {type(exc).__name__}: {exc}", provider=PROVIDER) from exc
            usage = result["usage"]
            cached = int(usage.get("cached_tokens") or 0)
            self.stats.calls += 1
            self.stats.prompt_tokens += int(usage["prompt_tokens"])
            self.stats.cached_prompt_tokens += cached
            self.stats.completion_tokens += int(usage["completion_tokens"])
            choice = result["choices"][0]
            self.stats.truncated += int(choice.get("finish_reason") == "length")
            self.stats.loops_cut += int(bool(choice.get("repetition")))
            self.stats.seconds += time.perf_counter() - start
            return result, cached

    def _complete(self, messages: list[dict[str, str]], options: dict[str, Any]) -> dict[str, Any]:
        prefill = prefill_of(messages)
        prompt = self.template.render(messages[:-1] if prefill else messages) + prefill
        ids = self._tokenize(prompt)
        if len(ids) >= self.n_ctx:
            raise ContextLengthError(
                f"Prompt of {len(ids)} tokens does not fit the local model's context window "
                f"n_ctx={self.n_ctx} (reserve room for max_tokens too). Shorten the prompt or raise "
                "n_ctx (TEXT2SQL_N_CTX / build_lm(..., n_ctx=...)); Qwen2.5-Coder supports up to 32768.",
                provider=PROVIDER,
            )
        if self.prefix_cache:
            self._restore_from_disk(ids)
        top = int(options.get("logprobs") or 0)
        body: dict[str, Any] = {
            "prompt": ids,
            "max_tokens": int(options["max_tokens"]),
            "temperature": float(options["temperature"]),
            "stop": list(options.get("stop") or []) + self.template.stop,
            "repeat_penalty": 1.0,
            "stream": True,
            "timings_per_token": True,
            "cache_prompt": True,  # the slot's own KV state is reused, as llama-cpp-python reuses its context
            "logprobs": max(1, top),  # the chosen token's id comes with its log-probability
            "id_slot": 0,
        }
        for key in ("top_p", "top_k", "seed", "frequency_penalty", "presence_penalty", *_EXTENSION_OPTIONS):
            if options.get(key) is not None:
                body[key] = options[key]
        fmt = options.get("response_format")
        if fmt:
            body["json_schema"] = fmt.get("schema") or {"type": "object"}
        stream = _Stream()
        reply = self.server.handle_completions(body, stream)
        if stream.error is not None:
            raise stream.error
        if isinstance(reply, dict) and reply.get("error"):
            raise _server_error(reply["error"], self.n_ctx)
        if stream.failure is not None:
            raise _server_error(stream.failure, self.n_ctx)
        self._seen.append(np.asarray(ids, dtype=np.int32))
        if self.prefix_cache:
            self._save_to_disk(ids)
        self.last_timings = dict(stream.timings)
        if stream.guard_fired:
            text = b"".join(self._token_bytes(step) for step in stream.steps).decode("utf-8", errors="replace")
            finish = "length"
        else:
            text = stream.text
            finish = stream.finish_reason or "stop"
        written = len(stream.steps)
        if finish == "stop" and written and not self._token_bytes(stream.steps[-1]):
            written -= 1  # the end-of-turn token, which llama-cpp-python does not count either
        return {
            "id": stream.id,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": prefill + text},
                         "finish_reason": finish, "repetition": stream.guard_fired}],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": written, "total_tokens": len(ids) + written,
                      "cached_tokens": int(stream.timings.get("cache_n") or 0)},
            "steps": stream.steps,
            "top": top,
            "prefill": prefill,
        }

    def _token_bytes(self, step: dict[str, Any]) -> bytes:
        for alt in step.get("top_logprobs") or []:
            if alt.get("id") == step["id"] and alt.get("bytes") is not None:
                return bytes(alt["bytes"])
        return self.piece(int(step["id"])).encode("utf-8")

    def step_piece(self, steps: Sequence[dict[str, Any]]) -> Callable[[int], str]:
        """Token id -> text, from the alternatives the server sent with ``steps`` (else asked of the server)."""
        known: dict[int, str] = {}
        for step in steps:
            for alt in step.get("top_logprobs") or []:
                known.setdefault(int(alt["id"]), _piece(alt))
        return lambda token: known[token] if token in known else self.piece(token)

    # -- state --------------------------------------------------------------------------------------------------
    def clear_kv(self) -> None:
        """Forget the slot's KV state and the RAM prompt cache (for cold-start measurements): the server has no call
        that empties its RAM cache, so it is started anew (the disk cache stays, as it does for llama-cpp-python)."""
        with self.lock:
            self._seen.clear()
            old, self.server = self.server, None
            del old
            self.server = self._start_server()

    def close(self) -> None:
        with self.lock:
            self.server = None


class _Stream:
    """The streaming callback: collects text, per-token entries and timings, and stops a reply in a loop."""

    def __init__(self) -> None:
        self.text = ""
        self.steps: list[dict[str, Any]] = []
        self.timings: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.id: str | None = None
        self.guard_fired = False
        self.failure: Any = None
        self.error: BaseException | None = None

    def __call__(self, chunk: Any) -> bool:
        try:
            return self._take(chunk)
        except Exception as exc:  # noqa: BLE001 - never raise into native code; re-raised after the call
            self.error = exc
            return True

    def _take(self, chunk: Any) -> bool:
        if isinstance(chunk, (str, bytes)):
            chunk = json.loads(chunk)
        if "error" in chunk:
            self.failure = chunk["error"]
            return True
        self.id = chunk.get("id") or self.id
        if chunk.get("timings"):
            self.timings = chunk["timings"]
        choice = (chunk.get("choices") or [{}])[0]
        self.text += choice.get("text") or ""
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        entries = (choice.get("logprobs") or {}).get("content") or []
        if entries:
            self.steps.extend(entries)
            tail = [int(s["id"]) for s in self.steps[-LOOP_WINDOW:]]
            if repeats_itself(tail):
                self.guard_fired = True
                return True
        return False


def _server_error(error: Any, n_ctx: int) -> Exception:
    message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        return ContextLengthError(
            f"Prompt of {error.get('n_prompt_tokens')} tokens does not fit the local model's context window "
            f"n_ctx={n_ctx}: {message}", provider=PROVIDER)
    return InvalidRequestError(f"xllamacpp rejected the request: {message}", provider=PROVIDER)


# -- the registry ---------------------------------------------------------------------------------------------------
_registry: dict[tuple[str, int], SharedXLlama] = {}
_registry_lock = threading.Lock()


def get_shared_xllama(model_path: str | Path | None = None, *, n_ctx: int = DEFAULT_N_CTX,
                      n_threads: int | None = None, prefix_cache: bool = DEFAULT_PREFIX_CACHE) -> SharedXLlama:
    """The process-wide instance for ``(model_path, n_ctx)``, loading it on first use (the first caller's
    ``n_threads`` / ``prefix_cache`` win)."""
    if model_path is None:
        from text2sql_dspy.programs.llm.model_files import ensure_local_model

        model_path = ensure_local_model()
    path = Path(model_path).expanduser().resolve()
    key = (str(path), int(n_ctx))
    with _registry_lock:
        shared = _registry.get(key)
        if shared is None:
            shared = SharedXLlama(path, n_ctx=n_ctx, n_threads=n_threads, prefix_cache=prefix_cache)
            _registry[key] = shared
        return shared


def _instances() -> Iterable[SharedXLlama]:
    with _registry_lock:
        return list(_registry.values())


def clear_xllama_caches() -> None:
    """Forget every instance's KV state and RAM prompt cache, so a measurement starts cold."""
    for shared in _instances():
        shared.clear_kv()


def release_shared_xllamas() -> None:
    """Free every instance; later calls reload lazily."""
    with _registry_lock:
        items = list(_registry.values())
        _registry.clear()
    for shared in items:
        shared.close()


atexit.register(release_shared_xllamas)  # stop the servers' threads before the interpreter tears down
