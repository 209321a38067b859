"""Follow-up questions: the earlier turns of a conversation, shown to the model with the next question.

``chat = agent.conversation(); chat.ask("Which countries have the most plants?"); chat.ask("only the
operational ones")``. A :class:`Conversation` holds the turns; the program holds none (the history is an
input of ``run``/``forward``, so a compiled program saves and loads as before). The drafting step sees the
last :data:`MAX_TURNS` turns (question, accepted SQL, what it returned) after the cached schema, with the
question, within :data:`MAX_HISTORY_CHARS`; V2's judge reads them with the question.

A follow-up saved as a pair is first rewritten to stand alone (:func:`question_to_store`: one small LM call, and
the conversation's questions joined where the rewrite still points back at it), so that the store never holds
"only the operational ones" or "the countries listed in the previous query" as a question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.cache import default_cache_dir

MAX_TURNS = 3
MAX_HISTORY_CHARS = 1500  # about 400 tokens: the oldest turns go first
MAX_STANDALONE_CHARS = 600
# The stand-alone rewrite's reply: one question of at most MAX_STANDALONE_CHARS, even at 3 characters a token, and its
# field markers; a longer one is thrown away anyway.
STANDALONE_MAX_TOKENS = 224
# How a rewrite still leans on the conversation: it names it, an earlier query, or what was listed, mentioned or
# returned ("the countries listed in the previous query"). Words of English, not of SQL.
POINTS_BACK = re.compile(r"\b(previous|earlier|prior|conversation|listed (in|by|above)|returned by|the sql|"
                         r"the quer(y|ies) (returned|listed|above)|mentioned)\b", re.IGNORECASE)


class Turn(BaseModel):
    """One earlier turn: the question, the SQL that answered it, and a short note of what that returned."""

    question: str
    sql: str = ""
    result: str = ""

    @classmethod
    def of(cls, answer: Answer) -> Turn:
        chosen = next((r for r in answer.readings if r.sql == answer.sql), None)
        preview = chosen.preview if chosen is not None else None
        result = ""
        if preview is not None and preview.error is None:
            more = "+" if preview.truncated else ""
            rows = f"{preview.row_count}{more} row{'' if preview.row_count == 1 else 's'}"
            result = f"{rows}: {', '.join(preview.columns)}"
        return cls(question=answer.question, sql=answer.sql, result=result)


@dataclass(frozen=True)
class History:
    """A question's conversation: its earlier turns, and those as the prompt shows them."""

    turns: tuple[Turn, ...] = ()
    text: str = ""

    @classmethod
    def of(cls, history: Iterable[Turn | dict[str, Any]] | str | History | None) -> History:
        """Turns (:class:`Turn` objects or dicts) or text (already rendered: no turns to edit) as a history."""
        if isinstance(history, History):
            return history
        if not history:
            return cls()
        if isinstance(history, str):
            return cls((), render_history(history))
        turns = tuple(t if isinstance(t, Turn) else Turn.model_validate(t) for t in history)
        return cls(turns, render_history(turns))

    @property
    def previous(self) -> str:
        """The query that answered the turn before this question: the one a follow-up is drafted as a change of."""
        return self.turns[-1].sql if self.turns else ""


def render_history(turns: Iterable[Turn | dict[str, Any]] | str | None, *, max_turns: int = MAX_TURNS,
                   max_chars: int = MAX_HISTORY_CHARS) -> str:
    """The last ``max_turns`` turns as prompt text, oldest first, cut to ``max_chars`` by dropping the oldest;
    "" for none. Text is taken as already rendered."""
    if not turns:
        return ""
    if isinstance(turns, str):
        return turns.strip()
    parsed = [t if isinstance(t, Turn) else Turn.model_validate(t) for t in turns][-max_turns:]
    blocks = [_block(t) for t in parsed]
    while len(blocks) > 1 and sum(len(b) + 1 for b in blocks) > max_chars:
        blocks.pop(0)
    return "Earlier in this conversation:\n" + "\n".join(blocks)


def _block(turn: Turn) -> str:
    lines = [f"- Question: {turn.question}"]
    if turn.sql:
        lines.append(f"  SQL: {' '.join(turn.sql.split())}")
    if turn.result:
        lines.append(f"  It returned {turn.result}")
    return "\n".join(lines)


def standalone_question(question: str, turns: list[Turn], lm: Any = None) -> str:
    """``question`` rewritten to be understood without ``turns`` (the earlier turns), by ``lm`` (default: the
    configured LM); ``question`` itself when there are no earlier turns. A reply that is empty, too long or
    malformed gives the conversation's questions joined instead, which also stands alone."""
    if not turns:
        return question
    import dspy

    from text2sql_dspy.programs.agents.recovery import MALFORMED_REPLY_ERRORS
    from text2sql_dspy.signatures.conversation import StandAloneQuestion

    try:
        with dspy.context(lm=lm or dspy.settings.lm):
            reply = dspy.Predict(StandAloneQuestion)(conversation=render_history(turns), follow_up=question,
                                                     config={"max_tokens": STANDALONE_MAX_TOKENS}).question
    except MALFORMED_REPLY_ERRORS:
        reply = ""
    rewritten = " ".join(str(reply or "").split()).strip("\"'")
    if rewritten and len(rewritten) <= MAX_STANDALONE_CHARS:
        return rewritten
    return joined_question(question, turns)


def points_back(question: str) -> bool:
    """Whether ``question``, rewritten to stand alone, still points back at the conversation (:data:`POINTS_BACK`):
    read alone, it leaves the drafter to guess what the earlier turns returned."""
    return POINTS_BACK.search(question) is not None


def question_to_store(question: str, turns: list[Turn], lm: Any = None) -> str:
    """The question a confirmed pair is stored under: ``question`` rewritten to stand alone
    (:func:`standalone_question`), or the conversation's questions joined where the rewrite still points back at
    the conversation (:func:`points_back`), which a later reader of the store does not have."""
    rewritten = standalone_question(question, turns, lm)
    return joined_question(question, turns) if points_back(rewritten) else rewritten


def joined_question(question: str, turns: Iterable[Turn]) -> str:
    """The conversation's last questions and ``question``, joined: a question that stands alone without a model."""
    return " / ".join([*(t.question for t in list(turns)[-MAX_TURNS:]), question])


class Answers(Protocol):
    """What a conversation asks: a program's ``run`` (:class:`~.agents.base.Text2SQLProgram`)."""

    def run(self, question: str, db_path: Path | str | None = None, hint: str = "", history: Any = None) -> Answer: ...


class Conversation:
    """A thread of questions over one database: each ``ask`` sees the turns before it."""

    def __init__(self, program: Answers, db_path: Path | str | None = None, *, max_turns: int = MAX_TURNS):
        self.program = program
        self.db_path = db_path
        self.max_turns = max_turns
        self.turns: list[Turn] = []

    def ask(self, question: str, hint: str = "") -> Answer:
        """Answer ``question`` in the light of the earlier turns; an answered turn joins the history."""
        answer = self.program.run(question, self.db_path, hint, history=self.turns[-self.max_turns:])
        if answer.sql:
            self.turns.append(Turn.of(answer))
        return answer

    def start_over(self) -> None:
        self.turns.clear()


def last_conversation_file() -> Path:
    """Where ``text2sql ask`` keeps the last conversation (``--continue`` goes on with it)."""
    return default_cache_dir() / "conversation.json"


def load_last(db: str) -> list[Turn]:
    """The last conversation's turns if it was over ``db``, else none (a conversation never crosses databases)."""
    try:
        data = json.loads(last_conversation_file().read_text(encoding="utf-8"))
        return [Turn.model_validate(t) for t in data["turns"]] if data.get("db") == db else []
    except (OSError, ValueError, KeyError, TypeError):
        return []


def save_last(db: str, turns: list[Turn]) -> None:
    file = last_conversation_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"db": db, "turns": [t.model_dump() for t in turns[-MAX_TURNS:]]}), encoding="utf-8")
    tmp.replace(file)
