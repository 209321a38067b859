"""How long k sampled replies take when decoded together in one batch over a shared prompt, against one reply.

The prompt is the bundled database's DDL (about 7,700 tokens) or its first tables (about 700), read once into
sequence 0; each trial copies it to sequences 1..k-1 (a unified KV cache shares the cells) and decodes
``--tokens`` steps of k tokens each. Only ratios within one run count.

    python batch_speed.py --threads 1 --tokens 48
"""
import argparse
import ctypes
import glob
import sqlite3
import time
from pathlib import Path

import llama_cpp
import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--tokens", type=int, default=48)
parser.add_argument("--ks", default="1,2,3,4")
args = parser.parse_args()

model_path = str(Path.home() / ".cache/text2sql-dspy/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
db = glob.glob(str(Path.home() / ".cache/text2sql-dspy/databases/*/saas.sqlite"))[0]
ddl = [r[0] for r in sqlite3.connect(db).execute("select sql from sqlite_master where type='table'") if r[0]]

import llama_cpp.llama_cpp as low

defaults = low.llama_context_default_params


def params():
    p = defaults()
    p.n_seq_max, p.kv_unified = 4, True
    return p


low.llama_context_default_params = params
llm = llama_cpp.Llama(model_path, n_ctx=12288, n_batch=512, n_threads=args.threads, n_threads_batch=args.threads,
                      verbose=False)
ctx, mem = llm._ctx.ctx, llama_cpp.llama_get_memory(llm._ctx.ctx)
n_vocab = llm.n_vocab()
print("n_seq_max", llama_cpp.llama_n_seq_max(ctx), "threads", args.threads, flush=True)


def decode(tokens, positions, seqs, want_logits):
    batch = llama_cpp.llama_batch_init(len(tokens), 0, 4)
    batch.n_tokens = len(tokens)
    for i, (t, p, s, w) in enumerate(zip(tokens, positions, seqs, want_logits)):
        batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = t, p, 1, w
        batch.seq_id[i][0] = s
    rc = llama_cpp.llama_decode(ctx, batch)
    llama_cpp.llama_batch_free(batch)
    assert rc == 0, rc


def read(prompt):
    llama_cpp.llama_memory_clear(mem, True)
    for start in range(0, len(prompt), 512):
        chunk = prompt[start:start + 512]
        decode(chunk, range(start, start + len(chunk)), [0] * len(chunk),
               [start + i == len(prompt) - 1 for i in range(len(chunk))])
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(n_vocab,)).copy()


def trial(n, last_logits, k, steps, rng):
    for s in range(1, k):
        llama_cpp.llama_memory_seq_cp(mem, 0, s, 0, n)
    logits = [last_logits] * k
    start = time.perf_counter()
    for step in range(steps):
        picks = []
        for row in logits:
            z = (row - row.max()) / 0.7
            p = np.exp(z); p /= p.sum()
            picks.append(int(rng.choice(n_vocab, p=p)))
        decode(picks, [n + step] * k, list(range(k)), [True] * k)
        logits = [np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(n_vocab,)) for i in range(k)]
    took = time.perf_counter() - start
    for s in range(k):
        llama_cpp.llama_memory_seq_rm(mem, s, n if s == 0 else 0, -1)
    return took


rng = np.random.default_rng(0)
for label, text in (("short", "\n".join(ddl[:4])), ("long", "\n".join(ddl * 3))):
    prompt = llm.tokenize(("You write SQLite.\n" + text + "\nQuestion: how many customers?\nSQL:").encode())
    t0 = time.perf_counter()
    last = read(prompt)
    print(f"{label}: {len(prompt)} prompt tokens read in {time.perf_counter() - t0:.1f} s", flush=True)
    for k in [int(x) for x in args.ks.split(",")]:
        took = trial(len(prompt), last, k, args.tokens, rng)
        print(f"  k={k}: {took:.2f} s for {args.tokens} steps, {k * args.tokens / took:.1f} tokens/s, "
              f"{took / args.tokens * 1000:.0f} ms a step", flush=True)
