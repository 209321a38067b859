#!/usr/bin/env python
"""The engine on a long prefix (not a test): the bundled 31-table schema (~7,350 tokens) read cold, then
four more questions served from it. Prints (seconds, prompt tokens, tokens served from cache, generated).
Compare settings in separate processes, e.g. ``TEXT2SQL_LLAMA_FLASH_ATTN=1 python benchmarks/bench_long_context.py``.
"""

from __future__ import annotations

import time

from text2sql_dspy.programs.dataset import BUNDLED_DATA, load_split
from text2sql_dspy.programs.db.source import open_source
from text2sql_dspy.programs.llm.factory import build_lm
from text2sql_dspy.programs.retrieval.schema_view import schema_view


def main() -> int:
    examples = load_split(BUNDLED_DATA, "test", limit=5)
    shared = build_lm("local").engine.load()
    print(shared.settings)
    source = open_source(examples[0].db_path)
    for ex in examples:
        schema = schema_view(source, ex.question).text
        messages = [{"role": "system", "content": "You write sqlite queries. Reply with the SQL only."},
                    {"role": "user", "content": f"{schema}\n\nQuestion: {ex.question}\nReply with the SQL only."}]
        start = time.perf_counter()
        result, cached = shared.chat(messages, max_tokens=64, temperature=0.0, repeat_penalty=1.0)
        usage = result["usage"]
        print((round(time.perf_counter() - start, 2), usage["prompt_tokens"], cached, usage["completion_tokens"]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
