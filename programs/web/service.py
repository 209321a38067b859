"""The state behind ``text2sql serve``: its databases, its programs on one shared model, the queue, the history.

One LM (the embedded model unless ``--model`` names another) is built once and shared by every
program the page offers; the :class:`~.jobs.AnswerQueue`'s single worker is the only caller, so
one model serves one question at a time. Every program is shown the example store the page saves
into (:func:`store_path`), so a pair confirmed or corrected on the page guides the next answers.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from text2sql_dspy.programs.agents.base import Text2SQLProgram
from text2sql_dspy.programs.agents.registry import PROGRAMS, compiled_store, make_program, metadata_path
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.db.source import DataSource, open_source
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.progress import listen
from text2sql_dspy.programs.question import check_question
from text2sql_dspy.programs.web.answer import AnswerView, build_answer
from text2sql_dspy.programs.web.jobs import AnswerQueue, Job

HISTORY_LENGTH = 100


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
    docs: Path | None = None  # column and table descriptions (:func:`~..db.docs.load_docs`) for every database
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
    """A question as the queue carries it."""

    question: str
    db: str
    program: str


@dataclass
class HistoryEntry:
    job: Job
    question: Question
    saved: list[int] = field(default_factory=list)  # ids of the pairs saved from this answer


class Service:
    """Databases, programs, the answer queue, the history and the example store of one server."""

    def __init__(self, config: ServeConfig, *, lm: dspy.LM | None = None, program_options: dict[str, Any] | None = None):
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

    def check(self, question: str, db: str | None, program: str | None) -> Question:
        """The question as the queue carries it; a bad one raises a :class:`Text2SQLError` naming the fix."""
        db = db or next(iter(self.config.databases))
        self.source(db)
        program = program or self.config.program
        if program not in self.program_choices:
            raise ConfigurationError(f"unknown program {program!r}: this server offers {', '.join(self.program_choices)}.")
        return Question(check_question(question), db, program)

    def submit(self, question: Question) -> Job:
        """Queue ``question`` (raises :class:`~.jobs.QueueFull`) and list it in the history."""
        job = self.queue.submit(question)
        self.history.appendleft(HistoryEntry(job, question))
        return job

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

    def _answer(self, job: Job) -> AnswerView:
        """The worker's job: run the program with its progress going to the job, then build the page's view."""
        question: Question = job.payload
        target = self.config.databases[question.db]
        if self._lm is None:
            job.emit("loading")
        with listen(lambda stage, detail: job.emit(stage, **detail)):
            program = self.program(question.program)
            answer = program.run(question.question, db_path=target)
        job.emit("showing")
        return build_answer(question.db, question.program, answer, self.source(question.db))

    @property
    def store(self) -> ExampleStore:
        """The store "Right" saves into and every program is shown: see :func:`store_path`."""
        with self._store_lock:
            if self._store is None:
                self._store = ExampleStore(store_path(self.config))
            return self._store

    def close(self) -> None:
        self.queue.close()
