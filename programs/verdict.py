"""An answer's verdict in words: one rule, read by every surface (the CLI, the page, ``/api/ask``, an ``evaluate``
record, the benchmark tables, the fit's replay).

A probability that the answer is right, from a model that estimates one (the shipped verifier, or this database's
calibration), reads:

- "likely wrong" below that model's ``doubtful`` (the highest probability below which, at least 10 of its fitting
  answers scored out of fold, at most 30% were right; :func:`~.calibration.doubtful_threshold`), and for a query
  that failed validation (a dry run that errs among them, or no query at all): it gives the user no result;
- "likely right" at or above that model's ``sure`` (where 90% of its fitting answers were right), for a query the
  program submitted that passed validation and carries no warning the user should read (an empty result among
  them);
- "check this" between.

What the verdict was decided from besides the probability (``Answer.confidence``) is kept with the answer as
:class:`VerdictInputs`: whose cut-offs applied and why, their values, the warnings, validity. Every surface words
the answer from them (:func:`words_of`), so none can disagree. A score no such model gave (a program's own token
confidence, before ``text2sql calibrate``) has no inputs and no verdict: it reads :data:`UNRATED`.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

__all__ = ["CALIBRATION", "UNRATED", "Verdict", "VerdictInputs", "level_of", "verdict_of", "words_of"]

UNRATED = "uncalibrated"  # the words for an answer whose score no model turned into a probability
CALIBRATION = "calibration"  # the cut-offs of this database's calibration (``text2sql calibrate``)


class Verdict(str, Enum):
    LIKELY_RIGHT = "likely right"
    CHECK = "check this"
    LIKELY_WRONG = "likely wrong"


def verdict_of(probability: float, *, sure: float | None, doubtful: float, noted: bool = False,
               valid: bool = True, submitted: bool = True) -> Verdict:
    """The verdict on a probability by its model's cut-offs; ``sure`` None: no cut-off for "likely right" applies
    (the model found none); ``noted``: the answer carries a warning; ``valid``: its query passed the validator;
    ``submitted``: the program submitted it (not a best effort it fell back to)."""
    if probability < doubtful or not valid:
        return Verdict.LIKELY_WRONG
    if sure is not None and probability >= sure and not noted and submitted:
        return Verdict.LIKELY_RIGHT
    return Verdict.CHECK


class VerdictInputs(BaseModel):
    """What an answer's verdict was decided from, besides its probability (``Answer.confidence``)."""

    model_config = ConfigDict(frozen=True)

    cut_off: str  # whose cut-offs applied, and why: the verifier's for a kind of answer ("stand-alone", "follow-up",
    # each with " early" where the early model alone gave the probability: ``agents.verifier.kind_of``), or
    # :data:`CALIBRATION`
    sure: float | None = None  # "likely right" at or above it (None: the model found no such cut-off)
    doubtful: float  # "likely wrong" below it
    noted: bool = False  # the answer's query carries a warning the user should read (a lint, an empty result)
    valid: bool = True  # the answer's query passed the validator (False: it failed, or there is none)
    submitted: bool = True  # the program submitted it (False: a best effort, or no query)

    def verdict(self, probability: float) -> Verdict:
        return verdict_of(probability, sure=self.sure, doubtful=self.doubtful, noted=self.noted, valid=self.valid,
                          submitted=self.submitted)


def words_of(probability: float, inputs: VerdictInputs | None) -> str:
    """The verdict in words on ``probability`` decided from ``inputs``; :data:`UNRATED` without them."""
    return UNRATED if inputs is None else inputs.verdict(probability).value


def level_of(words: str) -> str:
    """``good``, ``warn`` or ``bad``: how a page colours a verdict's words (an unrated answer is ``warn``)."""
    return {Verdict.LIKELY_RIGHT.value: "good", Verdict.LIKELY_WRONG.value: "bad"}.get(words, "warn")
