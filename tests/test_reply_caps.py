"""Every reply stops at its last field: each call's token cap, the repetition-loop cut, DSPy's truncation warning.

No model is loaded. The served path is a scripted engine that honours ``stop`` and ``max_tokens`` as a server
does; the embedded path is :class:`SharedLlama` over a stand-in for ``llama_cpp.Llama`` that generates a scripted
token stream the way llama-cpp-python's ``create_completion`` does (logits processors, then the stopping criteria,
then stop strings, then the cap).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from pathlib import Path
from typing import Any

import dspy
import llama_cpp
import numpy as np
import pytest
from dspy.lm15 import Message, Response, TextPart, TokenLogprob, TopLogprob, Usage, response_to_events

from tests.fakes import GOOD_SQL, Scripted, logprob_lm, scripted_draft, scripted_verdict
from text2sql_dspy.programs.agents.drafting import DRAFT_MAX_TOKENS, LOOP_ERROR, draft_sql
from text2sql_dspy.programs.agents.judge import JUDGE_MAX_TOKENS, VERDICT_MAX_TOKENS, judge_sql
from text2sql_dspy.programs.conversation import STANDALONE_MAX_TOKENS, Turn, standalone_question
from text2sql_dspy.programs.llm.factory import TRUNCATION_LOGGER, build_lm, cut_replies, quiet_truncation_warnings
from text2sql_dspy.programs.llm.fields import FIELD_END
from text2sql_dspy.programs.llm.shared_llama import (
    LOOP_PERIODS,
    LOOP_REPEATS,
    LOOP_RUN,
    LOOP_SPAN,
    LOOP_WINDOW,
    RepetitionGuard,
    loop_end,
    release_shared_llamas,
    repeats_itself,
)
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
from text2sql_dspy.programs.usage import metered
from text2sql_dspy.signatures import DraftSQL, EditSQL, JudgeSQL

RUNAWAY = "SELECT name FROM users WHERE id = 'rec" + "0" * 300  # what 7 BIRD drafts wrote until the cap


def tokens_of(text: str) -> list[str]:
    """Tokens as Qwen's tokenizer splits them where it matters here: each digit alone, words with their space."""
    return re.findall(r"\d| ?[A-Za-z_]+|\s+|[^\w\s]", text)


# --------------------------------------------------------------------------- the loop detector

CLAUSE_24 = tokens_of(" AND name != 'Music' AND name != 'Movies' AND x = 1")  # a cycle as long as a loop's may be
LOOPS = {  # token sequences whose tail is a loop: the engine stops there
    "one token 24 times": ["0"] * LOOP_RUN,
    "a runaway literal": tokens_of("SELECT name FROM users WHERE id = 'rec") + ["0"] * LOOP_RUN,
    "period 2 over 48": ["0", ","] * (LOOP_SPAN // 2),
    "period 3 over 48": [" a", " ", "="] * (LOOP_SPAN // 3),
    "period 8 over 48": tokens_of(" AND a.x = 1") * (LOOP_SPAN // 8),
    "a repeated condition": tokens_of("SELECT * FROM t WHERE") + tokens_of(" a = 1 OR") * 12,
    "newlines": ["\n"] * 30,
    "a subquery nested in itself": tokens_of("SELECT p FROM r WHERE id =")
    + tokens_of(" (SELECT id FROM e WHERE id =") * 5,
    "a clause of 24 tokens, three times": CLAUSE_24 * LOOP_REPEATS,
}
NOT_LOOPS = {  # ordinary SQL, and repetition too short to be a loop
    "a date": tokens_of("SELECT * FROM t WHERE d = '2019-01-01'"),
    "a long IN list": tokens_of("SELECT * FROM t WHERE id IN (" + ", ".join(str(i) for i in range(1, 80)) + ")"),
    "a long IN list of names": tokens_of("WHERE n IN (" + ", ".join(f"'a{i}'" for i in range(40)) + ")"),
    "0, 0, 0": tokens_of("SELECT coalesce(a, 0), coalesce(b, 0), coalesce(c, 0) FROM t WHERE x IN (0, 0, 0)"),
    "23 zeros": tokens_of("WHERE id = 'rec") + ["0"] * (LOOP_RUN - 1),
    "a cycle one short of the span": ["0", ","] * (LOOP_SPAN // 2 - 1),
    "a big number": tokens_of("SELECT * FROM t WHERE amount > 1000000000000 AND ratio < 0.0000001"),
    "many joins": tokens_of(" ".join(f"JOIN t{i} AS T{i} ON T{i}.id = T{i - 1}.t{i}_id" for i in range(2, 9))),
    "a clause of 24 tokens, three times but its last token": (CLAUSE_24 * LOOP_REPEATS)[:-1],
    "a subquery of 10 tokens over 40": tokens_of(" (SELECT id FROM e WHERE id =") * 4,
    "Spider's spacing": tokens_of("SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id  =  T2.id WHERE T2.x  =  'y'"),
    "nothing": [],
}


def test_the_cycles_are_as_long_as_their_names_say() -> None:
    assert len(tokens_of(" AND a.x = 1")) == 8 and len(LOOPS["period 8 over 48"]) == LOOP_SPAN
    assert len(CLAUSE_24) == LOOP_PERIODS[-1] and len(tokens_of(" (SELECT id FROM e WHERE id =")) == 10
    assert LOOP_WINDOW == LOOP_REPEATS * LOOP_PERIODS[-1] > LOOP_SPAN


@pytest.mark.parametrize("tokens", LOOPS.values(), ids=LOOPS.keys())
def test_a_loop_is_seen_at_its_tail(tokens: list[str]) -> None:
    assert repeats_itself(tokens)
    assert loop_end(tokens) is not None


@pytest.mark.parametrize("tokens", NOT_LOOPS.values(), ids=NOT_LOOPS.keys())
def test_ordinary_sql_is_no_loop(tokens: list[str]) -> None:
    assert not repeats_itself(tokens)
    assert loop_end(tokens) is None


@pytest.mark.parametrize("tokens", [*LOOPS.values(), *NOT_LOOPS.values()], ids=[*LOOPS, *NOT_LOOPS])
def test_loop_end_is_where_the_tail_first_repeats_itself(tokens: list[str]) -> None:
    first = next((k for k in range(1, len(tokens) + 1) if repeats_itself(tokens[:k])), None)
    assert loop_end(tokens) == first


def test_a_loop_ends_as_soon_as_it_is_one() -> None:
    prefix = tokens_of("SELECT name FROM users WHERE id = 'rec")
    assert loop_end(prefix + ["0"] * 300) == len(prefix) + LOOP_RUN


def test_the_guard_reads_only_the_reply_not_the_prompt() -> None:
    prompt = [7] * 100  # a prompt that itself repeats
    guard = RepetitionGuard(len(prompt))
    assert not guard(np.array(prompt + [1, 2, 3], dtype=np.intc), None) and not guard.fired
    assert guard(np.array(prompt + [1] + [5] * LOOP_RUN, dtype=np.intc), None) and guard.fired
    assert guard(np.array(prompt + [1, 2], dtype=np.intc), None)  # once fired, it stays so (llama.cpp asks again)


# --------------------------------------------------------------------------- a served model: the cap, the stop


class CappedEngine:
    """A served model's replies: each a token stream that goes on as long as it is let, cut at the request's first
    stop string or at its ``max_tokens``, as an OpenAI-compatible server cuts it; every token has probability 0.9."""

    def __init__(self, streams: list[list[str]]):
        self.streams = list(streams)
        self.requests: list[Any] = []

    def complete(self, request: Any) -> Response:
        self.requests.append(request)
        stream, config = self.streams.pop(0), request.config
        kept, text, finish = [], "", "length"
        for token in stream[: config.max_tokens]:
            hits = [(text + token).find(s) for s in config.stop if s in text + token]
            if hits:
                text, finish = (text + token)[: min(hits)], "stop"
                break
            kept.append(token)
            text += token
        else:
            finish = "length" if len(stream) > len(kept) else "stop"
        p = math.log(0.9)
        logprobs = tuple(TokenLogprob(token=t, logprob=p, top=(TopLogprob(token=t, logprob=p),)) for t in kept)
        return Response(id=None, model=request.model, message=Message.assistant([TextPart(text)]), finish_reason=finish,
                        usage=Usage(input_tokens=1, output_tokens=len(kept)),
                        logprobs=logprobs if config.logprobs is not None else None)

    def stream(self, request: Any) -> Any:
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def served(*replies: str) -> dspy.LM:
    engine = CappedEngine([tokens_of(r) for r in replies])
    return dspy.LM("openai/scripted-served", engine=engine, cache=False, num_retries=0)


def test_a_reply_cut_at_its_last_field_yields_the_sql_alone() -> None:
    lm = served(f"[[ ## sql ## ]]\n{GOOD_SQL}\n\n[[ ## explanation ## ]]\nIt counts the suspended users.\n\n"
                "[[ ## completed ## ]]")
    draft = draft_sql(dspy.Predict(DraftSQL), lm, question="How many users are suspended?", table_schemas="")
    request = lm.engine.requests[0]
    assert list(request.config.stop) == [FIELD_END] and request.config.max_tokens == DRAFT_MAX_TOKENS
    assert draft.sql == GOOD_SQL and draft.error is None and not draft.truncated


def test_a_runaway_literal_gives_no_sql_and_an_error_without_raising() -> None:
    lm = served(f"[[ ## sql ## ]]\n{RUNAWAY}")
    draft = draft_sql(dspy.Predict(DraftSQL), lm, question="Which user is rec0?", table_schemas="")
    assert draft.sql == "" and draft.error == LOOP_ERROR and draft.confidence == 0.0 and draft.truncated


def test_a_reply_that_ran_to_its_cap_says_so() -> None:
    columns = ", ".join(f"c{i}" for i in range(200))  # 600 tokens of different names: long, but no loop
    draft = draft_sql(dspy.Predict(DraftSQL), served(f"[[ ## sql ## ]]\nSELECT {columns} FROM t"), question="All?",
                      table_schemas="")
    assert draft.truncated and draft.error is None and draft.sql.startswith("SELECT c0, c1")


WHOLE = f"[[ ## sql ## ]]\n{GOOD_SQL}\n\n[[ ## explanation ## ]]\nIt counts them.\n\n[[ ## completed ## ]]"
LONG = "[[ ## sql ## ]]\nSELECT " + ", ".join(f"c{i}" for i in range(200)) + " FROM t"


@pytest.mark.parametrize(("replies", "cut"), [
    ([WHOLE], 0),
    ([f"[[ ## sql ## ]]\n{RUNAWAY}"], 1),  # cut in its loop
    ([LONG, WHOLE, LONG], 2),  # two cut at the cap, one whole
])
def test_an_answers_usage_counts_the_replies_cut(replies: list[str], cut: int) -> None:
    quiet_truncation_warnings()
    lm = served(*replies)
    with metered() as usage:
        for _ in replies:
            draft_sql(dspy.Predict(DraftSQL), lm, question="How many?", table_schemas="")
    assert usage.cut_replies == cut


def test_a_reply_cut_on_another_thread_is_not_this_answers() -> None:
    quiet_truncation_warnings()
    elsewhere = threading.Thread(target=lambda: draft_sql(dspy.Predict(DraftSQL), served(LONG), question="All?",
                                                          table_schemas=""))
    before = cut_replies()
    with metered() as usage:
        elsewhere.start()
        elsewhere.join()
    assert usage.cut_replies == 0 and cut_replies() == before


# --------------------------------------------------------------------------- each call's cap


def test_each_signature_call_passes_its_cap() -> None:
    lm = logprob_lm([scripted_draft(GOOD_SQL, 0.9), scripted_draft(GOOD_SQL, 0.9), scripted_verdict(0.1),
                     scripted_verdict(0.1, issues=["counts every user"]),
                     Scripted({"question": "How many users are suspended?"})])
    draft_sql(dspy.Predict(DraftSQL), lm, question="How many users are suspended?", table_schemas="")
    draft_sql(dspy.Predict(EditSQL), lm, question="only suspended", table_schemas="", previous_sql="SELECT 1")
    judge_sql(dspy.Predict(JudgeSQL), lm, question="How many users are suspended?", sql=GOOD_SQL,
              execution_result="1 row: 3")
    standalone_question("only the suspended ones", [Turn(question="How many users?", sql="SELECT count(*) FROM users")],
                        lm)
    caps = [r.config.max_tokens for r in lm.engine.requests]
    assert caps == [DRAFT_MAX_TOKENS, DRAFT_MAX_TOKENS, VERDICT_MAX_TOKENS, JUDGE_MAX_TOKENS, STANDALONE_MAX_TOKENS]


# --------------------------------------------------------------------------- the embedded engine: the loop cut

VOCAB = tokens_of(f"[[ ## sql ## ]]\n{RUNAWAY}\n\n[[ ## completed ## ]]")
IDS = {t: i for i, t in enumerate(dict.fromkeys(VOCAB))}
PIECES = {i: t for t, i in IDS.items()}
EOS = len(IDS)
PROMPT_BASE = 1000  # prompt token ids: a byte's value above this


class ScriptedLlama:
    """Stands in for ``llama_cpp.Llama``: ``create_completion`` generates :attr:`script` (then the end of turn) as
    llama-cpp-python does, and records the options it was given."""

    script: list[int] = []
    calls: list[dict[str, Any]] = []
    metadata = {"tokenizer.chat_template": (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")}

    def __init__(self, model_path: str, **kwargs: Any):
        self.input_ids = np.zeros(0, dtype=np.intc)
        self.n_tokens = 0
        self._model = type("Model", (), {"token_get_text": staticmethod(lambda t: "<|im_end|>")})()

    def token_eos(self) -> int:
        return EOS

    def token_bos(self) -> int:
        return -1

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [PROMPT_BASE + b for b in text]

    def detokenize(self, tokens: list[int], prev_tokens: Any = None) -> bytes:
        return "".join(PIECES.get(int(t), "") for t in tokens).encode()

    def create_completion(self, prompt: list[int], *, max_tokens: int, stop: list[str], stopping_criteria: Any = None,
                          logits_processor: Any = None, **options: Any) -> dict[str, Any]:
        ScriptedLlama.calls.append({"max_tokens": max_tokens, "stop": stop, **options})
        evaluated, completion, finish, text = list(prompt), [], "length", None
        for token in [*self.script, EOS]:
            logits = np.full(EOS + 1, -5.0, dtype=np.float32)
            logits[token] = 5.0
            for process in logits_processor or []:
                logits = process(np.array(evaluated, dtype=np.intc), logits)
            if stopping_criteria is not None and stopping_criteria(np.array(evaluated, dtype=np.intc), logits):
                break  # llama.cpp drops the token just sampled
            if token == EOS:
                finish = "stop"
                break
            completion.append(token)
            so_far = self.detokenize(completion).decode()
            hits = [so_far.index(s) for s in stop if s in so_far]
            if hits:
                text, finish = so_far[: min(hits)], "stop"
                break
            if len(completion) >= max_tokens:
                break
            evaluated.append(token)
        if stopping_criteria is not None and stopping_criteria(np.array(evaluated, dtype=np.intc), None):
            text, finish = None, "stop"  # llama-cpp-python asks once more after the loop
        self.input_ids, self.n_tokens = np.array(evaluated, dtype=np.intc), len(evaluated)
        text = self.detokenize(completion).decode() if text is None else text
        return {"id": "scripted", "choices": [{"text": text, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(completion)}}


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The embedded model's LM (``build_lm("local")``) over :class:`ScriptedLlama`."""
    monkeypatch.setattr(llama_cpp, "Llama", ScriptedLlama)
    ScriptedLlama.calls = []
    release_shared_llamas()
    yield build_lm("local", model_path=tmp_path / "scripted.gguf", n_threads=1, prefix_cache=False)
    release_shared_llamas()


@pytest.fixture
def notices() -> Any:
    """The records DSPy's LM logger lets through, as a handler on that logger sees them."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(TRUNCATION_LOGGER)
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.mark.parametrize("prefilled", [True, False], ids=["prefilled reply", "plain chat"])
def test_the_engine_cuts_a_runaway_literal_and_the_draft_reads_as_failed(
    embedded: dspy.LM, notices: list[logging.LogRecord], capfd: pytest.CaptureFixture[str], prefilled: bool,
) -> None:
    reply = tokens_of(RUNAWAY) if prefilled else tokens_of(f"[[ ## sql ## ]]\n{RUNAWAY}")
    ScriptedLlama.script = [IDS[t] for t in reply]
    with dspy.context(adapter=StablePrefixAdapter() if prefilled else dspy.ChatAdapter()):
        draft = draft_sql(dspy.Predict(DraftSQL), embedded, question="Which user is rec0?", table_schemas="")
    stats = embedded.engine.load().stats
    assert draft.sql == "" and draft.error == LOOP_ERROR and draft.truncated
    assert stats.completion_tokens == loop_end(reply) < DRAFT_MAX_TOKENS  # cut at the loop, not at the cap
    assert stats.loops_cut == stats.truncated == 1
    assert ScriptedLlama.calls[0]["max_tokens"] == DRAFT_MAX_TOKENS
    assert not [r for r in notices if "truncated" in r.getMessage()]
    assert "truncated" not in capfd.readouterr().err


def test_the_engine_leaves_an_ordinary_reply_to_its_stop_sequence(embedded: dspy.LM) -> None:
    sql = "SELECT name FROM users WHERE id = 'rec0000'"
    ScriptedLlama.script = [IDS[t] for t in tokens_of(f"{sql}\n\n[[ ## completed ## ]]")]
    with dspy.context(adapter=StablePrefixAdapter()):
        draft = draft_sql(dspy.Predict(DraftSQL), embedded, question="Which user is rec0000?", table_schemas="")
    stats = embedded.engine.load().stats
    assert draft.sql == sql and draft.error is None and not draft.truncated
    assert stats.loops_cut == stats.truncated == 0


def test_only_dspys_truncation_notice_is_dropped(notices: list[logging.LogRecord]) -> None:
    quiet_truncation_warnings()
    quiet_truncation_warnings()  # once is enough; twice adds nothing
    logger = logging.getLogger(TRUNCATION_LOGGER)
    assert sum(type(f).__name__ == "_DropTruncationNotice" for f in logger.filters) == 1
    logger.warning("LM response was truncated; increase max_tokens or inspect history.")
    logger.warning("some other warning")
    assert [r.getMessage() for r in notices] == ["some other warning"]
