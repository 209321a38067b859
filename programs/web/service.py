"""The state behind ``text2sql serve``: its databases, its programs on one shared model, the queue, the history,
the conversations.

One LM (the embedded model unless ``--model`` names another) is built once and shared by every
program the page offers; the :class:`~.jobs.AnswerQueue`'s single worker is the only caller, so
one model serves one question at a time. Every program is shown the example store the page saves
into (:func:`store_path`), so a pair confirmed or corrected on the page guides the next answers.

A question either starts a conversation or follows up in one, named by the random id its first answer
returned; a conversation belongs to one database, and its earlier turns are shown with each follow-up. The
server keeps the latest :data:`KEPT_CONVERSATIONS`, in memory only. A confirmed follow-up is stored as a
question that stands alone, rewritten by the model through the same queue (:class:`Rewrite`).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.registry import PROGRAMS, compiled_store, make_program, metadata_path
from text2sql_dspy.programs.answer import check_question
from text2sql_dspy.programs.conversation import MAX_TURNS, Turn, question_to_store
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.progress import listen
from text2sql_dspy.programs.source import DataSource, open_source
from text2sql_dspy.programs.web.answer import AnswerView, build_answer
from text2sql_dspy.programs.web.jobs import AnswerQueue, Job

HISTORY_LENGTH = 100
KEPT_CONVERSATIONS = 200  # the oldest go first


@dataclass(frozen=True)
class ServeConfig:
    """What ``text2sql serve`` was started with. ``databases`` maps the page's names to paths or URLs."""

    databases: dict[str, str]
    program: str = "v2"
    model: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    examples_path: Path | None = None
    # column and table descriptions (:func:`~..catalog.documentation.load_docs`) for every database
    docs: Path | None = None
    max_waiting: int = 8
    timeout_s: float = 180.0
    max_body_bytes: int = 64 * 1024


def store_path(config: ServeConfig) -> Path | None:
    """``--examples``, else the store a compiled ``--program`` learned from (kept beside it), else None: the
    default store (``$TEXT2SQL_EXAMPLES``, else the user cache's), as ``text2sql ask`` chooses."""
    if config.examples_path is not None:
        return config.examples_path
    compiled = Path(config.program)
    if compiled.suffix != ".json":
        return None
    try:
        meta = json.loads(metadata_path(compiled).read_text())
    except (OSError, ValueError):
        return None  # make_program names what is wrong with the compiled file
    return compiled_store(compiled, meta) if meta.get("examples") else None


def database_names(targets: list[str]) -> dict[str, str]:
    """A short name for each database (its id; ``saas-2`` for a second ``saas``), in the order given."""
    names: dict[str, str] = {}
    for target in targets:
        base = parse_address(target).db_id
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names[name] = target
    return names


@dataclass(frozen=True)
class Question:
    """A question as the queue carries it, in its conversation (an id from :meth:`Service.check`)."""

    question: str
    db: str
    program: str
    conversation: str = ""


@dataclass(frozen=True)
class Rewrite:
    """A confirmed follow-up to be rewritten so that it stands alone, as the queue carries it."""

    question: str
    earlier: tuple[Turn, ...]


@dataclass
class Thread:
    """One conversation: its database and the turns answered so far."""

    id: str
    db: str
    turns: list[Turn] = field(default_factory=list)


@dataclass
class HistoryEntry:
    job: Job
    question: Question
    saved: list[int] = field(default_factory=list)  # ids of the pairs saved from this answer


class Service:
    """Databases, programs, the answer queue, the history and the example store of one server."""

    def __init__(self, config: ServeConfig, *, lm: dspy.LM | None = None,
                 program_options: dict[str, Any] | None = None):
        if not config.databases:
            raise ConfigurationError("no database to serve: pass --db PATH|URL (or none, for the bundled database).")
        self.config = config
        self._lm = lm
        self._program_options = dict(program_options or {})
        self._programs: dict[str, Text2SQLProgram] = {}
        self._lock = threading.Lock()  # programs (building one loads the model)
        self._store_lock = threading.Lock()
        self._store: ExampleStore | None = None
        self.history: deque[HistoryEntry] = deque(maxlen=HISTORY_LENGTH)
        self._threads: OrderedDict[str, Thread] = OrderedDict()
        self._threads_lock = threading.Lock()
        for name in config.databases:
            self.source(name)  # a missing or unreadable database fails at start, not at the first question
        self.queue = AnswerQueue(self._answer, max_waiting=config.max_waiting, timeout_s=config.timeout_s)

    @property
    def program_choices(self) -> list[str]:
        return list(dict.fromkeys([self.config.program, *PROGRAMS]))

    def source(self, name: str) -> DataSource:
        target = self.config.databases.get(name)
        if target is None:
            raise ConfigurationError(f"unknown database {name!r}: this server has {', '.join(self.config.databases)}.")
        return open_source(target, docs=self.config.docs)

    def check(self, question: str, db: str | None, program: str | None, conversation: str | None = None) -> Question:
        """The question as the queue carries it, in ``conversation`` (None: a new one); a bad one raises a
        :class:`Text2SQLError` naming the fix."""
        db = db or next(iter(self.config.databases))
        self.source(db)
        program = program or self.config.program
        if program not in self.program_choices:
            raise ConfigurationError(f"unknown program {program!r}: this server offers "
                                     f"{', '.join(self.program_choices)}.")
        question = check_question(question)
        if conversation:
            thread = self.thread(conversation)
            if thread.db != db:
                raise ConfigurationError(f"conversation {conversation!r} is over database {thread.db!r}, not {db!r}: "
                                         "start a new conversation (send no conversation id) to ask about another.")
        return Question(question, db, program, conversation or self._new_thread(db))

    def thread(self, conversation: str) -> Thread:
        with self._threads_lock:
            thread = self._threads.get(conversation)
        if thread is None:
            raise ConfigurationError(f"no conversation {conversation!r} here (the server keeps the latest "
                                     f"{KEPT_CONVERSATIONS}, until it restarts): "
                                     "start a new one (send no conversation id).")
        return thread

    def _new_thread(self, db: str) -> str:
        thread = Thread(secrets.token_urlsafe(12), db)
        with self._threads_lock:
            self._threads[thread.id] = thread
            while len(self._threads) > KEPT_CONVERSATIONS:
                self._threads.popitem(last=False)
        return thread.id

    def submit(self, question: Question) -> Job:
        """Queue ``question`` (raises :class:`~.jobs.QueueFull`) and list it in the history."""
        job = self.queue.submit(question)
        self.history.appendleft(HistoryEntry(job, question))
        return job

    def standalone(self, job: Job) -> Job | None:
        """Queue the rewrite of answered ``job``'s question to stand alone (None: it was no follow-up)."""
        view = job.result if job.status == "done" else None
        if not isinstance(view, AnswerView) or not view.earlier:
            return None
        return self.queue.submit(Rewrite(view.question, view.earlier))

    def entry(self, job_id: str) -> HistoryEntry | None:
        return next((e for e in list(self.history) if e.job.id == job_id), None)  # a copy: other threads append

    @property
    def lm(self) -> dspy.LM:
        if self._lm is None:
            from text2sql_dspy.programs.llm.factory import build_lm

            self._lm = build_lm(self.config.model)
        return self._lm

    def program(self, spec: str) -> Text2SQLProgram:
        with self._lock:
            if spec not in self._programs:
                # shown the pairs the page saves, and the descriptions the sources were given
                options = {"examples": self.store, "docs": self.config.docs, **self._program_options}
                self._programs[spec] = make_program(spec, lm=self.lm, judge_lm=self.lm, **options)
            return self._programs[spec]

    def _answer(self, job: Job) -> AnswerView | str:
        """The worker's job: run the program with its progress going to the job, then build the page's view (for
        a :class:`Rewrite`: the question rewritten)."""
        if isinstance(job.payload, Rewrite):
            return question_to_store(job.payload.question, list(job.payload.earlier), self.lm)
        question: Question = job.payload
        target = self.config.databases[question.db]
        thread = self.thread(question.conversation)
        earlier = tuple(thread.turns[-MAX_TURNS:])
        if self._lm is None:
            job.emit("loading")
        with listen(lambda stage, detail: job.emit(stage, **detail)):
            program = self.program(question.program)
            answer = program.run(question.question, db_path=target, history=list(earlier))
        if answer.sql:
            thread.turns.append(Turn.of(answer))
        job.emit("showing")
        view = build_answer(question.db, question.program, answer, self.source(question.db))
        view.conversation, view.earlier = thread.id, earlier
        view.position = len(thread.turns) - 1 if answer.sql else None
        return view

    def correct(self, job: Job, sql: str) -> None:
        """The user confirmed or corrected ``job``'s answer with ``sql``: later follow-ups in its conversation build
        on that, not on what the program answered (a turn the program left unanswered joins with it)."""
        view = job.result
        if not isinstance(view, AnswerView) or not view.conversation:
            return
        with self._threads_lock:
            thread = self._threads.get(view.conversation)
        if thread is None:
            return  # the conversation is gone: there is nothing to build on
        turn = Turn(question=view.question, sql=sql)
        with self._threads_lock:
            if view.position is None:
                thread.turns.append(turn)
                view.position = len(thread.turns) - 1
            elif thread.turns[view.position].sql != sql:
                thread.turns[view.position] = turn

    @property
    def store(self) -> ExampleStore:
        """The store "Right" saves into and every program is shown: see :func:`store_path`."""
        with self._store_lock:
            if self._store is None:
                self._store = ExampleStore(store_path(self.config))
            return self._store

    def close(self) -> None:
        self.queue.close()
