"""Replay recorded calls with prompt-lookup decoding off (0) and on (N draft tokens); time and compare text."""
import os, pickle, sys, time, json
os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"
import llama_cpp
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
from text2sql_dspy.programs.llm.shared_llama import get_shared_llama

calls = pickle.load(open(sys.argv[1], "rb"))
modes = [int(x) for x in sys.argv[2].split(",")]
ngram = int(sys.argv[3]) if len(sys.argv) > 3 else 2
shared = get_shared_llama()
llm = shared.llm
cls = type(llm)

def eval_(self, tokens):
    self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
    every = self.draft_model is not None and len(tokens) <= 64
    for i in range(0, len(tokens), self.n_batch):
        batch = tokens[i: min(len(tokens), i + self.n_batch)]
        self._batch.set_batch(batch=batch, n_past=self.n_tokens, logits_all=every)
        self._ctx.decode(self._batch)
        self.input_ids[self.n_tokens: self.n_tokens + len(batch)] = batch
        self.n_tokens += len(batch)
        self._requires_eval = False
cls.eval = eval_

tot = {m: 0.0 for m in modes}; same = {m: 0 for m in modes}; toks = {m: 0 for m in modes}
for i, c in enumerate(calls):
    opts = dict(c["options"]); opts.pop("stopping_criteria", None)
    llm.draft_model = None
    shared.chat(c["messages"], **{**opts, "max_tokens": 1, "temperature": 0.0})  # prompt into the live context
    texts = {}
    for m in modes:
        llm.draft_model = LlamaPromptLookupDecoding(max_ngram_size=ngram, num_pred_tokens=m) if m else None
        t = time.perf_counter()
        r, _ = shared.chat(c["messages"], **{**opts, "temperature": 0.0})
        dt = time.perf_counter() - t
        texts[m] = r["choices"][0]["message"]["content"]
        tot[m] += dt; toks[m] += r["usage"]["completion_tokens"]
        print(i, m, round(dt, 2), r["usage"]["completion_tokens"], flush=True)
    for m in modes:
        same[m] += texts[m] == texts[modes[0]]
print(json.dumps({"seconds": tot, "completion_tokens": toks, "same_text_as_first_mode": same, "calls": len(calls)}))
