#!/usr/bin/env python
"""Engine throughput on cold prompts: model load time, prompt and generation tokens/s (not a test).

Ten Spider dev prompts (every sixth of the first 60), each the schema as the programs render it plus
the question, evaluated from an empty KV cache: once for one token (prompt speed), once for 48
(generation speed). Compare settings in separate processes, alternating, e.g.

    TEXT2SQL_LLAMA_EXTRA_BUFTS=1 TEXT2SQL_KV_CACHE_BYTES=0 python benchmarks/bench_cold_prompts.py
    TEXT2SQL_LLAMA_EXTRA_BUFTS=0 TEXT2SQL_KV_CACHE_BYTES=0 python benchmarks/bench_cold_prompts.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.llm.factory import build_lm

SPIDER = Path(__file__).resolve().parents[1].parent / "shared/benchmarks/spider-public"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_speed import raw_messages  # noqa: E402  (the speed benchmark's raw-call prompt)


def main() -> int:
    examples = load_split(SPIDER, "dev", limit=60)[::6]
    lm = build_lm("local")
    start = time.perf_counter()
    shared = lm.engine.load()
    load = time.perf_counter() - start
    shared.set_prefix_cache(False)
    prompt_tokens = gen_tokens = 0
    prompt_s = gen_s = 0.0
    for ex in examples:
        messages = raw_messages(ex.question, ex.db_path)
        shared.llm.reset()
        start = time.perf_counter()
        shared.llm.create_chat_completion(messages=messages, max_tokens=1, temperature=0.0)
        first = time.perf_counter() - start
        shared.llm.reset()
        start = time.perf_counter()
        result = shared.llm.create_chat_completion(messages=messages, max_tokens=48, temperature=0.0)
        whole = time.perf_counter() - start
        prompt_tokens += result["usage"]["prompt_tokens"]
        prompt_s += first
        gen_tokens += result["usage"]["completion_tokens"]
        gen_s += max(1e-3, whole - first)
    print(f"{shared.settings}\nextra_bufts={os.environ.get('TEXT2SQL_LLAMA_EXTRA_BUFTS', 'default')} load {load:.2f}s "
          f"prompt {prompt_tokens / prompt_s:.1f} tok/s gen {gen_tokens / gen_s:.1f} tok/s over {len(examples)} "
          "prompts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
