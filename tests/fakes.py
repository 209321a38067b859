"""Scripted replies and LMs shared by the tests.

* ``draft``, ``step`` and ``verdict`` are reply dicts for DummyLM, one per signature: a draft is
  the SQL alone (``DraftSQL``), a step is a move of the repair loop (``dspy.ReAct``), a verdict is
  ``JudgeSQL``'s three fields.
* :func:`logprob_lm` is an LM whose replies carry token log-probabilities, as the embedded engine
  and OpenAI-compatible servers return them. Each :class:`Scripted` reply says the probability
  of every token of each field (so a field's geometric-mean probability is exactly that number)
  and, for the judge, P(True) at the ``is_correct`` answer. The field markers and separators get
  :data:`MARKER_P`, so a reader that counts tokens outside a field shows up in its result.
"""

from __future__ import annotations

import math
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy
from dspy.adapters.chat_adapter import ChatAdapter, FieldInfoWithName
from dspy.lm15 import Message, Response, TextPart, TokenLogprob, TopLogprob, Usage, response_to_events
from dspy.signatures.field import OutputField
from dspy.utils import DummyLM

from text2sql_dspy.programs.llm.fields import field_marker

GOOD_SQL = "SELECT count(*) FROM users WHERE status = 'suspended'"
BAD_SQL = "SELECT count(*) FROM users WHERE state = 'suspended'"  # no column "state": the validator says "status"
MARKER_P = 0.2  # every token outside a field's value: markers, newlines


def draft(sql: str) -> dict[str, Any]:
    """A DraftSQL reply: the SQL, nothing else."""
    return {"sql": sql}


def step(tool: str, **args: Any) -> dict[str, Any]:
    """A ReAct move: call ``tool`` with ``args``."""
    return {"next_thought": f"Call {tool}.", "next_tool_name": tool, "next_tool_args": args}


def verdict(correct: bool, issues: list[str] | None = None, suggestions: list[str] | None = None) -> dict[str, Any]:
    """A JudgeSQL reply. Without token probabilities its score is 1.0 or 0.0, from ``correct``."""
    return {
        "is_correct": correct,
        "issues": issues or [],
        "suggestions": suggestions if suggestions is not None else (["use the status column"] if issues else []),
    }


@dataclass(frozen=True)
class Scripted:
    """One reply of :class:`LogprobEngine`: its fields, each field's token probability, and P(True)."""

    fields: dict[str, Any]
    p: dict[str, float] = field(default_factory=dict)  # field -> probability of each of its tokens
    p_true: float | None = None  # at the is_correct answer: P(True) vs P(False) among the top alternatives


def scripted_draft(sql: str, p: float) -> Scripted:
    """A draft whose SQL tokens each have probability ``p`` (so its confidence is ``p``)."""
    return Scripted(draft(sql), {"sql": p})


def scripted_verdict(
    p_true: float, issues: list[str] | None = None, suggestions: list[str] | None = None, correct: bool | None = None
) -> Scripted:
    """A verdict whose ``is_correct`` token has P(True) = ``p_true``; it writes ``correct`` (default: p_true >= 0.5)."""
    written = p_true >= 0.5 if correct is None else correct
    return Scripted(verdict(written, issues, suggestions), p_true=p_true)


def _pieces(text: str) -> list[str]:
    """Tokens that concatenate back to ``text``: words, runs of whitespace, single punctuation."""
    return re.findall(r"\s+|\w+|[^\w\s]", text)


def _token(text: str, p: float, top: tuple[TopLogprob, ...] = ()) -> TokenLogprob:
    return TokenLogprob(token=text, logprob=math.log(p), top=top or (TopLogprob(token=text, logprob=math.log(p)),))


def reply_text_and_tokens(reply: Scripted) -> tuple[str, tuple[TokenLogprob, ...]]:
    """The ChatAdapter text of ``reply`` and its tokens (they concatenate to the text)."""
    adapter = ChatAdapter()
    tokens: list[TokenLogprob] = []
    for name, value in reply.fields.items():
        block = adapter.format_field_with_value({FieldInfoWithName(name=name, info=OutputField()): value})
        header = f"[[ ## {name} ## ]]\n"
        assert block.startswith(header), block
        tokens += [_token(t, MARKER_P) for t in _pieces(header)]
        values = _pieces(block[len(header):])
        if name == "is_correct" and reply.p_true is not None:
            answer = values[0]
            chosen = reply.p_true if answer == "True" else 1.0 - reply.p_true
            alternatives = [("True", reply.p_true), ("False", 1.0 - reply.p_true)]
            top = tuple(TopLogprob(token=w, logprob=math.log(p)) for w, p in sorted(alternatives, key=lambda a: -a[1])
                        if p > 0)
            tokens.append(_token(answer, chosen, top))
            values = values[1:]
        tokens += [_token(t, reply.p.get(name, MARKER_P)) for t in values]
        tokens += [_token(t, MARKER_P) for t in _pieces("\n\n")]
    tokens += [_token(t, MARKER_P) for t in _pieces("[[ ## completed ## ]]")]
    return "".join(t.token for t in tokens), tuple(tokens)


class LogprobEngine:
    """A DSPy engine that answers scripted replies, with token log-probabilities when the request asks for them.

    ``replies`` is a list (one reply per call, in order) or, like DummyLM's dict mode, a dict from a
    text to the reply for any prompt whose last message contains that text (the first key that matches),
    from its question field on where it has one: the stored pairs shown before it hold other questions.
    """

    def __init__(self, replies: list[Scripted] | dict[str, Scripted]):
        self.replies = replies if isinstance(replies, dict) else list(replies)
        self.requests: list[Any] = []

    def _next(self, request: Any) -> Scripted:
        if isinstance(self.replies, dict):
            last = (request.messages[-1].text or "").rsplit(field_marker("question"), 1)[-1]
            reply = next((r for key, r in self.replies.items() if key in last), None)
            if reply is None:
                raise RuntimeError(f"LogprobEngine: no scripted reply matches {last[-200:]!r}")
            return reply
        if not self.replies:
            raise RuntimeError("LogprobEngine: no scripted reply left")
        return self.replies.pop(0)

    def complete(self, request: Any) -> Response:
        self.requests.append(request)
        text, tokens = reply_text_and_tokens(self._next(request))
        return Response(
            id=None, model=request.model, message=Message.assistant([TextPart(text)]), finish_reason="stop",
            usage=Usage(input_tokens=1, output_tokens=len(tokens)),
            logprobs=tokens if request.config.logprobs is not None else None,
        )

    def stream(self, request: Any) -> Any:
        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def logprob_lm(replies: list[Scripted] | dict[str, Scripted], model: str = "openai/scripted-logprobs") -> dspy.LM:
    """An LM over :class:`LogprobEngine` (``.engine``); an ``openai/`` model, so it counts as returning logprobs."""
    return dspy.LM(model, engine=LogprobEngine(replies), cache=False, num_retries=0)


class RecordedLM(DummyLM):
    """DummyLM that also replays raw reply text: a ``str`` answer is sent exactly as written."""

    def _format_answer_fields(self, field_names_and_values: dict[str, Any] | str) -> str:
        if isinstance(field_names_and_values, str):
            return field_names_and_values
        return super()._format_answer_fields(field_names_and_values)


def sqlite_file(path: Path, script: str) -> Path:
    """A SQLite file at ``path`` made by ``script`` (DDL and rows), closed; ``path``."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(script)
    return path
