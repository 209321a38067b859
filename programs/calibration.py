"""A confidence that means what it says: the probability that an answer is right, fitted per database.

A :class:`Calibration` maps an answer's signals (:func:`signals`) to that probability with a logistic model
(scikit-learn) fitted on answers whose rightness is known: the program's own answers to a database's verified
pairs, each asked with its own pair withheld (``text2sql calibrate``). It is kept in the user cache dir under
the database's store key, the program (its class and prompts) and the model (:func:`calibration_file`), and
applies only to that triple: a map fitted on one database does not transfer to another, whose questions are
harder or easier.

``sure_at`` is the lowest probability at which the fitting answers, scored out of fold, were right at least
:data:`SURE_PRECISION` of the time; None when no cut-off reaches it. ``doubtful`` is the highest probability below
which at least :data:`MIN_DOUBTFUL` of them were right at most :data:`DOUBTFUL_SHARE` of the time, else
:data:`DOUBTFUL_FLOOR` (:func:`doubtful_threshold`, the shipped verifier's rule too). The verdict reads the two
(:mod:`~.verdict`): "likely right" at or above ``sure_at``, "likely wrong" below ``doubtful``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.answer import Answer, Status
from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.verdict import CALIBRATION, VerdictInputs

__all__ = ["Calibration", "SIGNALS", "calibration_file", "consistency", "doubtful_threshold",
           "expected_calibration_error", "fit", "load_calibration", "logistic", "save_calibration", "signals",
           "sure_threshold"]

SIGNALS = ("judge probability", "reported confidence", "draft agreement", "drafts", "valid", "fallback", "LM calls")
SURE_PRECISION = 0.9  # answers at or above the "likely right" cut-off: right at least this often when fitted
MIN_ANSWERS = 20  # fewer fitting answers, or only right or only wrong ones: no calibration
MIN_SURE = 10  # a cut-off must keep at least this many fitting answers
DOUBTFUL_SHARE = 0.3  # answers below the "likely wrong" cut-off: right at most this often on the fitting answers
MIN_DOUBTFUL = 10  # ... and at least this many of them
DOUBTFUL_FLOOR = 0.3  # the "likely wrong" cut-off where no probability has that many answers below it so rarely right
FORMAT = 1


def logistic(z: float) -> float:
    """The logistic function of a fitted model's sum ``z``: a probability. ``z`` is held within +-50, where the
    probability is 0 or 1 to double precision, so that ``exp`` never overflows."""
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def signals(answer: Answer) -> list[float]:
    """An answer's signals, in :data:`SIGNALS` order (the program's own confidence before calibration, where it was
    calibrated)."""
    reported = answer.confidence if answer.raw_confidence is None else answer.raw_confidence
    return [
        0.5 if answer.judge_score is None else float(answer.judge_score),
        float(reported),
        float(answer.agreement or 0.0),
        min(answer.drafts, 3) / 3,
        float(answer.valid),
        float(bool(answer.reason) and answer.status is not Status.UNSURE),
        min(answer.metrics.lm_calls, 8) / 8,
    ]


@dataclass(frozen=True)
class Calibration:
    """A fitted map from :func:`signals` to the probability of being right, and what it was fitted on."""

    coefficients: tuple[float, ...]
    intercept: float
    answers: int  # fitting answers
    right: int  # of those, right by execution
    sure_at: float | None = None  # "likely right" at or above it (None: no cut-off was right often enough)
    model: str = ""  # the LM whose answers were fitted
    held_out_ece: float | None = None  # expected calibration error (10 bins) of the out-of-fold probabilities
    doubtful: float = DOUBTFUL_FLOOR  # "likely wrong" below it (:func:`doubtful_threshold`; a file saved before
    # calibrations fitted it: the floor)

    def probability(self, answer: Answer) -> float:
        if not answer.sql:
            return 0.0  # no query is never a right answer
        return logistic(self.intercept + sum(w * x for w, x in zip(self.coefficients, signals(answer), strict=True)))

    def inputs(self, answer: Answer) -> VerdictInputs:
        """What the verdict on :meth:`probability` of ``answer`` is decided from: this calibration's cut-offs, the
        answer's warnings and validity, and whether the program submitted it (as its verifier's inputs say, where it
        has them: a best effort stays one)."""
        before = answer.verdict_inputs
        return VerdictInputs(cut_off=CALIBRATION, sure=self.sure_at, doubtful=self.doubtful, noted=bool(answer.noted),
                             valid=answer.valid, submitted=True if before is None else before.submitted)

    def describe(self) -> str:
        return f"calibrated on {self.answers} verified questions of this database, {self.right} answered right"

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(tuple(float(w) for w in data["coefficients"]), float(data["intercept"]), int(data["answers"]),
                   int(data["right"]), None if data.get("sure_at") is None else float(data["sure_at"]),
                   str(data.get("model") or ""),
                   None if data.get("held_out_ece") is None else float(data["held_out_ece"]),
                   float(data.get("doubtful", DOUBTFUL_FLOOR)))


def fit(answers: Sequence[tuple[Answer, bool]], model: str = "") -> Calibration | None:
    """A logistic map fitted on ``(answer, right)`` pairs; None with fewer than :data:`MIN_ANSWERS` or one class."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    right = np.array([bool(r) for _, r in answers])
    if len(answers) < MIN_ANSWERS or right.all() or not right.any():
        return None
    x = np.array([signals(answer) for answer, _ in answers])
    folds = min(5, int(right.sum()), int((~right).sum()))
    held_out = (cross_val_predict(LogisticRegression(), x, right, cv=folds, method="predict_proba")[:, 1]
                if folds >= 2 else None)
    found = LogisticRegression().fit(x, right)
    sure = ece = None
    doubtful = DOUBTFUL_FLOOR
    if held_out is not None:
        sure = sure_threshold(held_out.tolist(), right.tolist())
        doubtful = doubtful_threshold(held_out.tolist(), right.tolist(), sure=sure)
        ece = expected_calibration_error(list(zip(held_out.tolist(), right.tolist(), strict=True)))
    return Calibration(tuple(float(w) for w in found.coef_[0]), float(found.intercept_[0]), len(answers),
                       int(right.sum()), sure, model, ece, doubtful)


def sure_threshold(probabilities: Sequence[float], right: Sequence[bool], precision: float = SURE_PRECISION,
                   minimum: int = MIN_SURE) -> float | None:
    """The lowest probability p such that the answers at or above p number at least ``minimum`` and are right at
    least ``precision`` of the time; None when there is none."""
    ranked = sorted(zip(probabilities, right, strict=True), reverse=True)
    found, hits = None, 0
    for n, (p, r) in enumerate(ranked, 1):
        hits += bool(r)
        if n >= minimum and hits / n >= precision and (n == len(ranked) or ranked[n][0] < p):
            found = p
    return found


def doubtful_threshold(probabilities: Sequence[float], right: Sequence[bool], share: float = DOUBTFUL_SHARE,
                       minimum: int = MIN_DOUBTFUL, floor: float = DOUBTFUL_FLOOR, sure: float | None = None) -> float:
    """The highest probability p such that the answers below p number at least ``minimum`` and are right at most
    ``share`` of the time; ``floor`` where there is none; never above ``sure``, the cut-off for "likely right" (where
    many wrong answers lie low, the share below a high p can stay small past it). The cut-off below which a verdict
    reads "likely wrong", for the shipped verifier (``optimize/fit_verifier.py``) and a database's calibration
    alike."""
    ranked = sorted(zip(map(float, probabilities), map(bool, right), strict=True))
    found, hits = floor, 0
    for n, (p, r) in enumerate(ranked):
        if (n == 0 or ranked[n - 1][0] < p) and n >= minimum and hits / n <= share:
            found = p  # the n answers before p's first are those below it
        hits += r
    return found if sure is None else min(found, sure)


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> float | None:
    """Weighted mean |accuracy - probability| over equal-width probability bins; None for no pairs."""
    if not pairs:
        return None
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(p, c) for p, c in pairs if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if members:
            confidence = sum(p for p, _ in members) / len(members)
            accuracy = sum(c for _, c in members) / len(members)
            total += len(members) / len(pairs) * abs(accuracy - confidence)
    return total


def consistency(pairs: Sequence[tuple[float, bool]], *, draws: int = 2000, seed: int = 0) -> float | None:
    """How often answers that really were right with exactly these probabilities would show an ECE at least as
    large as this one (outcomes redrawn, the probabilities kept): a p-value for "calibrated". With few answers a
    calibrated map's ECE is far from 0, so the ECE alone cannot say."""
    import numpy as np

    observed = expected_calibration_error(pairs)
    if observed is None:
        return None
    probabilities = np.array([p for p, _ in pairs])
    rng = np.random.default_rng(seed)
    larger = 0
    for _ in range(draws):
        drawn = rng.random(len(probabilities)) < probabilities
        larger += expected_calibration_error(list(zip(probabilities.tolist(), drawn.tolist()))) >= observed - 1e-12
    return larger / draws


def calibration_file(db_key: str, program: str, model: str) -> Path:
    """Where the calibration of ``program`` (its :meth:`~..base.Text2SQLProgram.calibration_name`) answering with
    ``model`` on database ``db_key`` is kept."""
    digest = hashlib.sha256(f"{db_key}|{program}|{model}".encode()).hexdigest()[:16]
    return default_cache_dir() / "calibration" / f"{db_key}-{program}-{digest}.json"


def load_calibration(db_key: str, program: str, model: str) -> Calibration | None:
    """The saved calibration for this database, program and model; None when there is none or it is unreadable."""
    file = calibration_file(db_key, program, model)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        return Calibration.from_json(data) if data.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_calibration(calibration: Calibration, db_key: str, program: str) -> Path:
    """Write atomically (a killed process leaves the old file or the new one); returns the file."""
    file = calibration_file(db_key, program, calibration.model)
    file.parent.mkdir(parents=True, exist_ok=True)
    scratch = file.with_suffix(f".{os.getpid()}.tmp")
    scratch.write_text(json.dumps(calibration.to_json(), indent=1), encoding="utf-8")
    scratch.replace(file)
    return file
