"""How the embedded model is loaded into llama.cpp: one place for every engine setting.

Contract:

* :func:`engine_settings` returns the :class:`LlamaSettings` for this machine: the defaults below
  (AMX CPUs noted as such), then the environment overrides (``TEXT2SQL_LLAMA_EXTRA_BUFTS``,
  ``TEXT2SQL_LLAMA_FLASH_ATTN``, ``TEXT2SQL_N_THREADS``).
* :meth:`LlamaSettings.llama_kwargs` are the ``llama_cpp.Llama`` keyword arguments;
  :func:`model_params_override` applies the one model parameter that ``Llama()`` does not take
  (``use_extra_bufts``) while a model loads.

Defaults: every core, llama.cpp's own batch size and f16 KV cache, flash attention off, and
llama.cpp's extra buffer types (repacked weights) off; on AMX CPUs those crash a native build
(llama.cpp issue 20824). The measurements behind them:
``benchmarks/results/settings-evidence-2026-11-24/NOTES.md``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "EXTRA_BUFTS_ENV",
    "FLASH_ATTN_ENV",
    "THREADS_ENV",
    "LlamaSettings",
    "cpu_flags",
    "cpu_has_amx",
    "engine_settings",
    "model_params_override",
]

EXTRA_BUFTS_ENV = "TEXT2SQL_LLAMA_EXTRA_BUFTS"
FLASH_ATTN_ENV = "TEXT2SQL_LLAMA_FLASH_ATTN"
THREADS_ENV = "TEXT2SQL_N_THREADS"
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16"})
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class LlamaSettings:
    """llama.cpp settings of one loaded model.

    ``use_extra_bufts``: llama.cpp's extra weight buffer types (repacked Q4 weights for the CPU's
    SIMD kernels, and the AMX buffer on CPUs with AMX). Off by default (see the module docstring);
    on AMX CPUs a native build segfaults in ``ggml_backend_amx_mul_mat`` (llama.cpp issue 20824).
    """

    n_threads: int
    use_extra_bufts: bool = False
    flash_attn: bool = False
    n_batch: int = 512
    n_ubatch: int = 512
    type_kv: int | None = None  # GGML type of the KV cache (None: llama.cpp's f16; 8: q8_0, needs flash_attn)
    reason: str = "default"

    def llama_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``llama_cpp.Llama`` (``use_extra_bufts`` goes through
        :func:`model_params_override`)."""
        kwargs: dict[str, Any] = {
            "n_threads": self.n_threads,
            "n_threads_batch": self.n_threads,
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "flash_attn": self.flash_attn,
        }
        if self.type_kv is not None:
            kwargs.update(type_k=self.type_kv, type_v=self.type_kv)
        return kwargs


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU feature flags the kernel reports (empty where there is no ``/proc/cpuinfo``, e.g. macOS)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return frozenset(value.split())
    return frozenset()


def cpu_has_amx(flags: frozenset[str] | None = None) -> bool:
    """True when the CPU advertises Intel AMX (Sapphire Rapids and later Xeons)."""
    return bool(AMX_FLAGS & (cpu_flags() if flags is None else flags))


def _env_bool(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    if not value or value == "auto":
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    from text2sql_dspy.programs.errors import ConfigurationError

    raise ConfigurationError(f"{name}={value!r} is not understood: use 1, 0 or auto.")


def _env_threads() -> int | None:
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        from text2sql_dspy.programs.errors import ConfigurationError

        raise ConfigurationError(f"{THREADS_ENV}={value!r} must be a whole number of at least 1.")
    return int(value)


def engine_settings(n_threads: int | None = None, *, flags: frozenset[str] | None = None) -> LlamaSettings:
    """The settings for this machine: defaults, the AMX policy, then environment overrides.

    ``flags`` replaces the CPU's own flags (tests). ``n_threads`` (else ``TEXT2SQL_N_THREADS``,
    else every core) is the thread count for prompt evaluation and generation alike.
    """
    threads = n_threads or _env_threads() or os.cpu_count() or 1
    settings = LlamaSettings(n_threads=threads)
    if cpu_has_amx(flags):
        settings = replace(settings, use_extra_bufts=False,
                           reason="CPU has AMX: extra buffer types off (llama.cpp #20824)")
    forced = _env_bool(EXTRA_BUFTS_ENV)
    if forced is not None:
        settings = replace(settings, use_extra_bufts=forced, reason=f"{EXTRA_BUFTS_ENV}={int(forced)}")
    flash = _env_bool(FLASH_ATTN_ENV)
    if flash is not None:
        settings = replace(settings, flash_attn=flash)
    return settings


_override_lock = threading.Lock()


@contextlib.contextmanager
def model_params_override(**params: Any) -> Iterator[None]:
    """While a model loads, make ``llama_model_default_params()`` return ``params`` set.

    ``llama_cpp.Llama()`` builds its model parameters from that function and has no argument for
    ``use_extra_bufts``; this is the narrowest way to set it. Loads are serialised by a lock.
    """
    import llama_cpp.llama_cpp as native

    with _override_lock:
        original = native.llama_model_default_params

        def patched() -> Any:
            model_params = original()
            for name, value in params.items():
                setattr(model_params, name, value)
            return model_params

        native.llama_model_default_params = patched
        try:
            yield
        finally:
            native.llama_model_default_params = original
