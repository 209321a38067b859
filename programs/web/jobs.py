"""One model, one answer at a time: a bounded queue of questions in front of a one-worker thread pool.

:meth:`AnswerQueue.submit` either queues a :class:`Job` or raises :class:`QueueFull` (the page and
the API answer 503 with ``Retry-After``). Each job records its progress events as they happen and
ends ``done``, ``failed`` (the error names the fix) or ``timed_out``; its :attr:`Job.future` then
resolves to the job, so threads wait on it and the event loop awaits it (:func:`ended`). A job still
waiting when its time is up is dropped unrun; one already running cannot be interrupted inside the
model, so its caller gets the timeout error at once and the late answer is discarded. Nothing a job
raises stops the worker.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from text2sql_dspy.programs.errors import Text2SQLError

logger = logging.getLogger(__name__)

KEPT_JOBS = 200  # finished jobs kept for their page, CSV and SSE stream; the oldest go first
FIRST_GUESS_S = 15.0  # the expected length of one answer before any has been timed
SHUTTING_DOWN = "the server is shutting down; ask again when it is back."


class QueueFull(Exception):
    """Every place in the queue is taken; ask again after ``retry_after_s`` seconds."""

    def __init__(self, retry_after_s: int, waiting: int):
        super().__init__(f"the model is busy with {waiting} question(s) waiting; try again in {retry_after_s} s")
        self.retry_after_s = retry_after_s


@dataclass
class Job:
    """One question on its way through the queue; ``payload`` is what the worker function needs.

    ``future`` resolves to the job once it has ended (:meth:`finish`); listeners (:meth:`listen`) are
    called, in the thread that changed the job, after each event and at the end.
    """

    id: str
    payload: Any
    deadline: float
    timeout_s: float
    status: str = "queued"  # queued, running, done, failed, timed_out
    events: list[dict[str, Any]] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    started: float | None = None
    future: futures.Future[Job] = field(default_factory=futures.Future, repr=False)
    _listeners: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def finished(self) -> bool:
        return self.future.done()

    def emit(self, stage: str, **detail: Any) -> None:
        with self._lock:
            self.events.append({"stage": stage, **{k: v for k, v in detail.items() if _plain(v)}})
        self._notify()

    def events_since(self, index: int) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events[index:])

    def finish(self, status: str, *, result: Any = None, error: str | None = None) -> bool:
        """End the job once; False if it had already ended (e.g. timed out while the model ran)."""
        with self._lock:
            if self.future.done():
                return False
            self.status, self.result, self.error = status, result, error
            self.future.set_result(self)
        self._notify()
        return True

    def time_out(self) -> bool:
        return self.finish("timed_out", error=timeout_message(self.timeout_s))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job has ended or ``timeout`` seconds have passed; whether it has ended."""
        return bool(futures.wait([self.future], timeout).done)

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (it must not raise) after each change from now on; returns what stops it."""
        with self._lock:
            self._listeners.append(listener)
        return lambda: self._unlisten(listener)

    def _unlisten(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.remove(listener)

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()


async def ended(job: Job) -> Job:
    """``job`` once it has ended; past its deadline it ends as timed out (a late answer is discarded)."""
    await asyncio.wait([asyncio.wrap_future(job.future)], timeout=max(0.0, job.deadline - time.monotonic()))
    job.time_out()  # nothing if it has ended
    return job


def timeout_message(timeout_s: float) -> str:
    return (
        f"no answer within the time limit of {timeout_s:g} s. Ask a narrower question, try again when the "
        "server is less busy, or start `text2sql serve` with a larger --timeout."
    )


def _plain(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


class AnswerQueue:
    """At most ``max_waiting`` jobs waiting for one worker thread that calls ``work(job)``; ``running`` is the
    job it is on (None between jobs), ``waiting`` how many are queued behind it."""

    def __init__(self, work: Callable[[Job], Any], *, max_waiting: int = 8, timeout_s: float = 180.0):
        self.work = work
        self.max_waiting = max_waiting
        self.timeout_s = timeout_s
        self._executor = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="text2sql-answer-worker")
        self._waiting = 0
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()  # _waiting and _jobs
        self._served = itertools.count(1)
        self._mean_s = FIRST_GUESS_S
        self.running: Job | None = None

    def submit(self, payload: Any) -> Job:
        """Queue a job, or raise :class:`QueueFull` with a Retry-After estimate."""
        job = Job(secrets.token_urlsafe(9), payload, time.monotonic() + self.timeout_s, self.timeout_s)
        with self._lock:
            if self._waiting >= self.max_waiting:
                raise QueueFull(self.retry_after_s(), self._waiting)
            job.emit("queued", ahead=self._waiting + (self.running is not None))
            self._waiting += 1
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT_JOBS and next(iter(self._jobs.values())).finished:
                self._jobs.popitem(last=False)
        try:
            work = self._executor.submit(self._run, job)
        except RuntimeError:  # closed
            self._dropped(job)
        else:
            work.add_done_callback(lambda work: work.cancelled() and self._dropped(job))
        return job

    def _dropped(self, job: Job) -> None:
        """``job`` will never run (the queue has closed): its place is freed and it fails."""
        with self._lock:
            self._waiting -= 1
        job.finish("failed", error=SHUTTING_DOWN)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    @property
    def waiting(self) -> int:
        return self._waiting

    def retry_after_s(self) -> int:
        """Seconds until a place is likely free: what remains of the running answer, by the mean answer time."""
        running = self.running
        elapsed = time.monotonic() - running.started if running is not None and running.started else 0.0
        return max(1, math.ceil(self._mean_s - elapsed))

    def close(self) -> None:
        """Stop the worker after the job it is on; queued jobs end as failed."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _run(self, job: Job) -> None:
        with self._lock:
            self._waiting -= 1
        if job.finished:  # its caller gave up while it waited
            return
        if time.monotonic() > job.deadline:
            job.time_out()
            return
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
