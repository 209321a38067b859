"""Progress of one answer as it happens: the stages a program goes through, for whoever listens.

A program calls :func:`emit` at each stage (``drafting``, ``checking``, ``running``, ``judging``);
a caller that wants to show progress (the web page, a CLI spinner) wraps the call in
:func:`listen`. Listeners are per thread and per context (a ``ContextVar``), so two questions
answered at once never see each other's events. With no listener, :func:`emit` does nothing.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["STAGES", "emit", "listen"]

STAGES = ("drafting", "checking", "running", "judging")
Listener = Callable[[str, dict[str, Any]], None]

logger = logging.getLogger(__name__)
_listeners: contextvars.ContextVar[tuple[Listener, ...]] = contextvars.ContextVar("text2sql_progress", default=())


def emit(stage: str, **detail: Any) -> None:
    """Tell this context's listeners that ``stage`` started; a listener that raises is logged, not fatal."""
    for listener in _listeners.get():
        try:
            listener(stage, detail)
        except Exception:  # a broken progress display must never break an answer
            logger.exception("progress listener failed on %r", stage)


@contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Call ``listener(stage, detail)`` for every :func:`emit` inside the block (on this thread)."""
    token = _listeners.set((*_listeners.get(), listener))
    try:
        yield
    finally:
        _listeners.reset(token)
