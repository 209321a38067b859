"""What went wrong with a served or hosted model, in one line that names the fix.

A call to a model service (a vLLM, SGLang or llama.cpp server, Anthropic, OpenAI) fails in a
few ways the user can act on: nothing listens at the address, the reply took longer than the
timeout, the reply is not an OpenAI-compatible (or Messages API) reply, the server failed, the
key was refused. DSPy raises them as :class:`dspy.utils.exceptions.LMError` subclasses;
:func:`describe_lm_failure` turns one into a sentence for ``text2sql ask`` and for an
evaluation record. The embedded model's own errors are not service failures (None).
"""

from __future__ import annotations

import os

from text2sql_dspy.programs.errors import Text2SQLError

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "RETRIES_ENV",
    "TIMEOUT_ENV",
    "ModelServiceError",
    "describe_lm_failure",
    "is_service_failure",
]

TIMEOUT_ENV = "TEXT2SQL_TIMEOUT_S"
RETRIES_ENV = "TEXT2SQL_RETRIES"
# Long enough for a CPU llama.cpp server reading a whole ~8k-token schema cold (~170 s on 2 cores
# plus a queue), short enough that a hung server is noticed within minutes.
DEFAULT_TIMEOUT_S = 180.0
DEFAULT_RETRIES = 2  # a failed call is tried again twice (after 1 s, then 2 s) before it counts


class ModelServiceError(Text2SQLError):
    """A served or hosted model could not answer (the message names the fix)."""


def _where() -> str:
    base = os.environ.get("TEXT2SQL_API_BASE") or os.environ.get("OPENAI_API_BASE")
    return f" at {base}" if base else ""


def is_service_failure(exc: BaseException) -> bool:
    """True for a model service's failure (unreachable, timed out, garbled, failed, refused), not a bad request."""
    from dspy.utils.exceptions import (
        ContextWindowExceededError,
        LMAuthError,
        LMInvalidRequestError,
        LMProviderError,
        LMTimeoutError,
        LMTransportError,
        LMUnexpectedError,
    )

    if isinstance(exc, ModelServiceError):
        return True
    if isinstance(exc, (ContextWindowExceededError, LMInvalidRequestError)):
        return False
    return isinstance(exc, (LMTransportError, LMTimeoutError, LMProviderError, LMAuthError, LMUnexpectedError))


def describe_lm_failure(exc: BaseException) -> str | None:
    """One line saying what failed and how to fix it, or None when ``exc`` is not a model service's failure."""
    if isinstance(exc, ModelServiceError):
        return str(exc)
    if not is_service_failure(exc):
        return None
    from dspy.utils.exceptions import LMAuthError, LMTimeoutError

    model = getattr(exc, "model", None) or "the model"
    detail = str(getattr(exc, "message", None) or exc).strip().splitlines()[0][:300]
    timeout = os.environ.get(TIMEOUT_ENV) or f"{DEFAULT_TIMEOUT_S:g}"
    lowered = detail.lower()
    if isinstance(exc, LMAuthError):
        fix = "set the provider's API key (ANTHROPIC_API_KEY, OPENAI_API_KEY) to a valid key"
    elif isinstance(exc, LMTimeoutError) or "timed out" in lowered or "timeout" in lowered:
        detail = detail.split(";")[0]  # DSPy's own advice after it names a setting users do not see
        fix = (f"the reply took longer than {timeout} s: raise {TIMEOUT_ENV}, use fewer --threads, "
               "or check that the server is not overloaded")
    elif "connect" in lowered or "refused" in lowered or "resolve" in lowered or "reset" in lowered:
        fix = ("nothing answered there: start the server, or point TEXT2SQL_API_BASE at its host and port, "
               "e.g. http://HOST:8000/v1")
    elif "not json" in lowered:
        fix = ("that is not an OpenAI-compatible server's reply: TEXT2SQL_API_BASE must be the API root "
               "ending in /v1, not a web page or a proxy's error page")
    else:
        fix = "check the server's log; rerun the same command to retry (an evaluation resumes)"
    return f"{model}{_where()}: {detail.rstrip('.')}. Fix: {fix}."
