"""The one place that builds ``dspy.LM`` objects for text2sql-dspy.

Contract of :func:`build_lm`:

* Model string resolution: explicit argument, else ``$TEXT2SQL_MODEL`` (agent)
  or ``$TEXT2SQL_JUDGE_MODEL`` then ``$LLM_JUDGE_MODEL`` (judge), else the
  judge falls back to the agent's model, else ``"local"``.
* ``"local"`` / ``"local/qwen2.5-coder-1.5b"`` -> the embedded GGUF through
  :class:`~programs.llm.llama_engine.LlamaCppEngine` (one shared llama.cpp
  instance per process), temperature 0, DSPy response cache OFF by default
  (so benchmarks see real latency; pass ``cache=True`` to enable). Building
  does not load the model; the first call does. ``$TEXT2SQL_ENGINE=xllamacpp`` runs
  it through :class:`~programs.llm.xllamacpp_engine.XLlamaCppEngine` instead
  (llama.cpp from xllamacpp's prebuilt wheel; :func:`local_engine_classes`).
* Any other ``provider/model`` string goes to ``dspy.LM`` (lm15/LiteLLM).
  Problems are reported at build time, before any call, as
  :class:`programs.errors.ConfigurationError`: a missing
  ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``, a string without a provider
  prefix, or a provider LiteLLM does not know. ``openai/<name>`` with
  ``api_base`` (kwarg, ``$TEXT2SQL_API_BASE`` or ``$OPENAI_API_BASE``) targets a
  self-hosted OpenAI-compatible server (vLLM, SGLang, llama.cpp); no key is needed
  there, and the LM is ``hosted_vllm/<model>``, DSPy's route for such servers.
  Such a served model's replies are not cached by default (DSPy's cache key
  leaves ``api_base`` out, so two servers' answers would mix, and a garbled
  reply would be replayed); pass ``cache=True`` to cache them.
* DSPy's "LM response was truncated" warning is dropped (:func:`quiet_truncation_warnings`): a reply cut at its
  cap or in a loop is the caller's to handle (``Draft.truncated``, ``EngineStats.truncated``), not news for a
  user's terminal. Each dropped warning is counted on the thread that made the call (:func:`cut_replies`), so an
  answer's metrics say how many of its replies were cut.
* Remote calls wait at most ``$TEXT2SQL_TIMEOUT_S`` seconds (default 180) for a
  reply and are retried ``$TEXT2SQL_RETRIES`` times (default 2) on a transient
  failure; :mod:`programs.llm.service_errors` words what still fails. LiteLLM's
  price map is read from its bundled copy, never fetched.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Literal

import dspy

from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.llm.fields import TOP_LOGPROBS
from text2sql_dspy.programs.llm.llama_engine import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_N_CTX,
    DEFAULT_PREFIX_CACHE,
    LOCAL_MODEL_NAME,
    AsyncLlamaCppEngine,
    LlamaCppEngine,
)
from text2sql_dspy.programs.llm.service_errors import DEFAULT_RETRIES, DEFAULT_TIMEOUT_S, RETRIES_ENV, TIMEOUT_ENV

__all__ = [
    "LOCAL_MODEL",
    "LOCAL_MODEL_ALIASES",
    "Role",
    "is_local_model",
    "resolve_model_name",
    "build_lm",
    "quiet_truncation_warnings",
]

LOCAL_MODEL = "local"
LOCAL_MODEL_ALIASES = frozenset({LOCAL_MODEL, LOCAL_MODEL_NAME})
Role = Literal["agent", "judge"]

REMOTE_MAX_TOKENS = 4096
SERVED_PROVIDER = "hosted_vllm"  # DSPy's route for a self-hosted OpenAI-compatible server (see _served_route)
_EXAMPLES = (
    "'local' (embedded Qwen2.5-Coder-1.5B), 'anthropic/claude-sonnet-4-5', "
    "'anthropic/claude-haiku-4-5', 'openai/gpt-4o-mini', "
    "'openai/Qwen/Qwen2.5-Coder-7B-Instruct' with api_base=http://host:8000/v1 (vLLM/SGLang)"
)
# Providers accepted without importing LiteLLM (its import is slow).
_WELL_KNOWN_PROVIDERS = frozenset({
    "anthropic", "openai", "azure", "gemini", "vertex_ai", "bedrock", "hosted_vllm", "ollama",
    "ollama_chat", "openrouter", "groq", "together_ai", "mistral", "deepseek", "fireworks_ai",
    "databricks", "xai", "cohere",
})
_LOCAL_ONLY_KWARGS = ("n_ctx", "n_threads", "prefix_cache", "model_path")


def is_local_model(model: str) -> bool:
    """True for the embedded model's names (case-insensitive)."""
    return model.strip().lower() in LOCAL_MODEL_ALIASES


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def judge_model_from_env() -> str | None:
    """The judge model the environment names (``TEXT2SQL_JUDGE_MODEL``, then ``LLM_JUDGE_MODEL``), or None."""
    return _env("TEXT2SQL_JUDGE_MODEL") or _env("LLM_JUDGE_MODEL") or None


def resolve_model_name(model: str | None = None, *, role: Role = "agent") -> str:
    """Apply the resolution order documented in the module docstring."""
    if role not in ("agent", "judge"):
        raise ConfigurationError(f"role must be 'agent' or 'judge', got {role!r}")
    if model is not None and model.strip():
        return model.strip()
    if role == "judge" and (judge := judge_model_from_env()):
        return judge
    return _env("TEXT2SQL_MODEL") or LOCAL_MODEL


def offline_price_map() -> None:
    """Make LiteLLM read the price map installed with it; without this it fetches one when first imported."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def import_litellm() -> Any:
    """LiteLLM, with :func:`offline_price_map`."""
    offline_price_map()
    import litellm  # noqa: PLC0415 - seconds to import; the embedded model never needs it

    return litellm


def _known_provider(provider: str) -> bool:
    if provider in _WELL_KNOWN_PROVIDERS:
        return True
    try:
        litellm = import_litellm()
    except ImportError:  # pragma: no cover - litellm is a dspy dependency
        return False
    known = {getattr(p, "value", p) for p in getattr(litellm, "provider_list", ())}
    return provider in known


def _int_env(name: str, default: int) -> int:
    raw = _env(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None


def _positive_float_env(name: str, default: float) -> float:
    raw = _env(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise ConfigurationError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


ENGINE_ENV = "TEXT2SQL_ENGINE"  # which llama.cpp binding runs the embedded model
DEFAULT_ENGINE = "llama-cpp-python"
LOCAL_ENGINES = ("llama-cpp-python", "xllamacpp")


def local_engine_classes(name: str | None = None) -> tuple[type[LlamaCppEngine], type[AsyncLlamaCppEngine]]:
    """The engine classes of the embedded model: ``name``, else ``$TEXT2SQL_ENGINE``, else :data:`DEFAULT_ENGINE`.

    ``llama-cpp-python`` (:mod:`.llama_engine`) or ``xllamacpp`` (:mod:`.xllamacpp_engine`: llama.cpp from a
    prebuilt wheel, ``pip install xllamacpp``).
    """
    chosen = (name or _env(ENGINE_ENV) or DEFAULT_ENGINE).strip().lower()
    if chosen == "llama-cpp-python":
        return LlamaCppEngine, AsyncLlamaCppEngine
    if chosen == "xllamacpp":
        import importlib.util

        if importlib.util.find_spec("xllamacpp") is None:
            raise ConfigurationError(f"{ENGINE_ENV}=xllamacpp needs the xllamacpp package: pip install xllamacpp.")
        from text2sql_dspy.programs.llm.xllamacpp_engine import AsyncXLlamaCppEngine, XLlamaCppEngine

        return XLlamaCppEngine, AsyncXLlamaCppEngine
    raise ConfigurationError(f"{ENGINE_ENV}={chosen!r} is not an engine: use one of {', '.join(LOCAL_ENGINES)}.")


def _build_local(kwargs: dict[str, Any]) -> dspy.LM:
    for key in ("api_key", "api_base", "base_url"):
        if kwargs.get(key) is not None:
            raise ConfigurationError(f"{key}= does not apply to the local model; drop it or pick a remote model.")
    engine_class, async_class = local_engine_classes()
    engine = engine_class(
        kwargs.pop("model_path", None),
        n_ctx=int(kwargs.pop("n_ctx", None) or _int_env("TEXT2SQL_N_CTX", DEFAULT_N_CTX)),
        n_threads=kwargs.pop("n_threads", None),  # None: TEXT2SQL_N_THREADS, else every core (llama_settings)
        prefix_cache=kwargs.pop("prefix_cache", DEFAULT_PREFIX_CACHE),
    )
    return dspy.LM(
        LOCAL_MODEL_NAME,
        engine=engine,
        async_engine=async_class(engine),
        temperature=kwargs.pop("temperature", 0.0),
        max_tokens=kwargs.pop("max_tokens", DEFAULT_MAX_TOKENS),
        cache=kwargs.pop("cache", False),
        num_retries=kwargs.pop("num_retries", 1),
        **kwargs,
    )


def _build_remote(model: str, kwargs: dict[str, Any]) -> dspy.LM:
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise ConfigurationError(
            f"Unknown model {model!r}: expected 'local' or a 'provider/model' string, e.g. {_EXAMPLES}."
        )
    provider = provider.lower()
    if not _known_provider(provider):
        raise ConfigurationError(
            f"Unknown model provider {provider!r} in {model!r}. Valid examples: {_EXAMPLES}."
        )
    local_only = [key for key in _LOCAL_ONLY_KWARGS if key in kwargs]
    if local_only:
        raise ConfigurationError(f"{local_only} only apply to the local model, not {model!r}.")

    if provider == "anthropic" and not (kwargs.get("api_key") or _env("ANTHROPIC_API_KEY")):
        raise ConfigurationError(
            f"Model {model!r} needs an Anthropic API key: set ANTHROPIC_API_KEY "
            "(or use TEXT2SQL_MODEL=local for the embedded model)."
        )
    offline_price_map()  # before DSPy imports LiteLLM
    model, served = _served_route(model, provider, name, kwargs)
    retries = kwargs.pop("num_retries", None)
    return dspy.LM(
        model,
        temperature=kwargs.pop("temperature", 0.0),
        max_tokens=kwargs.pop("max_tokens", REMOTE_MAX_TOKENS),
        cache=kwargs.pop("cache", not served),
        timeout=kwargs.pop("timeout", None) or _positive_float_env(TIMEOUT_ENV, DEFAULT_TIMEOUT_S),
        num_retries=_int_env(RETRIES_ENV, DEFAULT_RETRIES) if retries is None else retries,
        **kwargs,
    )


def _served_route(model: str, provider: str, name: str, kwargs: dict[str, Any]) -> tuple[str, bool]:
    """``(model string for dspy.LM, whether it is a self-hosted server)``; sets ``api_base``/``api_key`` in ``kwargs``.

    ``openai/<name>`` with an ``api_base`` is a self-hosted OpenAI-compatible server. It is routed
    as ``hosted_vllm/<name>``, DSPy's dialect for such servers: that sends the token limit as
    ``max_tokens``, which every server reads, where the ``openai`` dialect sends
    ``max_completion_tokens``, which llama.cpp's server ignores (its replies then run to the context).
    """
    if provider not in ("openai", SERVED_PROVIDER):
        return model, False
    api_base = kwargs.pop("api_base", None) or _env("TEXT2SQL_API_BASE") or _env("OPENAI_API_BASE")
    if not api_base:
        if provider == SERVED_PROVIDER or not (kwargs.get("api_key") or _env("OPENAI_API_KEY")):
            raise ConfigurationError(
                f"Model {model!r} needs OPENAI_API_KEY, or api_base / TEXT2SQL_API_BASE pointing at a "
                "self-hosted OpenAI-compatible server (vLLM, SGLang, llama.cpp)."
            )
        return model, False
    kwargs["api_base"] = api_base
    kwargs.setdefault("api_key", _env("OPENAI_API_KEY") or "EMPTY")  # servers ignore it; the client needs one
    return f"{SERVED_PROVIDER}/{name}", True


# Providers whose chat API returns token log-probabilities (Anthropic's does not).
LOGPROB_PROVIDERS = frozenset({"openai", "hosted_vllm", "together_ai", "fireworks_ai", "deepseek", "xai"})


def supports_logprobs(lm: Any) -> bool:
    """True when ``lm`` returns token log-probabilities: the embedded engine and OpenAI-compatible servers."""
    if is_embedded_model(lm):
        return True
    provider = str(getattr(lm, "model", "")).partition("/")[0].lower()
    return provider in LOGPROB_PROVIDERS


def logprob_config(lm: Any, **config: Any) -> dict[str, Any]:
    """LM call options: ``config`` plus token log-probabilities where ``lm`` can return them."""
    if supports_logprobs(lm):
        config.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
    return config


def supports_seed(lm: Any) -> bool:
    """True when ``lm`` takes a sampling ``seed``: the embedded engine and OpenAI-compatible APIs (Anthropic's does not,
    and LiteLLM refuses to send it there)."""
    return supports_logprobs(lm)


def is_embedded_model(lm: Any) -> bool:
    """True when ``lm`` runs on the embedded llama.cpp engine."""
    return isinstance(getattr(lm, "engine", None), LlamaCppEngine)


def supports_prefill(lm: Any) -> bool:
    """True when ``lm`` continues a final assistant message (a prefilled reply): the embedded engine."""
    return is_embedded_model(lm)


TRUNCATION_LOGGER = "dspy.clients.lm"  # where DSPy 3.4 logs a reply with finish_reason "length", on both paths
TRUNCATION_NOTICE = "LM response was truncated"


_cut = threading.local()  # replies cut on this thread: DSPy warns on the thread that made the call


class _DropTruncationNotice(logging.Filter):
    """Drops DSPy's truncation warning, counting it (:func:`cut_replies`); every other record of its logger passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(TRUNCATION_NOTICE):
            return True
        _cut.count = cut_replies() + 1
        return False


def cut_replies() -> int:
    """How many LM replies made on this thread so far were cut before they ended (DSPy's finish_reason "length")."""
    return getattr(_cut, "count", 0)


def quiet_truncation_warnings() -> None:
    """Keep DSPy's "LM response was truncated" warning off the user's terminal (once per process)."""
    logger = logging.getLogger(TRUNCATION_LOGGER)
    if not any(isinstance(f, _DropTruncationNotice) for f in logger.filters):
        logger.addFilter(_DropTruncationNotice())


def build_lm(model: str | None = None, *, role: Role = "agent", **kwargs: Any) -> dspy.LM:
    """Build the ``dspy.LM`` for ``role``; see the module docstring for the rules.

    Extra ``kwargs`` go to ``dspy.LM`` (``temperature``, ``max_tokens``, ``cache``,
    ``num_retries``, ``api_key``, ``api_base``, ...); for the local model also
    ``n_ctx`` (default ``$TEXT2SQL_N_CTX`` or 12288), ``n_threads`` (default
    ``$TEXT2SQL_N_THREADS`` or ``os.cpu_count()``),
    ``prefix_cache`` and ``model_path``.
    """
    quiet_truncation_warnings()
    name = resolve_model_name(model, role=role)
    if is_local_model(name):
        return _build_local(dict(kwargs))
    return _build_remote(name, dict(kwargs))
