"""Milliseconds per generated token through SharedLlama.chat (the engine's path), over the same prompts as
batch_speed.py, with the prefix already read: to compare against batch_speed.py's raw llama_decode steps.

    TEXT2SQL_N_THREADS=2 python engine_speed.py
"""
import glob
import sqlite3
import time
from pathlib import Path

import llama_cpp

from text2sql_dspy.programs.llm.shared_llama import get_shared_llama
from text2sql_dspy.programs.llm.token_logprobs import LogprobRecorder

db = glob.glob(str(Path.home() / ".cache/text2sql-dspy/databases/*/saas.sqlite"))[0]
ddl = [r[0] for r in sqlite3.connect(db).execute("select sql from sqlite_master where type='table'") if r[0]]
shared = get_shared_llama(Path.home() / ".cache/text2sql-dspy/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                          n_ctx=12288, prefix_cache=False)
for label, text in (("short", "\n".join(ddl[:4])), ("long", "\n".join(ddl * 3))):
    system = {"role": "system", "content": "You write SQLite.\n" + text}
    for i, q in enumerate(["How many customers are there?", "List every plan name with its monthly price, "
                           "and for each plan the number of active subscriptions, ordered by price."]):
        for mode in ("plain", "logprobs"):
            options = dict(temperature=0.0, max_tokens=40, stop=[], repeat_penalty=1.0)
            if mode == "logprobs":
                recorder = LogprobRecorder(5, shared.piece)
                options["logits_processor"] = llama_cpp.LogitsProcessorList([recorder])
            start = time.perf_counter()
            result, cached = shared.chat([system, {"role": "user", "content": q + f" ({mode})"}], **options)
            took = time.perf_counter() - start
            usage = result["usage"]
            print(f"{label} q{i} {mode}: {took:.2f} s, prompt {usage['prompt_tokens']} ({cached} cached), "
                  f"{usage['completion_tokens']} generated, "
                  f"{took / max(1, usage['completion_tokens']) * 1000:.0f} ms a token (all in)", flush=True)
