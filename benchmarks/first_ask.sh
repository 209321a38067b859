#!/bin/bash
# `text2sql ask` as a new user meets it: a cache folder of its own (the verified model file linked in, nothing else:
# no database copy, no value index, no KV prefix cache), the bundled database, default settings and threads.
# Prints one JSON line a question: the wall seconds of the whole command and the answer's own latency, model calls,
# prompt tokens, tables shown, SQL and verdict. The default questions are the README's and a plain count.
#   [ASK_ARGS="--retrieval keyword --top-k 3"] bash benchmarks/first_ask.sh [QUESTION...]
# TEXT2SQL, PYTHON: other commands than the repository's .venv ones, MODEL: the model file (default: the embedded
# model's, fetched where missing) (the tests' stand-ins).
REPO=$(cd "$(dirname "$0")/.." && pwd)
T2S=${TEXT2SQL:-$REPO/.venv/bin/text2sql}
PY=${PYTHON:-$REPO/.venv/bin/python}
MODEL=${MODEL:-$("$PY" -c "from text2sql_dspy.programs.llm.model_files import ensure_local_model; print(ensure_local_model(progress=False))")}
[ $# -gt 0 ] || set -- "How many users are blocked right now?" "How many users are there?"
for question in "$@"; do
  cache=$(mktemp -d)
  ln -s "$MODEL" "$cache/$(basename "$MODEL")" && cp "$MODEL.sha256" "$cache/" 2>/dev/null
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  TEXT2SQL_CACHE=$cache "$T2S" ask "$question" --json $ASK_ARGS > "$cache/answer.json" 2> "$cache/stderr.txt"
  rc=$?
  end=$(date +%s.%N)
  "$PY" - "$cache/answer.json" "$question" "$rc" "$start" "$end" <<'PY'
import json, os, sys
path, question, rc, start, end = sys.argv[1:]
try:
    answer = json.load(open(path))
except ValueError:
    answer = {}
metrics = answer.get("metrics") or {}
print(json.dumps({"ask args": os.environ.get("ASK_ARGS", ""), "question": question, "rc": int(rc),
                  "wall s": round(float(end) - float(start), 1), "answer s": round(metrics.get("latency_s") or 0, 1),
                  "lm calls": metrics.get("lm_calls"), "prompt tokens": metrics.get("prompt_tokens"),
                  "tables shown": len(answer.get("tables") or []), "sql": answer.get("sql"),
                  "verdict": answer.get("verdict")}))
PY
  rm -rf "$cache"
done
