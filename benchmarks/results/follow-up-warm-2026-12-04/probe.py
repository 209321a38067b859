#!/usr/bin/env python
"""What a follow-up's edit prompt reads cold and warm on the bundled database: four one-token calls in one process
(the draft, the edit, each again), each with its seconds and the engine's running prompt and cached-prompt tokens;
then the lengths of the draft's and the edit's prompts and of their common prefix, in characters. Not a test.

    TEXT2SQL_N_THREADS=1 python benchmarks/results/follow-up-warm-2026-12-04/probe.py
"""
import os
import time

os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"  # no disk tier: nothing an earlier process read helps

import dspy  # noqa: E402

from text2sql_dspy.programs.agents.base import WARM_QUESTION  # noqa: E402
from text2sql_dspy.programs.agents.drafting import draft_sql  # noqa: E402
from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.bundled import ensure_bundled_database  # noqa: E402
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter  # noqa: E402

db = str(ensure_bundled_database())
p = make_program("v2", db_path=db)
src = p.source(db)
view = p.schema(src, WARM_QUESTION, cold=False)
eng = p.lm.engine


def stats() -> dict:
    s = eng.stats.as_dict()
    return {k: s.get(k) for k in ("prompt_tokens", "cached_prompt_tokens")}


for name, pred, extra in (("draft", p.draft, {}), ("edit", p.edit, {"previous_sql": "SELECT 1"}),
                          ("draft again", p.draft, {}), ("edit again", p.edit, {"previous_sql": "SELECT 2"})):
    t = time.perf_counter()
    with dspy.context(lm=p.lm, adapter=StablePrefixAdapter()):
        draft_sql(pred, p.lm, source=src, question=WARM_QUESTION, table_schemas=view.text, facts="", max_tokens=1,
                  **extra)
    print(name, round(time.perf_counter() - t, 1), stats(), flush=True)
msgs = [h["messages"] for h in p.lm.history[-4:]]
a, b = "\n".join(m["content"] for m in msgs[0]), "\n".join(m["content"] for m in msgs[1])
print(len(a), len(b), len(os.path.commonprefix([a, b])))
