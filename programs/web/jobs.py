"""One model, one answer at a time: a bounded queue of questions served by a single worker thread.

:meth:`AnswerQueue.submit` either queues a :class:`Job` or raises :class:`QueueFull` (the page and
the API answer 503 with ``Retry-After``). Each job records its progress events as they happen and
ends ``done``, ``failed`` (the error names the fix) or ``timed_out``. A job still waiting when its
time is up is dropped unrun; one already running cannot be interrupted inside the model, so its
caller gets the timeout error at once and the worker discards the late answer. Nothing a job
raises stops the worker.
"""

from __future__ import annotations

import itertools
import logging
import math
import queue
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from text2sql_dspy.programs.errors import Text2SQLError

logger = logging.getLogger(__name__)

KEPT_JOBS = 200  # finished jobs kept for their page, CSV and SSE stream; the oldest go first
FIRST_GUESS_S = 15.0  # the expected length of one answer before any has been timed


class QueueFull(Exception):
    """Every place in the queue is taken; ask again after ``retry_after_s`` seconds."""

    def __init__(self, retry_after_s: int, waiting: int):
        super().__init__(f"the model is busy with {waiting} question(s) waiting; try again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


@dataclass
class Job:
    """One question on its way through the queue; ``payload`` is what the worker function needs."""

    id: str
    payload: Any
    deadline: float
    timeout_s: float
    status: str = "queued"  # queued, running, done, failed, timed_out
    events: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    seq: int = 0
    started: float | None = None
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    def emit(self, stage: str, **detail: Any) -> None:
        with self._lock:
            self.events.append({"stage": stage, **{k: v for k, v in detail.items() if _plain(v)}})

    def events_since(self, index: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events[index:])

    def finish(self, status: str, *, result: Any = None, error: str | None = None) -> bool:
        """End the job once; False if it had already ended (e.g. timed out while the model ran)."""
        with self._lock:
            if self._done.is_set():
                return False
            self.status, self.result, self.error = status, result, error
            self._done.set()
            return True

    def time_out(self) -> bool:
        return self.finish("timed_out", error=timeout_message(self.timeout_s))

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


def timeout_message(timeout_s: float) -> str:
    return (
        f"no answer within the time limit of {timeout_s:g} s. Ask a narrower question, try again when the "
        "server is less busy, or start `text2sql serve` with a larger --timeout."
    )


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


class AnswerQueue:
    """A queue of at most ``max_waiting`` jobs in front of one worker thread that calls ``work(job)``."""

    def __init__(self, work: Callable[[Job], Any], *, max_waiting: int = 8, timeout_s: float = 180.0):
        self.work = work
        self.max_waiting = max_waiting
        self.timeout_s = timeout_s
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=max_waiting)
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._jobs_lock = threading.Lock()
        self._seq = itertools.count(1)
        self._served = itertools.count(1)
        self._mean_s = FIRST_GUESS_S
        self.running: Job | None = None
        self._thread = threading.Thread(target=self._loop, name="text2sql-answer-worker", daemon=True)
        self._thread.start()

    def submit(self, payload: Any) -> Job:
        """Queue a job, or raise :class:`QueueFull` with a Retry-After estimate."""
        job = Job(secrets.token_urlsafe(9), payload, time.monotonic() + self.timeout_s, self.timeout_s, seq=next(self._seq))
        job.emit("queued", ahead=self._queue.qsize() + (self.running is not None))
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            raise QueueFull(self.retry_after_s(), self._queue.qsize()) from None
        with self._jobs_lock:
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS and next(iter(self._jobs.values())).finished:
                self._jobs.popitem(last=False)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._jobs_lock:
            return self._jobs.get(job_id)

    @property
    def waiting(self) -> int:
        return self._queue.qsize()

    def retry_after_s(self) -> int:
        """Seconds until a place is likely free: what remains of the running answer, by the mean answer time."""
        running = self.running
        elapsed = time.monotonic() - running.started if running is not None and running.started else 0.0
        return max(1, math.ceil(self._mean_s - elapsed))

    def close(self) -> None:
        """Stop the worker after the job it is on; queued jobs end as failed."""
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.finish("failed", error="the server is shutting down; ask again when it is back.")
        self._queue.put(None)

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if job.finished:  # its caller gave up while it waited
                continue
            if time.monotonic() > job.deadline:
                job.time_out()
                continue
            self._run(job)

    def _run(self, job: Job) -> None:
        self.running = job
        job.status = "running"
        job.started = time.monotonic()
        try:
            result = self.work(job)
        except Text2SQLError as exc:
            job.finish("failed", error=str(exc))
        except Exception as exc:  # a bug or a broken model must fail one answer, never the server
            logger.exception("answering job %s failed", job.id)
            job.finish("failed", error=f"the answer failed inside the server ({type(exc).__name__}: {exc}).")
        else:
            job.finish("done", result=result)
        finally:
            self.running = None
            elapsed = time.monotonic() - job.started
            n = next(self._served)
            self._mean_s += (elapsed - self._mean_s) / min(n, 20)  # a running mean over about the last 20
