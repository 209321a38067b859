"""A DSPy 3.4 engine that runs the embedded GGUF through xllamacpp: llama.cpp from a prebuilt wheel, no compiler.

An option beside :class:`~.llama_engine.LlamaCppEngine` (llama-cpp-python, built from source at install), chosen
with ``TEXT2SQL_ENGINE=xllamacpp`` (:func:`~.factory.build_lm`). The product's default is unchanged.

Contract (the same as :class:`~.llama_engine.LlamaCppEngine`'s, point by point):

* :class:`XLlamaCppEngine` implements DSPy's engine protocol (``complete(Request) -> Response``, ``stream``,
  ``close``). It subclasses :class:`~.llama_engine.LlamaCppEngine`, so every check for the embedded model
  (:func:`~.factory.is_embedded_model`: prefilled replies, token log-probabilities, ``held_share``) holds for it.
* One :class:`SharedXLlama` per ``(model path, n_ctx)`` per process: xllamacpp's in-process llama.cpp server
  (``xllamacpp.Server``) with one slot, loaded lazily, its calls serialised by a lock (the server is thread-safe
  itself; the lock keeps the prefix-cache bookkeeping and the slot's state consistent).
* The prompt is the model's own chat template rendered here (:class:`ChatTemplate`, byte for byte what
  llama-cpp-python's ``Jinja2ChatFormatter`` renders), plus the prefill where the last message is the
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
  (:class:`SlotFileStore`): a prompt that brings at least 256 tokens no saved state holds is saved to
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

import atexit
import contextlib
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
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from dspy.lm15 import (
    ContextLengthError,
    InvalidRequestError,
    Message,
    Request,
    Response,
    ServerError,
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
from text2sql_dspy.programs.llm.llama_settings import LlamaSettings, engine_settings
from text2sql_dspy.programs.llm.prefix_cache import common_prefix, longest_prefix
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

__all__ = [
    "ENGINE_NAME",
    "AsyncXLlamaCppEngine",
    "ChatTemplate",
    "SharedXLlama",
    "SlotFileStore",
    "XLlamaCppEngine",
    "clear_xllama_caches",
    "get_shared_xllama",
    "release_shared_xllamas",
    "reply_logprobs",
]

logger = logging.getLogger(__name__)

ENGINE_NAME = "xllamacpp"
MIN_NEW_TOKENS = 256  # what a prompt must bring that no saved state holds, to be saved to disk


# -- the chat template ----------------------------------------------------------------------------------------------
class ChatTemplate:
    """The GGUF's Jinja chat template, rendered as llama-cpp-python's ``Jinja2ChatFormatter`` renders it (a sandboxed
    jinja2 environment with ``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, a pass-through ``{% generation %}``
    tag and Transformers' ``tojson``), so both engines read the same prompt."""

    def __init__(self, template: str, *, eos_token: str = "", bos_token: str = ""):
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class IgnoreGenerationTags(jinja2.ext.Extension):
            tags = {"generation"}

            def parse(self, parser: Any) -> Any:
                parser.stream.skip(1)
                return parser.parse_statements(("name:endgeneration",), drop_needle=True)

        env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                                            extensions=[IgnoreGenerationTags, jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        self.template = template
        self.eos_token = eos_token
        self.bos_token = bos_token
        self._compiled = env.from_string(template)

    def render(self, messages: Sequence[dict[str, str]], *, add_generation_prompt: bool = True) -> str:
        def raise_exception(message: str) -> None:
            raise ValueError(message)

        return self._compiled.render(
            messages=list(messages), eos_token=self.eos_token, bos_token=self.bos_token,
            raise_exception=raise_exception, add_generation_prompt=add_generation_prompt,
            functions=None, function_call=None, tools=None, tool_choice=None,
            strftime_now=lambda f: datetime.now().strftime(f),
        )

    @property
    def stop(self) -> list[str]:
        """The stop strings a rendered prompt adds (llama-cpp-python's: the end-of-sequence text)."""
        return [self.eos_token] if self.eos_token else []


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


# -- token log-probabilities ----------------------------------------------------------------------------------------
def _piece(entry: dict[str, Any]) -> str:
    raw = entry.get("bytes")
    return bytes(raw).decode("utf-8", errors="replace") if raw is not None else str(entry.get("token", ""))


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


# -- the disk tier of the prefix cache ------------------------------------------------------------------------------
class SlotFileStore:
    """KV states on disk as the server's slot files: ``<name>.slot`` (written by the server's slot save) and
    ``<name>.ids.npy`` (the prompt's token ids, written here once the save succeeded, so an id file always names a
    complete slot file). Bounded in bytes, oldest used first out; a slot file without ids is dropped."""

    SUFFIX = ".slot"

    def __init__(self, folder: Path, *, capacity_bytes: int, min_new_tokens: int = MIN_NEW_TOKENS):
        self.folder = Path(folder)
        self.capacity_bytes = capacity_bytes
        self.min_new_tokens = min_new_tokens
        self._index: dict[str, np.ndarray] | None = None

    @property
    def index(self) -> dict[str, np.ndarray]:
        """Token ids of every entry on disk, by name (read once, then kept up to date)."""
        if self._index is None:
            self._index = {}
            for ids_file in self.folder.glob("*.ids.npy"):
                name = ids_file.name[: -len(".ids.npy")]
                try:
                    if not self.slot_file(name).is_file():
                        raise OSError("no slot file")
                    self._index[name] = np.load(ids_file)
                except (OSError, ValueError, EOFError):
                    self.drop(name)
            for orphan in self.folder.glob(f"*{self.SUFFIX}"):  # a save whose ids were never written
                if orphan.name[: -len(self.SUFFIX)] not in self._index:
                    with contextlib.suppress(OSError):
                        orphan.unlink()
        return self._index

    def slot_file(self, name: str) -> Path:
        return self.folder / f"{name}{self.SUFFIX}"

    def best(self, key: Sequence[int]) -> tuple[str | None, int]:
        """The entry sharing the longest prefix with ``key``, and that length."""
        return longest_prefix(self.index.items(), key)

    def worth_saving(self, key: Sequence[int]) -> bool:
        """Whether ``key`` brings at least ``min_new_tokens`` tokens that no entry holds."""
        return self.capacity_bytes > 0 and len(key) - self.best(key)[1] >= self.min_new_tokens

    @staticmethod
    def name_for(key: Sequence[int]) -> str:
        return hashlib.sha256(np.asarray(key, dtype=np.int32).tobytes()).hexdigest()[:32]

    def added(self, name: str, key: Sequence[int]) -> None:
        """Record the ids of a slot file the server has just written, then keep the folder within its bound."""
        ids = np.asarray(key, dtype=np.int32)
        tmp = self.folder / f".{name}.ids.tmp.npy"
        try:
            np.save(tmp, ids)
            os.replace(tmp, self.folder / f"{name}.ids.npy")
        except OSError as exc:
            logger.warning("could not record a KV state in %s: %s", self.folder, exc)
            self.drop(name)
            return
        self.index[name] = ids
        self._evict()

    def touch(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.slot_file(name))  # most recently used: evicted last

    def _evict(self) -> None:
        def mtime(name: str) -> float:
            try:
                return self.slot_file(name).stat().st_mtime
            except OSError:
                return 0.0

        def size(name: str) -> int:
            try:
                return self.slot_file(name).stat().st_size
            except OSError:
                return 0

        names = sorted(self.index, key=mtime)
        total = sum(size(n) for n in names)
        while names and total > self.capacity_bytes:
            oldest = names.pop(0)
            total -= size(oldest)
            self.drop(oldest)

    def drop(self, name: str) -> None:
        for file in (self.slot_file(name), self.folder / f"{name}.ids.npy"):
            with contextlib.suppress(OSError):
                file.unlink()
        if self._index is not None:
            self._index.pop(name, None)


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
        """The ``xllamacpp.CommonParams`` this model is served with (see the module docstring)."""
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
