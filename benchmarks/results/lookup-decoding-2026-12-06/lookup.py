"""Prompt-lookup decoding (drafts copied from the prompt, checked by the model in one batch) against plain decoding,
on V2's own calls. Not a test, and not in the product: see NOTES.md.

V2 answers the first N questions of Spider dev (shuffled with seed 7) and every LM call it makes is recorded. Each
call is then replayed three times on the same loaded model, its prompt already read (a warm-up replay first): with
drafts of up to D tokens, without, and with drafts again. Only generation is timed.

    TEXT2SQL_N_THREADS=2 python benchmarks/results/lookup-decoding-2026-12-06/lookup.py N D [D ...]
"""

import json
import os
import random
import sys
import time

import numpy as np

os.environ["TEXT2SQL_KV_CACHE_BYTES"] = "0"  # before the engine is built

from llama_cpp.llama_speculative import LlamaDraftModel  # noqa: E402

from text2sql_dspy.programs.agents.registry import make_program  # noqa: E402
from text2sql_dspy.programs.llm import shared_llama  # noqa: E402

ROOT = "../shared/benchmarks/spider-public"


class PromptLookup(LlamaDraftModel):
    """The tokens that followed the latest earlier occurrence of the last 3, 2 or 1 tokens."""

    def __init__(self, tokens: int):
        self.num_pred_tokens = tokens
        self.batches = self.drafted = 0

    def __call__(self, input_ids, /, **kwargs):
        ids = np.asarray(input_ids)
        n = len(ids)
        for size in range(min(3, n - 1), 0, -1):
            windows = np.lib.stride_tricks.sliding_window_view(ids[:-1], size)
            found = np.flatnonzero((windows == ids[n - size:]).all(axis=1))
            if len(found):
                start = int(found[-1]) + size
                draft = ids[start:min(start + self.num_pred_tokens, n)].astype(np.intc)
                self.batches += 1
                self.drafted += len(draft)
                return draft
        return np.array([], dtype=np.intc)


def verify_eval(base_eval):
    """Llama.eval, with logits at every position of a batch short enough to be a token and its draft."""

    def eval(llm, tokens):
        draft = getattr(llm, "draft_model", None)
        if draft is None or not 1 < len(tokens) <= draft.num_pred_tokens + 1:
            return base_eval(llm, tokens)
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        n_past = llm.n_tokens
        llm._batch.set_batch(batch=list(tokens), n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past:n_past + len(tokens)] = tokens
        llm.n_tokens += len(tokens)
        llm._requires_eval = False

    return eval


def record_calls(count: int) -> tuple[list, object]:
    dev = json.load(open(f"{ROOT}/dev.json"))
    random.Random(7).shuffle(dev)
    calls, original = [], shared_llama.SharedLlama._complete

    def recording(self, messages, options):
        out = original(self, messages, options)
        calls.append((messages, {k: v for k, v in options.items() if k not in ("stopping_criteria", "logits_processor")}))
        return out

    shared_llama.SharedLlama._complete = recording
    for q in dev[:count]:
        db = f"{ROOT}/database/{q['db_id']}/{q['db_id']}.sqlite"
        program = make_program("v2", db_path=db)
        program.run(q["question"], db)
    shared_llama.SharedLlama._complete = original
    return calls, program.lm.engine.load()


def replay(shared, messages, options, draft):
    shared.llm.draft_model = draft
    start = time.perf_counter()
    out = shared._complete(messages, dict(options))
    shared.llm.draft_model = None
    return time.perf_counter() - start, out["choices"][0]["message"]["content"], out["usage"]["completion_tokens"]


def main() -> None:
    count, drafts = int(sys.argv[1]), [int(d) for d in sys.argv[2:]] or [8]
    calls, shared = record_calls(count)
    llm_type = type(shared.llm)
    llm_type.eval = verify_eval(llm_type.eval)
    print(f"{len(calls)} calls recorded over {count} questions; threads {shared.settings.n_threads}")
    for d in drafts:
        plain = with_drafts = 0.0
        tokens = same = 0
        lookup = PromptLookup(d)
        for messages, options in calls:
            replay(shared, messages, options, None)  # the prompt is read: only generation is timed below
            on = replay(shared, messages, options, lookup)
            off = replay(shared, messages, options, None)
            again = replay(shared, messages, options, lookup)
            plain += off[0]
            with_drafts += (on[0] + again[0]) / 2
            tokens += off[2]
            same += on[1] == off[1]
        print(f"drafts of up to {d}: plain {plain:.1f} s, with drafts {with_drafts:.1f} s (ratio "
              f"{with_drafts / plain:.2f}); {tokens} tokens, {tokens / plain:.1f} a second plain; "
              f"{lookup.drafted} tokens drafted in {lookup.batches} drafts; replies the same {same} of {len(calls)}")


if __name__ == "__main__":
    main()
