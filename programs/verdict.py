"""An answer's verdict in words: one rule, read by every surface (the CLI, the page, ``/api/ask``, the benchmark
tables).

A probability that the answer is right, from a model that estimates one (the shipped verifier, or this database's
calibration), reads "likely right" at or above that model's ``sure`` (where 90% of its fitting answers were right),
never for an answer carrying a warning the user should read (an empty result among them) nor for a query that
failed validation (a dry run that errs among them); "likely wrong" below its ``doubtful``; "check this"
between. A score no such model gave (a program's own token confidence, before ``text2sql calibrate``) has no verdict:
it reads :data:`UNRATED`.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["UNRATED", "Verdict", "level_of", "verdict_of"]

UNRATED = "uncalibrated"  # the words for an answer whose score no model turned into a probability


class Verdict(str, Enum):
    LIKELY_RIGHT = "likely right"
    CHECK = "check this"
    LIKELY_WRONG = "likely wrong"


def verdict_of(probability: float, *, sure: float | None, doubtful: float, noted: bool = False,
               valid: bool = True) -> Verdict:
    """The verdict on a probability by its model's cut-offs; ``sure`` None: that model found no cut-off as sure;
    ``noted``: the answer carries a warning; ``valid``: its query passed the validator."""
    if probability < doubtful:
        return Verdict.LIKELY_WRONG
    if sure is not None and probability >= sure and not noted and valid:
        return Verdict.LIKELY_RIGHT
    return Verdict.CHECK


def level_of(words: str) -> str:
    """``good``, ``warn`` or ``bad``: how a page colours a verdict's words (an unrated answer is ``warn``)."""
    return {Verdict.LIKELY_RIGHT.value: "good", Verdict.LIKELY_WRONG.value: "bad"}.get(words, "warn")
