"""Replay recorded calls greedily in this process's engine settings; print seconds and tokens."""
import os, pickle, sys, time, json
os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"
from text2sql_dspy.programs.llm.shared_llama import get_shared_llama
calls = pickle.load(open(sys.argv[1], "rb"))
shared = get_shared_llama()
print("settings", shared.settings, flush=True)
t = time.perf_counter(); shared.chat(calls[0]["messages"], max_tokens=1, temperature=0.0); cold = time.perf_counter() - t
tot = 0.0; toks = 0; texts = []
for i, c in enumerate(calls[1:]):
    opts = dict(c["options"]); opts.pop("stopping_criteria", None)
    shared.chat(c["messages"], **{**opts, "max_tokens": 1, "temperature": 0.0})
    t = time.perf_counter(); r, _ = shared.chat(c["messages"], **{**opts, "temperature": 0.0}); dt = time.perf_counter() - t
    tot += dt; toks += r["usage"]["completion_tokens"]; texts.append(r["choices"][0]["message"]["content"])
json.dump(texts, open(sys.argv[2], "w"))
print(json.dumps({"cold s": round(cold, 1), "gen s": round(tot, 1), "tokens": toks, "tok/s": round(toks / tot, 2)}), flush=True)
