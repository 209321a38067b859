"""Calling a predictor without letting a malformed model reply crash the program."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError

logger = logging.getLogger(__name__)

# What a malformed or unusable reply raises inside DSPy: the adapter could not parse it (after
# ChatAdapter's own JSON fallback), or a field could not be cast to its type or Literal.
MALFORMED_REPLY_ERRORS = (AdapterParseError, ValueError, TypeError, KeyError)


def predict_or_error(
    predictor: Callable[..., dspy.Prediction], *args: Any, **inputs: Any
) -> tuple[dspy.Prediction | None, str | None]:
    """``predictor(*args, **inputs)`` as ``(prediction, None)``, or ``(None, reason)`` when the reply was unusable."""
    try:
        return predictor(*args, **inputs), None
    except MALFORMED_REPLY_ERRORS as exc:
        reason = f"malformed model reply ({type(exc).__name__}): {_first_line(exc)}"
        logger.info(reason)
        return None, reason


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
