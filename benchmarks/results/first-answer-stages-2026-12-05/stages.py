"""Where a warmed first answer's seconds go: V2 on the bundled database after ``warm()`` (what ``serve`` does at
start-up), the first N questions of ``data/test.json``, each stage's seconds with the prompt tokens read anew and the
tokens generated before it. The disk tier of the KV cache is off, as in ``benchmarks/bench_first_answer.py``. Not a
test.

    TEXT2SQL_N_THREADS=1 python benchmarks/results/first-answer-stages-2026-12-05/stages.py [N]
"""

import json
import os
import sys
import time
from pathlib import Path

os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"  # before the engine is built

from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.bundled import ensure_bundled_database  # noqa: E402
from text2sql_dspy.programs.catalog.values import value_index  # noqa: E402
from text2sql_dspy.programs.progress import listen  # noqa: E402
from text2sql_dspy.programs.source import open_source  # noqa: E402

TEST = Path(__file__).resolve().parents[3] / "data" / "test.json"
count = int(sys.argv[1]) if len(sys.argv) > 1 else 3
db = str(ensure_bundled_database())
value_index(open_source(db))  # built (or read) before anything is timed
program = make_program("v2", db_path=db)
start = time.perf_counter()
program.warm(db)
print(f"warm-up {time.perf_counter() - start:.1f} s")
stats = program.lm.engine.stats


def counters() -> tuple[float, int, int]:
    return time.perf_counter(), stats.prompt_tokens - stats.cached_prompt_tokens, stats.completion_tokens


for test in json.loads(TEST.read_text(encoding="utf-8"))[:count]:
    first = last = counters()
    print(f"question: {test['question']}")

    def on(stage: str, detail: dict) -> None:
        global last
        now = counters()
        print(f"  {now[0] - last[0]:5.1f} s, {now[1] - last[1]:4d} prompt tokens read, {now[2] - last[2]:4d} generated"
              f"  -> {stage}{' (redraft)' if detail.get('redraft') else ''}")
        last = now

    with listen(on):
        answer = program.run(test["question"], db)
    on("end", {})
    print(f"  total {last[0] - first[0]:.1f} s, {answer.metrics.lm_calls} calls, "
          f"{last[2] - first[2]} tokens generated; steps: {' '.join(step.kind for step in answer.steps)}")
