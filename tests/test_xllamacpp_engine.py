"""The xllamacpp engine (issue 83): its pure parts and its request path over a scripted server, without the model;
then two checks on the real model (marked ``real_model``; skipped, saying why, where xllamacpp is not installed,
since it is an option beside the default engine).

The scripted server stands in for ``xllamacpp.Server``: it streams the chunks a test gives it, in the shape the real
server streams them (one token a chunk, its log-probability entry with id and alternatives, ``timings``), and answers
the loopback calls (``/tokenize``: one token a character; ``/slots``: save and restore write and read a file).
"""

from __future__ import annotations

import threading
from collections import deque
from pathlib import Path
from typing import Any

import dspy
import numpy as np
import pytest
from dspy.lm15 import Config, ContextLengthError, InvalidRequestError, Message, Request

from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.llm import factory
from text2sql_dspy.programs.llm.chat_template import ChatTemplate
from text2sql_dspy.programs.llm.llama_engine import AsyncLlamaCppEngine, LlamaCppEngine
from text2sql_dspy.programs.llm.llama_settings import LlamaSettings
from text2sql_dspy.programs.llm.prefix_cache import SlotFileStore
from text2sql_dspy.programs.llm.shared_llama import LOOP_RUN, EngineStats
from text2sql_dspy.programs.llm.xllamacpp_engine import AsyncXLlamaCppEngine, XLlamaCppEngine, reply_logprobs
from text2sql_dspy.programs.llm.xllamacpp_server import SharedXLlama

# Qwen2.5's template, cut to what a text-only conversation uses.
TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
EOT = -1  # the end-of-turn token's id in the scripted server


# -- the chat template ----------------------------------------------------------------------------------------------
def test_the_template_renders_as_llama_cpp_python_renders_it() -> None:
    messages = [{"role": "system", "content": "S {{ not a tag }}"}, {"role": "user", "content": "Q\n  indented"}]
    ours = ChatTemplate(TEMPLATE, eos_token="<|im_end|>").render(messages)
    assert ours == "<|im_start|>system\nS {{ not a tag }}<|im_end|>\n<|im_start|>user\nQ\n  indented<|im_end|>\n" \
                   "<|im_start|>assistant\n"
    llama_chat_format = pytest.importorskip("llama_cpp.llama_chat_format")
    theirs = llama_chat_format.Jinja2ChatFormatter(template=TEMPLATE, eos_token="<|im_end|>", bos_token="")
    assert theirs(messages=messages).prompt == ours
    assert ChatTemplate(TEMPLATE, eos_token="<|im_end|>").stop == theirs(messages=messages).stop


# -- token log-probabilities ----------------------------------------------------------------------------------------
def step(token_id: int, piece: str, logprob: float = -0.1, alternatives: tuple[tuple[int, str, float], ...] = (),
         sent: str | None = None) -> dict[str, Any]:
    """A server's log-probability entry: the chosen token's ``token`` is the text sent with it (``sent``)."""
    alts = alternatives or ((token_id, piece, logprob),)
    return {"id": token_id, "token": piece if sent is None else sent, "logprob": logprob,
            "top_logprobs": [{"id": i, "token": p, "bytes": list(p.encode()), "logprob": lp} for i, p, lp in alts]}


def test_reply_logprobs_have_the_recorders_shape() -> None:
    steps = [step(1, "SELECT", -0.5, ((1, "SELECT", -0.5), (2, "```", -1.3))),
             step(3, " 1", -0.01, ((3, " 1", -0.01), (4, " *", -4.0)), sent=""),  # held back: a stop may start
             step(EOT, "", -0.02)]
    out = reply_logprobs(steps, "[[ ## sql ## ]]\nSELECT 1", prefill="[[ ## sql ## ]]\n", top=1,
                         piece=lambda t: {1: "SELECT", 3: " 1"}[t])
    assert [t.token for t in out] == ["[[ ## sql ## ]]\n", "SELECT", " 1"], "the end-of-turn token is dropped"
    assert out[0].logprob == 0.0 and out[0].top == ()
    assert out[1].token_id == 1 and out[1].logprob == -0.5
    assert [(a.token, a.logprob) for a in out[1].top] == [("SELECT", -0.5)], "top=1: one alternative"
    assert "".join(t.token for t in out) == "[[ ## sql ## ]]\nSELECT 1"


# -- the disk tier --------------------------------------------------------------------------------------------------
def write_slot(store: SlotFileStore, ids: list[int], size: int = 100) -> str:
    name = store.name_for(ids)
    store.folder.mkdir(parents=True, exist_ok=True)
    store.slot_file(name).write_bytes(b"k" * size)  # what the server's slot save writes
    store.added(name, ids)
    return name


def test_a_saved_slot_is_found_by_a_new_process_and_bad_entries_go(tmp_path: Path) -> None:
    store = SlotFileStore(tmp_path, capacity_bytes=1 << 20, min_new_tokens=4)
    prompt = list(range(100, 120))
    assert store.worth_saving(prompt)
    name = write_slot(store, prompt)
    assert not store.worth_saving(prompt + [1, 2, 3]), "3 new tokens are not worth a save"
    fresh = SlotFileStore(tmp_path, capacity_bytes=1 << 20, min_new_tokens=4)  # another process: files alone
    assert fresh.best(prompt + [7, 8]) == (name, len(prompt))
    (tmp_path / "orphan.slot").write_bytes(b"x")  # a save killed before its ids were written
    (tmp_path / "noslot.ids.npy").write_bytes(np.save.__doc__.encode()[:10])  # ids without a slot file
    again = SlotFileStore(tmp_path, capacity_bytes=1 << 20, min_new_tokens=4)
    assert list(again.index) == [name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{name}.slot", f"{name}.ids.npy"])


def test_the_disk_tier_keeps_within_its_bytes_oldest_first(tmp_path: Path) -> None:
    import os

    store = SlotFileStore(tmp_path, capacity_bytes=250, min_new_tokens=1)
    first = write_slot(store, [1, 2, 3])
    os.utime(store.slot_file(first), (1, 1))
    second = write_slot(store, [4, 5, 6])
    os.utime(store.slot_file(second), (2, 2))
    third = write_slot(store, [7, 8, 9])
    assert set(store.index) == {second, third} and not store.slot_file(first).exists()


# -- the request path, over a scripted server -----------------------------------------------------------------------
class ScriptedServer:
    """Streams the given chunks; stops where the callback says so."""

    listening_address = "http://127.0.0.1:9"

    def __init__(self, chunks: list[dict[str, Any]]):
        self.chunks = chunks
        self.bodies: list[dict[str, Any]] = []
        self.sent = 0

    def handle_completions(self, body: dict[str, Any], callback: Any) -> None:
        self.bodies.append(body)
        for chunk in self.chunks:
            self.sent += 1
            if callback(chunk):
                return None
        return None


def chunk(text: str, entry: dict[str, Any] | None, finish: str | None = None, cache_n: int = 0) -> dict[str, Any]:
    return {"id": "cmpl-1", "choices": [{"text": text, "index": 0, "finish_reason": finish,
                                          "logprobs": {"content": [entry]} if entry else None}],
            "timings": {"cache_n": cache_n, "prompt_n": 5, "prompt_ms": 10.0, "predicted_n": 1, "predicted_ms": 1.0}}


def scripted(tmp_path: Path, chunks: list[dict[str, Any]], *, n_ctx: int = 4096,
             disk: bool = False) -> tuple[SharedXLlama, ScriptedServer, list[tuple[str, Any]]]:
    """A SharedXLlama over a scripted server (its loopback calls answered here, and recorded)."""
    shared = object.__new__(SharedXLlama)
    calls: list[tuple[str, Any]] = []
    slots = tmp_path / "slots"
    slots.mkdir(exist_ok=True)

    def http(path: str, body: Any = None, timeout: float = 0) -> dict[str, Any]:
        calls.append((path, body))
        if path == "/tokenize":
            return {"tokens": [ord(c) for c in body["content"]]}
        if path == "/detokenize":
            return {"content": "".join(chr(t) for t in body["tokens"])}
        if "action=save" in path:
            (slots / body["filename"]).write_bytes(b"kv")
            return {"n_saved": 1}
        if "action=restore" in path:
            if (slots / body["filename"]).read_bytes() != b"kv":
                raise InvalidRequestError("xllamacpp /slots/0?action=restore: HTTP 400: failed to restore slot")
            return {"n_restored": 1}
        raise AssertionError(path)

    shared.__dict__.update(
        model_path=tmp_path / "m.gguf", n_ctx=n_ctx, settings=LlamaSettings(n_threads=1), n_threads=1,
        prefix_cache=True, prefix_cache_bytes=1 << 30, lock=threading.Lock(), stats=EngineStats(), last_timings={},
        _seen=deque(maxlen=6), _pieces={}, template=ChatTemplate(TEMPLATE, eos_token="<|im_end|>"),
        disk=SlotFileStore(slots, capacity_bytes=1 << 20, min_new_tokens=50) if disk else None,
    )
    server = ScriptedServer(chunks)
    shared.server = server
    shared._http = http  # type: ignore[method-assign]
    return shared, server, calls


SQL_CHUNKS = [chunk("SELECT", step(1, "SELECT", -0.5, ((1, "SELECT", -0.5), (2, "```", -1.0)))),
              chunk(" 1", step(3, " 1", -0.1, ((3, " 1", -0.1), (4, " *", -3.0)))),
              chunk("", step(EOT, "", -0.01, ((EOT, "", -0.01), (5, "\n", -5.0))), finish="stop", cache_n=0)]


def test_a_prefilled_reply_is_the_prefill_plus_what_the_model_wrote(tmp_path: Path) -> None:
    shared, server, _ = scripted(tmp_path, SQL_CHUNKS)
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
                {"role": "assistant", "content": "[[ ## sql ## ]]\n"}]
    result, cached = shared.chat(messages, max_tokens=30, temperature=0.0, stop=["\n\n[["], logprobs=5, seed=None)
    body = server.bodies[0]
    rendered = "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    assert body["prompt"] == [ord(c) for c in rendered + "[[ ## sql ## ]]\n"], "the template, then the prefill"
    assert body["stop"] == ["\n\n[[", "<|im_end|>"] and body["temperature"] == 0.0 and body["max_tokens"] == 30
    assert body["logprobs"] == 5 and body["stream"] and body["cache_prompt"] and "seed" not in body
    choice = result["choices"][0]
    assert choice["message"]["content"] == "[[ ## sql ## ]]\nSELECT 1" and choice["finish_reason"] == "stop"
    assert result["usage"]["completion_tokens"] == 2, "the end-of-turn token is not counted, as on llama-cpp-python"
    assert result["usage"]["prompt_tokens"] == len(body["prompt"]) and cached == 0
    assert shared.stats.calls == 1 and shared.stats.completion_tokens == 2


def test_the_engine_answers_with_the_products_response(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared, _, _ = scripted(tmp_path, SQL_CHUNKS)
    engine = XLlamaCppEngine(n_ctx=4096)
    monkeypatch.setattr(engine, "load", lambda: shared)
    request = Request(model="local/qwen2.5-coder-1.5b", system="S",
                      messages=(Message.user("Q"), Message.assistant("[[ ## sql ## ]]\n")),
                      config=Config(max_tokens=30, temperature=0.0, logprobs=2))
    response = engine.complete(request)
    assert response.message.parts[0].text == "[[ ## sql ## ]]\nSELECT 1" and response.finish_reason == "stop"
    assert [t.token for t in response.logprobs] == ["[[ ## sql ## ]]\n", "SELECT", " 1"]
    assert [a.token for a in response.logprobs[1].top] == ["SELECT", "```"]
    assert response.usage.input_tokens > 0 and response.usage.output_tokens == 2


def test_a_reply_in_a_loop_is_cut_where_the_loop_is_found(tmp_path: Path) -> None:
    loop = [chunk(" ha", step(7, " ha", -0.01)) for _ in range(LOOP_RUN + 20)]
    shared, server, _ = scripted(tmp_path, [chunk("Sure:", step(6, "Sure:")), *loop])
    result, _ = shared.chat([{"role": "user", "content": "Q"}], max_tokens=200, temperature=0.0, stop=[])
    choice = result["choices"][0]
    assert choice["finish_reason"] == "length" and choice["repetition"]
    assert choice["message"]["content"] == "Sure:" + " ha" * LOOP_RUN, "every token up to the cut"
    assert server.sent == 1 + LOOP_RUN, "the server was told to stop there"
    assert shared.stats.loops_cut == 1 and shared.stats.truncated == 1


def test_a_cut_reply_keeps_text_a_stop_string_held_back(tmp_path: Path) -> None:
    loop = [chunk("", step(8, "\n", -0.01, sent="")) for _ in range(LOOP_RUN)]  # "\n" may start the stop "\n\n[["
    shared, _, _ = scripted(tmp_path, loop)
    result, _ = shared.chat([{"role": "user", "content": "Q"}], max_tokens=200, temperature=0.0, stop=["\n\n[["])
    assert result["choices"][0]["message"]["content"] == "\n" * LOOP_RUN, "as llama-cpp-python's guard leaves it"


def test_a_prompt_over_the_context_is_a_context_error(tmp_path: Path) -> None:
    shared, server, _ = scripted(tmp_path, SQL_CHUNKS, n_ctx=40)
    with pytest.raises(ContextLengthError, match="n_ctx=40"):
        shared.chat([{"role": "user", "content": "word " * 20}], max_tokens=5, temperature=0.0, stop=[])
    assert not server.bodies and shared.stats.errors == 1


def test_a_server_error_in_the_stream_is_raised(tmp_path: Path) -> None:
    error = {"error": {"code": 400, "message": "request (601 tokens) exceeds the available context size",
                       "type": "exceed_context_size_error", "n_prompt_tokens": 601, "n_ctx": 512}}
    shared, _, _ = scripted(tmp_path, [error])
    with pytest.raises(ContextLengthError, match="n_ctx=4096"):
        shared.chat([{"role": "user", "content": "Q"}], max_tokens=5, temperature=0.0, stop=[])


def test_a_long_prompt_is_saved_to_disk_and_restored_before_it_is_read_again(tmp_path: Path) -> None:
    schema = "CREATE TABLE t (id INTEGER);" * 2
    messages = [{"role": "system", "content": schema}, {"role": "user", "content": "Q"}]
    shared, _, calls = scripted(tmp_path, SQL_CHUNKS, disk=True)
    shared.chat(messages, max_tokens=5, temperature=0.0, stop=[])
    saves = [body for path, body in calls if "action=save" in path]
    assert len(saves) == 1 and shared.disk is not None and len(shared.disk.index) == 1
    shared.chat(messages[:1] + [{"role": "user", "content": "Q2"}], max_tokens=5, temperature=0.0, stop=[])
    assert not [p for p, _ in calls if "restore" in p], "the slot already holds it: no restore"
    assert len([p for p, _ in calls if "action=save" in p]) == 1, "a new question is not worth a save"
    second, _, calls2 = scripted(tmp_path, SQL_CHUNKS, disk=True)  # a new process
    assert second.held_share(schema) == 1.0
    second.chat(messages[:1] + [{"role": "user", "content": "Q3"}], max_tokens=5, temperature=0.0, stop=[])
    restores = [body for path, body in calls2 if "action=restore" in path]
    assert restores == [{"filename": saves[0]["filename"]}], "a new process starts from the saved prefix"


def test_a_bad_disk_entry_is_a_miss(tmp_path: Path) -> None:
    schema = "CREATE TABLE t (id INTEGER);" * 2
    messages = [{"role": "system", "content": schema}, {"role": "user", "content": "Q"}]
    shared, _, _ = scripted(tmp_path, SQL_CHUNKS, disk=True)
    shared.chat(messages, max_tokens=5, temperature=0.0, stop=[])
    assert shared.disk is not None
    name = next(iter(shared.disk.index))
    shared.disk.slot_file(name).write_bytes(b"garbage")
    second, _, _ = scripted(tmp_path, SQL_CHUNKS, disk=True)
    result, _ = second.chat(messages, max_tokens=5, temperature=0.0, stop=[])  # the restore fails: read anew
    assert result["choices"][0]["message"]["content"] == "SELECT 1"
    assert second.disk is not None and second.disk.slot_file(name).read_bytes() == b"kv", "dropped, then saved anew"


# -- choosing the engine --------------------------------------------------------------------------------------------
def test_the_default_engine_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(factory.ENGINE_ENV, raising=False)
    assert factory.local_engine_classes() == (LlamaCppEngine, AsyncLlamaCppEngine)
    assert type(factory.build_lm("local").engine) is LlamaCppEngine


def test_the_environment_picks_xllamacpp(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xllamacpp")
    monkeypatch.setenv(factory.ENGINE_ENV, "xllamacpp")
    lm = factory.build_lm("local")
    assert type(lm.engine) is XLlamaCppEngine and type(lm._async_engine_spec) is AsyncXLlamaCppEngine
    assert factory.is_embedded_model(lm) and factory.supports_prefill(lm) and factory.supports_logprobs(lm)
    state = lm.engine.dump_state()
    assert type(XLlamaCppEngine.load_state(state)) is XLlamaCppEngine


def test_an_unknown_engine_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(factory.ENGINE_ENV, "vllm")
    with pytest.raises(ConfigurationError, match="llama-cpp-python, xllamacpp"):
        factory.build_lm("local")


# -- the real model -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def xl_lm() -> dspy.LM:
    pytest.importorskip("xllamacpp", reason="xllamacpp is an option: pip install xllamacpp")
    engine = XLlamaCppEngine(n_ctx=2048, n_threads=1)
    return dspy.LM("local/qwen2.5-coder-1.5b", engine=engine, temperature=0.0, max_tokens=64, cache=False)


@pytest.mark.real_model
def test_the_prebuilt_engine_prefills_returns_logprobs_stops_and_cuts_loops(xl_lm: dspy.LM) -> None:
    engine = xl_lm.engine
    request = Request(model=xl_lm.model, system="CREATE TABLE users (id INTEGER PRIMARY KEY, blocked INTEGER);",
                      messages=(Message.user("How many users are blocked? Write SQLite."),
                                Message.assistant("[[ ## sql ## ]]\n")),
                      config=Config(max_tokens=40, temperature=0.0, stop=("\n\n[[", ";"), logprobs=5))
    response = engine.complete(request)
    text = response.message.parts[0].text
    assert text.startswith("[[ ## sql ## ]]\n") and "users" in text.lower() and ";" not in text
    assert "".join(t.token for t in response.logprobs) == text and len(response.logprobs[1].top) == 5
    assert all(t.logprob <= 0.0 for t in response.logprobs)
    again = engine.complete(request)
    assert again.message.parts[0].text == text and again.usage.cache_read_tokens > 0, "greedy, and the prefix reused"
    loop = engine.complete(Request(model=xl_lm.model, messages=(Message.user(
        "Repeat the word ha 300 times, separated by spaces, and nothing else."),),
        config=Config(max_tokens=200, temperature=0.0)))
    assert loop.finish_reason == "length" and loop.usage.output_tokens < 100, "cut where it loops, not at 200"
    with pytest.raises(ContextLengthError, match="n_ctx=2048"):
        engine.complete(Request(model=xl_lm.model, messages=(Message.user("word " * 2100),),
                                config=Config(max_tokens=4)))


@pytest.mark.real_model
def test_a_new_prebuilt_engine_starts_from_the_prefix_saved_on_disk(xl_lm: dspy.LM, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path))
    monkeypatch.delenv("TEXT2SQL_KV_CACHE_BYTES", raising=False)
    path = xl_lm.engine.load().model_path
    prefix = "You answer questions about this schema.\n" + "\n".join(
        f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, amount_{i} REAL);" for i in range(40))
    messages = [{"role": "system", "content": prefix}, {"role": "user", "content": "Count the rows of t1."}]
    first = SharedXLlama(path, n_ctx=2048, n_threads=1)
    assert first.held_share(prefix) < 0.5, "no cache holds the prefix yet: cold"
    _, cached_first = first.chat(messages, max_tokens=4, temperature=0.0, stop=[])
    first.close()
    assert cached_first == 0 and list(tmp_path.glob("kv/xl-*/*.slot")), "the first server saves its prefix"
    second = SharedXLlama(path, n_ctx=2048, n_threads=1)
    assert second.held_share(prefix) >= 0.9, "a new server sees the prefix on disk: warm"
    messages[1]["content"] = "Count the rows of t2."
    result, cached_second = second.chat(messages, max_tokens=4, temperature=0.0, stop=[])
    second.close()
    assert cached_second > 0.8 * result["usage"]["prompt_tokens"], "a new server reuses the saved prefix"


def test_the_settings_map_onto_the_servers_parameters(tmp_path: Path) -> None:
    xlc = pytest.importorskip("xllamacpp")
    shared = object.__new__(SharedXLlama)
    shared.__dict__.update(model_path=tmp_path / "m.gguf", n_ctx=12288, prefix_cache=True, prefix_cache_bytes=1 << 30,
                           settings=LlamaSettings(n_threads=3, n_batch=256, n_ubatch=128, type_kv=8, flash_attn=True),
                           disk=SlotFileStore(tmp_path / "kv", capacity_bytes=1), _api_key="k")
    p = shared.server_params()
    assert (p.n_ctx, p.n_parallel, p.cpuparams.n_threads, p.cpuparams_batch.n_threads) == (12288, 1, 3, 3)
    assert (p.n_batch, p.n_ubatch, p.cache_type_k, p.cache_type_v) == (256, 128, xlc.ggml_type(8), xlc.ggml_type(8))
    assert p.flash_attn_type == xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED
    assert p.no_extra_bufts and not p.ctx_shift and not p.fit_params and not p.warmup and p.cache_ram_mib == 1024
    assert p.slot_save_path == str(tmp_path / "kv") + "/", "the server joins it to a file name without a separator"
    assert p.api_keys == ["k"] and not p.ui
