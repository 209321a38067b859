#!/usr/bin/env python
"""The embedded GGUF through two llama.cpp bindings, side by side (issue 83): llama-cpp-python (today's engine, built
from source at install) and xllamacpp (a prebuilt wheel). Not a test.

    # 1. Record real V2 prompts: V2 answers a few bundled questions on today's engine, one thread, and every LM
    #    request it makes is written down (messages, max_tokens, stop, temperature, seed, logprobs).
    TEXT2SQL_N_THREADS=1 python benchmarks/bench_engines.py record --questions 3 --limit 10 \\
        --out benchmarks/results/xllamacpp-2026-12-07/prompts.jsonl
    # 2. Replay them on both engines in one process, alternating which goes first, each engine's caches emptied
    #    before the first prompt and then used as the product uses them (the prompts share their schema prefix).
    python benchmarks/bench_engines.py compare --prompts benchmarks/results/xllamacpp-2026-12-07/prompts.jsonl \\
        --n-threads 1 --json benchmarks/results/xllamacpp-2026-12-07/compare.json
    # 3. Memory and whether it runs, each engine in a process of its own (extra buffer types on and off).
    python benchmarks/bench_engines.py memory --json benchmarks/results/xllamacpp-2026-12-07/memory.json
    # 4. What the embedded path relies on, on xllamacpp (seeds, n_ctx, threads, stop, prefill, logprobs, guard).
    python benchmarks/bench_engines.py capabilities --n-ctx 2048
    # 5. The disk tier across processes: `text2sql ask` cold, then again in a new process.
    python benchmarks/bench_engines.py first-answer --engines xllamacpp

``compare`` prints, per prompt and in total: prompt tokens read and their tokens/s, generated tokens and their
tokens/s (llama.cpp's own timings: llama-cpp-python's perf counters, the server's ``timings``), wall seconds, prompt
tokens the KV cache served, whether the replies are identical (else where they first differ), and, where the prompt
asked for log-probabilities, how far the chosen tokens' log-probabilities lie apart and how often the top
alternatives agree. Both engines are the product's (:class:`LlamaCppEngine`, :class:`XLlamaCppEngine`), so the
prompt each reads is the product's (chat template, prefill, stop strings, repetition guard).
The disk tier of the KV cache is off (``TEXT2SQL_KV_CACHE_BYTES=0``) in every subcommand.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEST = REPO / "data" / "test.json"
ENGINES = ("llama-cpp-python", "xllamacpp")


# -- prompt records (pure) ------------------------------------------------------------------------------------------
def record_of(messages: list[dict[str, str]], config: Any) -> dict[str, Any]:
    """One recorded request: its chat messages (as the engine renders them) and the options that shape a reply."""
    return {
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "stop": list(config.stop),
        "seed": config.seed,
        "top_p": config.top_p,
        "top_k": config.top_k,
        "logprobs": config.logprobs,
    }


def request_of(record: dict[str, Any], model: str = "local/qwen2.5-coder-1.5b") -> Any:
    """The ``dspy.lm15.Request`` a record was made from (a leading system message becomes the system prompt)."""
    from dspy.lm15 import Config, Message, Request

    messages = list(record["messages"])
    system = messages.pop(0)["content"] if messages and messages[0]["role"] == "system" else None
    built = tuple(Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"])
                  for m in messages)
    config = Config(max_tokens=record.get("max_tokens"), temperature=record.get("temperature"),
                    stop=tuple(record.get("stop") or ()), seed=record.get("seed"), top_p=record.get("top_p"),
                    top_k=record.get("top_k"), logprobs=record.get("logprobs"))
    return Request(model=model, system=system, messages=built, config=config)


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


# -- comparing two replies (pure) -----------------------------------------------------------------------------------
def first_difference(a: str, b: str) -> int | None:
    """The first character index where ``a`` and ``b`` differ, or None where they are equal."""
    if a == b:
        return None
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


@dataclass
class LogprobAgreement:
    """How two replies' token log-probabilities compare over the tokens both wrote alike (up to the first token
    that differs)."""

    aligned: int = 0  # tokens compared
    max_abs_diff: float = 0.0  # of the chosen tokens' log-probabilities
    mean_abs_diff: float = 0.0
    same_top1: float = 1.0  # share of positions whose likeliest alternative is the same token
    same_topk: float = 1.0  # share of positions whose top-k alternatives are the same set
    prob_a: float | None = None  # exp(mean log-probability) of the aligned tokens, as the drafts' confidence reads
    prob_b: float | None = None


def compare_logprobs(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> LogprobAgreement:
    """Compare two replies' token entries (``{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}``)."""
    diffs, top1, topk, la, lb = [], [], [], [], []
    for x, y in zip(a, b):
        if x.get("token") != y.get("token"):
            break
        tx, ty = x.get("top_logprobs") or [], y.get("top_logprobs") or []
        if not tx and not ty and float(x["logprob"]) == 0.0 == float(y["logprob"]):
            continue  # a prefill: given, not written
        diffs.append(abs(float(x["logprob"]) - float(y["logprob"])))
        la.append(float(x["logprob"]))
        lb.append(float(y["logprob"]))
        if tx and ty:
            top1.append(tx[0]["token"] == ty[0]["token"])
            topk.append({t["token"] for t in tx} == {t["token"] for t in ty})
    if not diffs:
        return LogprobAgreement()
    return LogprobAgreement(
        aligned=len(diffs), max_abs_diff=max(diffs), mean_abs_diff=statistics.fmean(diffs),
        same_top1=statistics.fmean(top1) if top1 else 1.0, same_topk=statistics.fmean(topk) if topk else 1.0,
        prob_a=math.exp(statistics.fmean(la)), prob_b=math.exp(statistics.fmean(lb)),
    )


@dataclass
class Run:
    """One engine's reply to one prompt, with llama.cpp's timings."""

    engine: str
    text: str
    finish: str
    prompt_tokens: int
    cached_tokens: int
    prompt_read: int  # prompt tokens evaluated (not served from the KV cache)
    prompt_ms: float
    generated: int
    generate_ms: float
    wall_s: float
    logprobs: list[dict[str, Any]] = field(default_factory=list)


def rate(tokens: float, ms: float) -> float | None:
    return tokens / (ms / 1000.0) if ms > 0 else None


def totals(runs: list[Run]) -> dict[str, float | None]:
    """An engine's totals over a run: tokens, seconds and tokens/s of prompt reading and of generation."""
    read, pms = sum(r.prompt_read for r in runs), sum(r.prompt_ms for r in runs)
    gen, gms = sum(r.generated for r in runs), sum(r.generate_ms for r in runs)
    return {"prompt_read": read, "prompt_s": pms / 1000, "prompt_tps": rate(read, pms), "generated": gen,
            "generate_s": gms / 1000, "generate_tps": rate(gen, gms), "wall_s": sum(r.wall_s for r in runs),
            "cached": sum(r.cached_tokens for r in runs), "prompt_tokens": sum(r.prompt_tokens for r in runs)}


def ratio(new: float | None, old: float | None) -> str:
    return f"{new / old:.2f}" if new and old else "-"


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(pairs: list[tuple[Run, Run]]) -> str:
    """Markdown: one row per prompt (llama-cpp-python, then xllamacpp), then the totals and the ratios."""
    lines = ["| # | prompt tok (cached) | read tok/s lcp / xl | gen tok | gen tok/s lcp / xl | wall s lcp / xl "
             "| same reply | logprob max abs diff | same top-5 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, (old, new) in enumerate(pairs, 1):
        diff = first_difference(old.text, new.text)
        agree = compare_logprobs(old.logprobs, new.logprobs) if old.logprobs and new.logprobs else None
        lines.append(
            f"| {i} | {old.prompt_tokens} ({old.cached_tokens} / {new.cached_tokens}) "
            f"| {fmt(rate(old.prompt_read, old.prompt_ms))} / {fmt(rate(new.prompt_read, new.prompt_ms))} "
            f"| {old.generated} / {new.generated} "
            f"| {fmt(rate(old.generated, old.generate_ms))} / {fmt(rate(new.generated, new.generate_ms))} "
            f"| {old.wall_s:.1f} / {new.wall_s:.1f} "
            f"| {'yes' if diff is None else f'no (char {diff})'} "
            f"| {fmt(agree.max_abs_diff, 3) if agree else '-'} "
            f"| {fmt(agree.same_topk, 2) if agree else '-'} |")
    a, b = totals([p[0] for p in pairs]), totals([p[1] for p in pairs])
    lines += [
        "",
        "| engine | prompt tokens read | prompt tok/s | generated tokens | gen tok/s | wall s | cached tokens |",
        "|---|---|---|---|---|---|---|",
        f"| llama-cpp-python | {a['prompt_read']} | {fmt(a['prompt_tps'])} | {a['generated']} "
        f"| {fmt(a['generate_tps'])} | {a['wall_s']:.1f} | {a['cached']} |",
        f"| xllamacpp | {b['prompt_read']} | {fmt(b['prompt_tps'])} | {b['generated']} "
        f"| {fmt(b['generate_tps'])} | {b['wall_s']:.1f} | {b['cached']} |",
        f"| ratio xl / lcp | | {ratio(b['prompt_tps'], a['prompt_tps'])} | "
        f"| {ratio(b['generate_tps'], a['generate_tps'])} | {ratio(a['wall_s'], b['wall_s'])} (speed-up) | |",
        "",
        f"Identical replies: {sum(first_difference(o.text, n.text) is None for o, n in pairs)} of {len(pairs)}.",
    ]
    return "\n".join(lines)


# -- running the engines --------------------------------------------------------------------------------------------
def build_engine(name: str, n_ctx: int, n_threads: int | None) -> Any:
    if name == "xllamacpp":
        from text2sql_dspy.programs.llm.xllamacpp_engine import XLlamaCppEngine

        return XLlamaCppEngine(n_ctx=n_ctx, n_threads=n_threads)
    from text2sql_dspy.programs.llm.llama_engine import LlamaCppEngine

    return LlamaCppEngine(n_ctx=n_ctx, n_threads=n_threads)


def run_one(name: str, engine: Any, request: Any) -> Run:
    """One request through ``engine``, timed by llama.cpp's own counters."""
    shared = engine.load()
    perf = None
    if name == "llama-cpp-python":
        import llama_cpp

        ctx = shared.llm._ctx.ctx
        llama_cpp.llama_perf_context_reset(ctx)
    start = time.perf_counter()
    response = engine.complete(request)
    wall = time.perf_counter() - start
    if name == "llama-cpp-python":
        perf = llama_cpp.llama_perf_context(ctx)
        prompt_read, prompt_ms = int(perf.n_p_eval), float(perf.t_p_eval_ms)
        generated, generate_ms = int(perf.n_eval), float(perf.t_eval_ms)
    else:
        t = shared.last_timings
        prompt_read, prompt_ms = int(t.get("prompt_n") or 0), float(t.get("prompt_ms") or 0.0)
        generated, generate_ms = int(t.get("predicted_n") or 0), float(t.get("predicted_ms") or 0.0)
    logprobs = [{"token": lp.token, "logprob": lp.logprob,
                 "top_logprobs": [{"token": a.token, "logprob": a.logprob} for a in lp.top]}
                for lp in response.logprobs or ()]
    return Run(engine=name, text=response.message.parts[0].text, finish=response.finish_reason,
               prompt_tokens=response.usage.input_tokens, cached_tokens=response.usage.cache_read_tokens or 0,
               prompt_read=prompt_read, prompt_ms=prompt_ms, generated=generated, generate_ms=generate_ms,
               wall_s=wall, logprobs=logprobs)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_has_amx() -> bool:
    from text2sql_dspy.programs.llm.llama_settings import cpu_has_amx as has

    return has()


def compare(args: argparse.Namespace) -> int:
    records = read_records(args.prompts)[: args.limit]
    engines = {name: build_engine(name, args.n_ctx, args.n_threads) for name in ENGINES}
    for name, engine in engines.items():
        saved = os.environ.get("TEXT2SQL_LLAMA_EXTRA_BUFTS")
        if name == "xllamacpp" and args.xl_extra_bufts:  # repacked weights: the wheel has no AMX kernels to crash
            os.environ["TEXT2SQL_LLAMA_EXTRA_BUFTS"] = "1"
        try:
            engine.load()
        finally:
            if saved is None:
                os.environ.pop("TEXT2SQL_LLAMA_EXTRA_BUFTS", None)
            else:
                os.environ["TEXT2SQL_LLAMA_EXTRA_BUFTS"] = saved
        engine.load().clear_kv()
    pairs: list[tuple[Run, Run]] = []
    for i, record in enumerate(records):
        order = ENGINES if i % 2 == 0 else ENGINES[::-1]
        runs = {name: run_one(name, engines[name], request_of(record)) for name in order}
        pairs.append((runs["llama-cpp-python"], runs["xllamacpp"]))
        old, new = pairs[-1]
        print(f"prompt {i + 1}/{len(records)}: {old.prompt_tokens} tokens, wall {old.wall_s:.1f} s / "
              f"{new.wall_s:.1f} s, same reply: {first_difference(old.text, new.text) is None}", flush=True)
    report = table(pairs)
    print(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "amx": cpu_has_amx(), "n_threads": args.n_threads, "n_ctx": args.n_ctx,
            "xl_extra_bufts": args.xl_extra_bufts,
            "pairs": [[asdict(old), asdict(new)] for old, new in pairs],
            "totals": {"llama-cpp-python": totals([p[0] for p in pairs]), "xllamacpp": totals([p[1] for p in pairs])},
        }, indent=1), encoding="utf-8")
    return 0


def memory(args: argparse.Namespace) -> int:
    """Each engine in a child process: RSS after loading and after a short prompt, and whether it runs (the exit
    status: a native crash is a negative signal number)."""
    results = []
    for name in ENGINES:
        for extra_bufts in args.extra_bufts:
            env = dict(os.environ, TEXT2SQL_LLAMA_EXTRA_BUFTS=extra_bufts)
            cmd = [sys.executable, __file__, "memory-child", "--engine", name,
                   "--n-ctx", str(args.n_ctx), "--n-threads", str(args.n_threads or 1)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
            line = next((ln for ln in proc.stdout.splitlines()[::-1] if ln.startswith("{")), None)
            result = {"engine": name, "extra_bufts": extra_bufts, "returncode": proc.returncode,
                      **(json.loads(line) if line else {"stderr": proc.stderr[-400:]})}
            results.append(result)
            print(json.dumps(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"amx": cpu_has_amx(), "runs": results}, indent=1), encoding="utf-8")
    return 0


SHORT_PROMPT = {"messages": [{"role": "system", "content": "You write SQLite. CREATE TABLE users (id INTEGER, "
                                                          "blocked INTEGER);"},
                             {"role": "user", "content": "How many users are blocked?"},
                             {"role": "assistant", "content": "[[ ## sql ## ]]\n"}],
                "max_tokens": 40, "temperature": 0.0, "stop": ["\n\n[["], "seed": None, "top_p": None, "top_k": None,
                "logprobs": 5}


def memory_child(args: argparse.Namespace) -> int:
    record = SHORT_PROMPT  # the KV cache and compute buffers are allocated at load, whatever the prompt
    base = rss_mb()
    engine = build_engine(args.engine, args.n_ctx, args.n_threads)
    start = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - start
    loaded = rss_mb()
    run = run_one(args.engine, engine, request_of(record))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"load_s": round(load_s, 2), "rss_base_mb": round(base), "rss_loaded_mb": round(loaded),
                      "rss_after_call_mb": round(rss_mb()), "peak_rss_mb": round(peak),
                      "prompt_tokens": run.prompt_tokens, "reply": run.text[:80]}), flush=True)
    return 0


def capabilities(args: argparse.Namespace) -> int:
    """What the embedded path relies on, checked on the xllamacpp engine with short prompts: seeds and temperature,
    context size, thread count, thread safety, stop strings, prefill, token log-probabilities, the repetition guard,
    and what the CPU and the wheel offer."""
    import threading

    import xllamacpp
    from dspy.lm15 import Config, Message, Request

    from text2sql_dspy.programs.llm.llama_engine import LOCAL_MODEL_NAME

    engine = build_engine("xllamacpp", args.n_ctx, args.n_threads)
    shared = engine.load()
    out: dict[str, Any] = {"amx": cpu_has_amx(), "system_info": xllamacpp.get_system_info().strip(),
                           "xllamacpp": xllamacpp.__version__}

    def ask(user: str, prefill: str = "", **config: Any) -> Any:
        messages = (Message.user(user),) + ((Message.assistant(prefill),) if prefill else ())
        return engine.complete(Request(model=LOCAL_MODEL_NAME, system="You write SQLite.", messages=messages,
                                       config=Config(**config)))

    def text(response: Any) -> str:
        return response.message.parts[0].text

    question = "Write a query counting the rows of table users."
    sampled = [text(ask(question, max_tokens=24, temperature=0.9, seed=seed)) for seed in (7, 7, 8)]
    out["seed"] = {"same seed, same sample": sampled[0] == sampled[1], "other seed differs": sampled[0] != sampled[2],
                   "samples": sampled}
    props = shared._get("/props")
    out["n_ctx"] = {"asked": args.n_ctx, "server": props["default_generation_settings"]["n_ctx"]}
    params = shared.server_params()
    out["n_threads"] = {"asked": args.n_threads, "server": [params.cpuparams.n_threads,
                                                            params.cpuparams_batch.n_threads]}
    greedy = text(ask(question, max_tokens=24, temperature=0.0))
    replies: list[str] = []
    errors: list[str] = []

    def worker() -> None:
        try:
            replies.append(text(ask(question, max_tokens=24, temperature=0.0)))
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["thread safety"] = {"3 threads, same greedy reply": replies == [greedy] * 3 and not errors, "errors": errors}
    stopped = ask("Write three SQL queries on table users, one per line.", max_tokens=80, temperature=0.0,
                  stop=("\n",))
    out["stop"] = {"reply": text(stopped), "holds": "\n" not in text(stopped), "finish": stopped.finish_reason}
    prefilled = ask(question, prefill="[[ ## sql ## ]]\n", max_tokens=40, temperature=0.0, logprobs=5)
    tokens = prefilled.logprobs or ()
    out["prefill"] = {"reply": text(prefilled), "holds": text(prefilled).startswith("[[ ## sql ## ]]\n")}
    out["logprobs"] = {"entries spell the reply": "".join(t.token for t in tokens) == text(prefilled),
                       "prefill entry logprob 0": bool(tokens) and tokens[0].logprob == 0.0,
                       "top alternatives": [len(t.top) for t in tokens[1:4]],
                       "first tokens": [(t.token, round(t.logprob, 4)) for t in tokens[:4]]}
    loop = ask("Repeat the word ha 300 times, separated by spaces, and nothing else.", max_tokens=200,
               temperature=0.0)
    out["repetition guard"] = {"finish": loop.finish_reason, "tokens": loop.usage.output_tokens,
                               "cut before 200": loop.usage.output_tokens < 200, "loops_cut": shared.stats.loops_cut}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


def first_answer(args: argparse.Namespace) -> int:
    """``text2sql ask`` twice, each in a new process, sharing a scratch cache that holds only a link to the model:
    the first answer is cold, the second should start from the KV state the first saved on disk."""
    import shutil
    import tempfile

    from text2sql_dspy.programs.cache import default_cache_dir
    from text2sql_dspy.programs.llm.model_files import MODEL_FILENAME

    results = []
    for engine in args.engines:
        cache = Path(tempfile.mkdtemp(prefix="t2s-first-"))
        for name in (MODEL_FILENAME, f"{MODEL_FILENAME}.sha256"):
            (cache / name).symlink_to((default_cache_dir() / name).resolve())
        env = {k: v for k, v in os.environ.items() if k != "TEXT2SQL_KV_CACHE_BYTES"}  # the disk tier on
        env.update(TEXT2SQL_CACHE=str(cache), TEXT2SQL_ENGINE=engine, TEXT2SQL_N_THREADS=str(args.n_threads or 1),
                   TEXT2SQL_EXAMPLES=str(cache / "examples.jsonl"), HF_HUB_OFFLINE="1")
        for attempt in ("cold", "warm"):
            start = time.perf_counter()
            done = subprocess.run([str(Path(sys.executable).parent / "text2sql"), "ask", args.question, "--json"],
                                  env=env, capture_output=True, text=True, timeout=args.timeout)
            wall = time.perf_counter() - start
            try:
                answer = json.loads(done.stdout[done.stdout.index("{"):])
            except ValueError:
                answer = {"error": (done.stdout + done.stderr)[-500:]}
            metrics = answer.get("metrics") or {}
            kv = sorted(p.name for p in (cache / "kv").rglob("*") if p.is_file()) if (cache / "kv").exists() else []
            result = {"engine": engine, "ask": attempt, "rc": done.returncode, "wall_s": round(wall, 1),
                      "answer_s": round(metrics.get("latency_s") or 0.0, 1), "lm_calls": metrics.get("lm_calls"),
                      "prompt_tokens": metrics.get("prompt_tokens"), "sql": answer.get("sql"),
                      "kv_files": len(kv), **({"error": answer["error"]} if "error" in answer else {})}
            results.append(result)
            print(json.dumps(result), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


def record(args: argparse.Namespace) -> int:
    import dspy

    from text2sql_dspy.programs.agents.registry import make_program
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.llm.llama_engine import LOCAL_MODEL_NAME, LlamaCppEngine, request_to_messages

    records: list[dict[str, Any]] = []

    class RecordingEngine(LlamaCppEngine):
        def complete(self, request: Any) -> Any:
            if len(records) < args.limit:
                records.append(record_of(request_to_messages(request), request.config))
            return super().complete(request)

    engine = RecordingEngine(n_ctx=args.n_ctx, n_threads=args.n_threads)
    lm = dspy.LM(LOCAL_MODEL_NAME, engine=engine, temperature=0.0, max_tokens=1024, cache=False, num_retries=1)
    db = str(ensure_bundled_database())
    options = {"cold_budget": args.cold_budget} if args.cold_budget else {}
    program = make_program("v2", db_path=db, lm=lm, judge_lm=lm, **options)
    questions = json.loads(TEST.read_text(encoding="utf-8"))[args.start: args.start + args.questions]
    for test in questions:
        if len(records) >= args.limit:
            break
        start = time.perf_counter()
        answer = program.run(test["question"], db)
        print(f"{time.perf_counter() - start:.1f} s, {len(records)} requests so far: {test['question']!r} -> "
              f"{answer.sql!r}", flush=True)
    write_records(args.out, records)
    print(f"{len(records)} requests written to {args.out}")
    return 0

# -- raw speed of other prebuilt builds, through their own low-level API (a second design for issue 83) -----------
BUILDS = ("llama-cpp-python", "ik-llama", "ik-llama-rtr", "ik-llama-rtr-fa", "openvino-genai", "mistralrs")


def prompt_token_ids(records: list[dict[str, Any]]) -> list[list[int]]:
    """Each record's prompt as llama-cpp-python reads it: the GGUF's chat template (its Jinja formatter, as the
    product uses it), the prefilled reply appended, tokenized by the GGUF's vocabulary."""
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from text2sql_dspy.programs.llm.model_files import ensure_local_model

    vocab = llama_cpp.Llama(str(ensure_local_model(progress=False)), vocab_only=True, verbose=False)
    formatter = Jinja2ChatFormatter(vocab.metadata["tokenizer.chat_template"], eos_token="<|im_end|>", bos_token="")
    out = []
    for record in records:
        messages = record["messages"]
        prefill = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""
        text = formatter(messages=messages[:-1] if prefill else messages).prompt + prefill
        out.append(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))
    return out


def top_logprobs(logits: Any, chosen: int, k: int = 5) -> dict[str, Any]:
    """One generated token's entry from a step's logits, as the product's ``LogprobRecorder`` makes it (token ids
    as strings, so that builds compare by id)."""
    import numpy as np

    row = np.asarray(logits, dtype=np.float32)
    peak = float(row.max())
    lse = peak + float(np.log(np.exp(row - peak, dtype=np.float32).sum(dtype=np.float64)))
    idx = np.argpartition(-row, k - 1)[:k]
    idx = idx[np.argsort(-row[idx])]
    return {"token": str(chosen), "logprob": float(row[chosen]) - lse,
            "top_logprobs": [{"token": str(int(i)), "logprob": float(row[i]) - lse} for i in idx]}


def _raw_llama_cpp_python(path: str, prompts: list[list[int]], n_gen: int, n_threads: int) -> Any:
    """Today's engine's library with the product's settings (extra buffer types off, f16 KV, no flash attention)."""
    import llama_cpp
    import numpy as np

    from text2sql_dspy.programs.llm.llama_settings import engine_settings, model_params_override

    with model_params_override(use_extra_bufts=False):
        llm = llama_cpp.Llama(path, n_ctx=4096, verbose=False, **engine_settings(n_threads).llama_kwargs())
    n_vocab = llm.n_vocab()
    for tokens in prompts:
        llm.reset()
        llm._ctx.kv_cache_clear()
        start = time.perf_counter()
        llm.eval(tokens)
        read = time.perf_counter()
        entries = []
        for _ in range(n_gen):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(n_vocab,))
            chosen = int(logits.argmax())
            entries.append(top_logprobs(logits, chosen))
            llm.eval([chosen])
        yield {"prompt_s": read - start, "generate_s": time.perf_counter() - read, "logprobs": entries}


def _raw_ik_llama(path: str, prompts: list[list[int]], n_gen: int, n_threads: int, *, repack: bool,
                  flash_attn: bool) -> Any:
    """ik_llama.cpp's prebuilt wheel (``ik-llama-cpp-python``) through its ctypes API: the same batch sizes, f16 KV;
    ``repack`` is its run-time repacking of the weights (``-rtr``), ``flash_attn`` its flash attention."""
    import numpy as np
    from ik_llama_cpp import _ctypes_api as C
    from ik_llama_cpp._internals import make_batch_range, make_batch_single

    C.llama_backend_init()
    model_params = C.llama_model_default_params()
    model_params.repack_tensors = repack
    model = C.llama_model_load_from_file(path.encode(), model_params)
    ctx_params = C.llama_context_default_params()
    ctx_params.n_ctx, ctx_params.n_batch, ctx_params.n_ubatch = 4096, 512, 512
    ctx_params.n_threads = ctx_params.n_threads_batch = n_threads
    ctx_params.flash_attn = flash_attn
    ctx = C.llama_init_from_model(model, ctx_params)
    n_vocab = C.llama_vocab_n_tokens(C.llama_model_get_vocab(model))
    for tokens in prompts:
        C.llama_kv_cache_clear(ctx)
        start = time.perf_counter()
        for at in range(0, len(tokens), 512):
            batch = make_batch_range(tokens[at:at + 512], pos_start=at, logits_last=at + 512 >= len(tokens))
            if C.llama_decode(ctx, batch) != 0:
                raise RuntimeError("llama_decode failed")
        read = time.perf_counter()
        entries, pos = [], len(tokens)
        for _ in range(n_gen):
            logits = np.ctypeslib.as_array(C.llama_get_logits_ith(ctx, -1), shape=(n_vocab,))
            chosen = int(logits.argmax())
            entries.append(top_logprobs(logits, chosen))
            if C.llama_decode(ctx, make_batch_single(chosen, pos)) != 0:
                raise RuntimeError("llama_decode failed")
            pos += 1
        yield {"prompt_s": read - start, "generate_s": time.perf_counter() - read, "logprobs": entries}


def _raw_openvino(path: str, prompts: list[list[int]], n_gen: int, n_threads: int) -> Any:
    """OpenVINO GenAI's ``LLMPipeline`` reading the GGUF itself. Its results carry only the chosen token's
    log-probability (``GenerationConfig.logprobs``: "only single top logprob can be returned"), so no entries."""
    import numpy as np
    import openvino as ov
    import openvino_genai as ovg

    pipe = ovg.LLMPipeline(path, "CPU", INFERENCE_NUM_THREADS=n_threads, NUM_STREAMS=1)
    for tokens in prompts:
        config = ovg.GenerationConfig()
        config.max_new_tokens = config.min_new_tokens = n_gen
        config.do_sample = False
        ids = ov.Tensor(np.array([tokens], dtype=np.int64))
        result = pipe.generate(ovg.TokenizedInputs(ids, ov.Tensor(np.ones((1, len(tokens)), dtype=np.int64))), config)
        ttft, tpot = result.perf_metrics.get_ttft().mean / 1000, result.perf_metrics.get_tpot().mean / 1000
        written = [int(t) for t in result.tokens[0]]
        yield {"prompt_s": ttft, "generate_s": tpot * len(written),
               "logprobs": [{"token": str(t), "logprob": 0.0, "top_logprobs": []} for t in written],
               "no_logprobs": True}


def _raw_mistralrs(path: str, prompts: list[list[int]], n_gen: int, n_threads: int) -> Any:
    """mistral.rs (``mistralrs``, Rust, its own GGUF kernels) given the prompt already rendered: a chat completion
    (only those carry log-probabilities) through a template that writes the one message verbatim, so that it reads
    the same tokens; greedy, top-5 log-probabilities. Its threads are rayon's (``RAYON_NUM_THREADS``, set by
    ``raw``)."""
    import tempfile

    import llama_cpp
    from mistralrs import ChatCompletionRequest, Runner, Which

    vocab = llama_cpp.Llama(path, vocab_only=True, verbose=False)
    model = Path(path)
    verbatim = Path(tempfile.mkdtemp(prefix="raw-mistralrs-")) / "verbatim.jinja"
    verbatim.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}", encoding="utf-8")
    runner = Runner(which=Which.GGUF(quantized_model_id=str(model.parent), quantized_filename=model.name),
                    token_source="none", max_seqs=1, prefix_cache_n=0, jinja_explicit=str(verbatim))
    for tokens in prompts:
        text = vocab.detokenize(tokens, special=True).decode("utf-8")
        reply = runner.send_chat_completion_request(ChatCompletionRequest(
            messages=[{"role": "user", "content": text}], model="local", max_tokens=n_gen, temperature=0.0,
            logprobs=True, top_logprobs=5, ignore_eos=True))
        entries = []
        for item in (reply.choices[0].logprobs.content or []) if reply.choices[0].logprobs else []:
            top = sorted(item.top_logprobs, key=lambda t: -t.logprob)
            entries.append({"token": str(top[0].token) if top else item.token, "logprob": item.logprob,
                            "top_logprobs": [{"token": str(t.token), "logprob": t.logprob} for t in top]})
        yield {"prompt_s": reply.usage.total_prompt_time_sec, "generate_s": reply.usage.total_completion_time_sec,
               "logprobs": entries, "prompt_tokens_read": reply.usage.prompt_tokens}


def raw_child(args: argparse.Namespace) -> int:
    from text2sql_dspy.programs.llm.model_files import ensure_local_model

    prompts = json.loads(args.tokens.read_text(encoding="utf-8"))
    path = str(ensure_local_model(progress=False))
    runners = {
        "llama-cpp-python": lambda: _raw_llama_cpp_python(path, prompts, args.gen, args.n_threads),
        "ik-llama": lambda: _raw_ik_llama(path, prompts, args.gen, args.n_threads, repack=False, flash_attn=False),
        "ik-llama-rtr": lambda: _raw_ik_llama(path, prompts, args.gen, args.n_threads, repack=True, flash_attn=False),
        "ik-llama-rtr-fa": lambda: _raw_ik_llama(path, prompts, args.gen, args.n_threads, repack=True,
                                                 flash_attn=True),
        "openvino-genai": lambda: _raw_openvino(path, prompts, args.gen, args.n_threads),
        "mistralrs": lambda: _raw_mistralrs(path, prompts, args.gen, args.n_threads),
    }
    start, cpu = time.perf_counter(), time.process_time()
    for tokens, result in zip(prompts, runners[args.build]()):
        print(json.dumps({"prompt_tokens": len(tokens), **result}), flush=True)
    print(json.dumps({"cpu_per_wall": round((time.process_time() - cpu) / (time.perf_counter() - start), 2),
                      "rss_mb": round(rss_mb()),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}), flush=True)
    return 0


def raw_rows(runs: dict[str, list[dict[str, Any]]], base: str = "llama-cpp-python") -> list[dict[str, Any]]:
    """Per build: prompt tokens/s and generated tokens/s over its runs, their ratios to ``base`` (from the same
    rounds), whether its greedy tokens are ``base``'s, and how its top-5 log-probabilities compare."""
    ref = runs.get(base, [])
    rows = []
    for build, items in runs.items():
        read = sum(r["prompt_tokens"] for r in items)
        prompt_s = sum(r["prompt_s"] for r in items)
        gen = sum(len(r["logprobs"]) for r in items)
        gen_s = sum(r["generate_s"] for r in items)
        same = [[e["token"] for e in r["logprobs"]] == [e["token"] for e in b["logprobs"]] for r, b in zip(items, ref)]
        agree = [compare_logprobs(b["logprobs"], r["logprobs"]) for r, b in zip(items, ref)
                 if not r.get("no_logprobs")]
        rows.append({"build": build, "prompts": len(items), "prompt_tokens": read,
                     "prompt_tps": rate(read, prompt_s * 1000), "generated": gen,
                     "generate_tps": rate(gen, gen_s * 1000), "same_greedy": sum(same), "compared": len(same),
                     "logprob_max_abs_diff": max((a.max_abs_diff for a in agree), default=None),
                     "same_top5": statistics.fmean(a.same_topk for a in agree) if agree else None,
                     "top_alternatives": not any(r.get("no_logprobs") for r in items)})
    by = {row["build"]: row for row in rows}
    for row in rows:
        row["prompt_ratio"] = ratio(row["prompt_tps"], by.get(base, {}).get("prompt_tps"))
        row["generate_ratio"] = ratio(row["generate_tps"], by.get(base, {}).get("generate_tps"))
    return rows


def raw_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| build | prompts | prompt tok/s | ratio | gen tok/s | ratio | same greedy tokens | logprob max abs diff "
             "| same top-5 | top-5 alternatives |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['build']} | {r['prompts']} | {fmt(r['prompt_tps'])} | {r['prompt_ratio']} "
                     f"| {fmt(r['generate_tps'], 2)} | {r['generate_ratio']} | {r['same_greedy']} of {r['compared']} "
                     f"| {fmt(r['logprob_max_abs_diff'], 3)} | {fmt(r['same_top5'], 2)} "
                     f"| {'yes' if r['top_alternatives'] else 'no (chosen token only)'} |")
    return "\n".join(lines)


def raw(args: argparse.Namespace) -> int:
    """Each build in a child process of its own, one after another, the order turning each round; every build
    reads the same token ids and writes ``--gen`` greedy tokens (no stop), timed by the wall clock around the
    decode calls."""
    import tempfile

    records = [read_records(args.prompts)[i - 1] for i in args.pick]
    tokens_file = Path(tempfile.mkstemp(suffix=".json", prefix="raw-tokens-")[1])
    tokens_file.write_text(json.dumps(prompt_token_ids(records)), encoding="utf-8")
    paths = dict(item.split("=", 1) for item in args.path)
    runs: dict[str, list[dict[str, Any]]] = {build: [] for build in args.builds}
    memory_mb: dict[str, Any] = {}
    for round_ in range(args.rounds):
        order = args.builds if round_ % 2 == 0 else args.builds[::-1]
        for build in order:
            env = dict(os.environ, OMP_NUM_THREADS=str(args.n_threads), RAYON_NUM_THREADS=str(args.n_threads))
            if build in paths:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (paths[build], env.get("PYTHONPATH")) if p)
            cmd = [sys.executable, __file__, "raw-child", "--build", build, "--tokens", str(tokens_file),
                   "--gen", str(args.gen), "--n-threads", str(args.n_threads)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
            lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                print(f"{build}: exit {proc.returncode}: {proc.stderr[-600:]}", flush=True)
                continue
            memory_mb[build] = lines[-1]
            for item in lines[:-1]:
                runs[build].append(item)
                print(f"round {round_ + 1} {build}: {item['prompt_tokens']} tokens, "
                      f"{item['prompt_tokens'] / item['prompt_s']:.1f} prompt tok/s, "
                      f"{len(item['logprobs']) / item['generate_s']:.2f} gen tok/s", flush=True)
    tokens_file.unlink(missing_ok=True)
    rows = raw_rows({b: r for b, r in runs.items() if r})
    print(raw_table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"amx": cpu_has_amx(), "n_threads": args.n_threads, "gen": args.gen,
                                         "rounds": args.rounds, "rows": rows, "memory_mb": memory_mb,
                                         "runs": runs}, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record V2's requests on a few bundled questions (today's engine)")
    rec.add_argument("--questions", type=int, default=3)
    rec.add_argument("--start", type=int, default=0, help="the first question's index in data/test.json")
    rec.add_argument("--limit", type=int, default=10, help="requests to keep")
    rec.add_argument("--cold-budget", type=int, default=2500, help="the program's cold_budget (ask's: 2500)")
    rec.add_argument("--out", type=Path, required=True)
    cmp_ = sub.add_parser("compare", help="replay recorded requests on both engines, side by side")
    cmp_.add_argument("--prompts", type=Path, required=True)
    cmp_.add_argument("--limit", type=int, default=10)
    cmp_.add_argument("--json", type=Path)
    cmp_.add_argument("--xl-extra-bufts", action="store_true",
                      help="load xllamacpp with llama.cpp's extra buffer types (repacked weights) on")
    mem = sub.add_parser("memory", help="RSS and whether each engine runs, each in its own process")
    mem.add_argument("--extra-bufts", nargs="+", default=["0", "1"],
                     help="TEXT2SQL_LLAMA_EXTRA_BUFTS values to try (1 crashes llama-cpp-python on AMX CPUs)")
    mem.add_argument("--timeout", type=int, default=600)
    mem.add_argument("--json", type=Path)
    cap = sub.add_parser("capabilities", help="what the embedded path relies on, on the xllamacpp engine")
    cap.add_argument("--json", type=Path)
    first = sub.add_parser("first-answer", help="text2sql ask twice in new processes: cold, then from the disk cache")
    first.add_argument("--engines", nargs="+", choices=ENGINES, default=["xllamacpp"])
    first.add_argument("--question", default="How many users are blocked right now?")
    first.add_argument("--timeout", type=int, default=900)
    first.add_argument("--json", type=Path)
    raw_ = sub.add_parser("raw", help="other prebuilt builds' prompt and generation speed, each through its own API")
    raw_.add_argument("--prompts", type=Path, required=True)
    raw_.add_argument("--pick", type=int, nargs="+", default=[1, 4],
                      help="which recorded prompts (1-based; the default two start new questions, cache cold)")
    raw_.add_argument("--builds", nargs="+", choices=BUILDS, default=["llama-cpp-python", "ik-llama-rtr"])
    raw_.add_argument("--path", action="append", default=[], metavar="BUILD=DIR",
                      help="a folder put first on that build's PYTHONPATH (a wheel installed with pip --target)")
    raw_.add_argument("--rounds", type=int, default=2)
    raw_.add_argument("--gen", type=int, default=32, help="greedy tokens each build writes after each prompt")
    raw_.add_argument("--timeout", type=int, default=900)
    raw_.add_argument("--json", type=Path)
    rawc = sub.add_parser("raw-child")
    rawc.add_argument("--build", choices=BUILDS, required=True)
    rawc.add_argument("--tokens", type=Path, required=True)
    rawc.add_argument("--gen", type=int, default=32)
    child = sub.add_parser("memory-child")
    child.add_argument("--engine", choices=ENGINES, required=True)
    for p in (rec, cmp_, mem, child, cap, first, raw_, rawc):
        p.add_argument("--n-ctx", type=int, default=12288)
        p.add_argument("--n-threads", type=int, default=1)
    args = parser.parse_args(argv)
    # Before any engine is built, and inherited by the children: nothing an earlier process read helps. Set here,
    # never at import, so that importing this module (its tests do) leaves the process's disk tier alone.
    os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"
    commands = {"record": record, "compare": compare, "memory": memory, "memory-child": memory_child,
                "capabilities": capabilities, "first-answer": first_answer, "raw": raw, "raw-child": raw_child}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
