"""The engine's llama.cpp settings: the AMX policy and its overrides, proven without loading the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import llama_cpp
import llama_cpp.llama_cpp as native
import pytest

from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.llm import llama_engine
from text2sql_dspy.programs.llm.llama_settings import (
    EXTRA_BUFTS_ENV,
    THREADS_ENV,
    cpu_flags,
    cpu_has_amx,
    engine_settings,
)

SAPPHIRE_RAPIDS = frozenset({"fpu", "avx2", "avx512f", "amx_tile", "amx_int8", "amx_bf16"})
EPYC = frozenset({"fpu", "avx2", "avx512f"})


class RecordingLlama:
    """Stands in for ``llama_cpp.Llama``: records what the engine passes, as llama.cpp would see it."""

    seen: list[dict[str, Any]] = []

    def __init__(self, model_path: str, **kwargs: Any):
        model_params = native.llama_model_default_params()  # what Llama() builds its model params from
        RecordingLlama.seen.append({"model_path": model_path, "use_extra_bufts": model_params.use_extra_bufts,
                                    **kwargs})

    def set_cache(self, cache: Any) -> None:
        pass


@pytest.fixture
def recording(monkeypatch):
    RecordingLlama.seen = []
    monkeypatch.setattr(llama_cpp, "Llama", RecordingLlama)
    monkeypatch.delenv(EXTRA_BUFTS_ENV, raising=False)
    monkeypatch.delenv(THREADS_ENV, raising=False)
    return RecordingLlama.seen


def load_with(flags: frozenset[str], monkeypatch) -> dict[str, Any]:
    monkeypatch.setattr("text2sql_dspy.programs.llm.llama_settings.cpu_flags", lambda *a, **k: flags)
    llama_engine.SharedLlama(Path("/models/fake.gguf"), n_ctx=4096, n_threads=2, prefix_cache=False)
    return RecordingLlama.seen[-1]


def test_amx_cpu_loads_without_extra_buffer_types(recording, monkeypatch):
    params = load_with(SAPPHIRE_RAPIDS, monkeypatch)
    assert params["use_extra_bufts"] is False
    assert params["n_threads"] == params["n_threads_batch"] == 2
    assert params["n_ctx"] == 4096


def test_cpu_without_amx_loads_plain_weights_by_default(recording, monkeypatch):
    # measured: repacking made a 2-core EPYC no faster and doubled the load time (llama_settings docstring)
    assert load_with(EPYC, monkeypatch)["use_extra_bufts"] is False


@pytest.mark.parametrize(("value", "flags", "expected"), [
    ("1", SAPPHIRE_RAPIDS, True), ("1", EPYC, True), ("0", EPYC, False), ("auto", SAPPHIRE_RAPIDS, False),
    ("auto", EPYC, False),
])
def test_environment_overrides_the_policy_both_ways(recording, monkeypatch, value, flags, expected):
    monkeypatch.setenv(EXTRA_BUFTS_ENV, value)
    assert load_with(flags, monkeypatch)["use_extra_bufts"] is expected


def test_the_override_is_undone_after_loading(recording, monkeypatch):
    load_with(SAPPHIRE_RAPIDS, monkeypatch)
    assert native.llama_model_default_params().use_extra_bufts is True  # llama.cpp's own default again


def test_bad_override_names_the_fix(monkeypatch):
    monkeypatch.setenv(EXTRA_BUFTS_ENV, "maybe")
    with pytest.raises(ConfigurationError, match=EXTRA_BUFTS_ENV):
        engine_settings(2, flags=EPYC)
    monkeypatch.delenv(EXTRA_BUFTS_ENV)
    monkeypatch.setenv(THREADS_ENV, "zero")
    with pytest.raises(ConfigurationError, match=THREADS_ENV):
        engine_settings(flags=EPYC)


def test_threads_from_environment(monkeypatch):
    monkeypatch.delenv(EXTRA_BUFTS_ENV, raising=False)
    monkeypatch.setenv(THREADS_ENV, "3")
    assert engine_settings(flags=EPYC).n_threads == 3
    assert engine_settings(5, flags=EPYC).n_threads == 5  # an explicit argument wins


def test_cpu_flags_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 amx_bf16 amx_tile amx_int8\n\nprocessor\t: 1\n")
    assert cpu_has_amx(cpu_flags(info))
    info.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm\n")  # ARM's spelling
    assert cpu_flags(info) == {"fp", "asimd", "evtstrm"} and not cpu_has_amx(cpu_flags(info))
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_logprob_recorder_reads_the_sampler_steps():
    """Three greedy steps over a 5-token vocabulary: chosen tokens, their log-probabilities, the alternatives."""
    import numpy as np

    from text2sql_dspy.programs.llm.token_logprobs import LogprobRecorder

    vocab = ["A", "B", "C", "<end>", "D"]
    recorder = LogprobRecorder(2, lambda i: vocab[i])
    prompt = [9, 9, 9]
    rows = [np.array([2.0, 1.0, 0.0, -1.0, -5.0]), np.array([0.0, 3.0, 0.0, 0.0, 0.0]),
            np.array([0.0, 0.0, 0.0, 4.0, 0.0])]
    ids = list(prompt)
    for step, row in enumerate(rows):
        recorder(np.array(ids), row.astype(np.float32))
        ids.append(int(np.argmax(row)))  # llama.cpp evaluates the chosen token before the next step
    out = recorder.token_logprobs("AB", greedy=True)
    assert [t.token for t in out] == ["A", "B"]  # the end-of-turn step lies past the text
    expected = rows[0][0] - np.log(np.exp(rows[0]).sum())
    assert abs(out[0].logprob - expected) < 1e-5
    assert [a.token for a in out[0].top] == ["A", "B"]
    assert out[1].top[0].token == "B" and out[1].top[0].logprob == pytest.approx(out[1].logprob)
