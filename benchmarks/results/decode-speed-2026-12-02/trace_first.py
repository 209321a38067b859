"""V2 on the first N bundled questions after warm(), printing each model call (seconds, prompt and cached tokens,
reply tokens) and each answer.  python trace_first.py N"""
import json, os, sys, time
os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"
from text2sql_dspy.programs.llm import shared_llama as S
orig = S.SharedLlama.chat
LOG = []
def chat(self, messages, **o):
    t = time.perf_counter()
    r, cached = orig(self, messages, **o)
    u = r.get("usage") or {}
    sysm = messages[0]["content"]
    i = sysm.find("Your input fields")
    LOG.append({"s": round(time.perf_counter() - t, 1), "prompt": u.get("prompt_tokens"), "cached": cached,
                "out": u.get("completion_tokens"), "max": o.get("max_tokens"), "temp": o.get("temperature"),
                "sig": sysm[i:i+120].replace("\n", " "), "user": messages[1]["content"][:60].replace("\n"," ") if len(messages) > 1 else ""})
    print("CALL", json.dumps(LOG[-1]), flush=True)
    return r, cached
S.SharedLlama.chat = chat
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.catalog.values import value_index
from text2sql_dspy.programs.source import open_source
db = str(ensure_bundled_database()); src = open_source(db); value_index(src)
tests = json.load(open("data/test.json"))[:int(sys.argv[1])]
p = make_program("v2", db_path=db)
t = time.perf_counter(); print("warm", p.warm(db), round(time.perf_counter()-t,1), flush=True)
for q in tests:
    t = time.perf_counter(); a = p.run(q["question"], db)
    print("ANSWER", round(time.perf_counter()-t,1), q["question"], "|", a.sql, flush=True)
