#!/usr/bin/env python
"""The engine on a long prefix (not a test): the bundled 31-table schema (~7,350 tokens) read cold, then
four more questions served from it. Prints (seconds, prompt tokens, tokens served from cache, generated).
Compare settings in separate processes, e.g. ``TEXT2SQL_LLAMA_FLASH_ATTN=1 python benchmarks/bench_long_context.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from text2sql_dspy.programs.bundled import BUNDLED_DATA
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.llm.factory import build_lm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_speed import raw_messages  # noqa: E402  (the speed benchmark's raw-call prompt)


def main() -> int:
    examples = load_split(BUNDLED_DATA, "test", limit=5)
    shared = build_lm("local").engine.load()
    print(shared.settings)
    for ex in examples:
        messages = raw_messages(ex.question, ex.db_path)
        start = time.perf_counter()
        result, cached = shared.chat(messages, max_tokens=64, temperature=0.0, repeat_penalty=1.0)
        usage = result["usage"]
        print((round(time.perf_counter() - start, 2), usage["prompt_tokens"], cached, usage["completion_tokens"]),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
