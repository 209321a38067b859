"""Record every model call V2 makes on the bundled questions START..END of data/test.json after warm(): its
messages, options and reply, pickled to OUT.  python record_calls.py START END OUT"""
import json, os, sys, time, pickle
os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"
from text2sql_dspy.programs.llm import shared_llama as S
orig = S.SharedLlama.chat
CALLS = []
def chat(self, messages, **o):
    r, cached = orig(self, messages, **o)
    CALLS.append({"messages": messages, "options": {k: v for k, v in o.items() if k not in ("logits_processor",)},
                  "text": r["choices"][0]["message"]["content"]})
    return r, cached
S.SharedLlama.chat = chat
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import ensure_bundled_database
from text2sql_dspy.programs.catalog.values import value_index
from text2sql_dspy.programs.source import open_source
db = str(ensure_bundled_database()); src = open_source(db); value_index(src)
tests = json.load(open("data/test.json"))[int(sys.argv[1]):int(sys.argv[2])]
p = make_program("v2", db_path=db)
p.warm(db)
for q in tests:
    p.run(q["question"], db)
pickle.dump(CALLS, open(sys.argv[3], "wb"))
print(len(CALLS), "calls")
