"""The verifier: the probability that a query answers its question, from signals that need no model call.

It reads one :class:`~..answer.Reading` (a drafted query, checked and run) beside its question: the drafting
model's token probabilities, the validator's findings (the lints among them), what the result looks like against
what was asked (a count asked and one number returned; a list asked and one row; no rows, only NULLs, repeated
rows), and, once V2 has sampled and judged, the drafts' agreement and the judge's P(True). Two logistic models
combine them: ``early``, on the first draft alone (it decides whether one draft is enough), and ``full``, with the
agreement and the verdict (it chooses among result groups and gives the answer's confidence).

The models are fitted on public training data only (``optimize/fit_verifier.py``, on answers
``optimize/collect.py`` collects) and ship in the package as ``verifier.json``, with the prompts'
digest they were fitted under. Nothing is fitted, downloaded or pickled at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from text2sql_dspy.programs.agents.asked import ASKED, asked_features
from text2sql_dspy.programs.agents.ensemble import MODEL_GENERATORS, PROGRAM_MADE
from text2sql_dspy.programs.agents.followup import FOLLOW_UP, follow_up_features
from text2sql_dspy.programs.answer import Reading
from text2sql_dspy.programs.calibration import logistic
from text2sql_dspy.programs.query.findings import LINTS, Kind
from text2sql_dspy.programs.query.question_lints import HOW_MANY
from text2sql_dspy.programs.verdict import VerdictInputs, words_of

__all__ = ["ASKED", "EARLY", "FOLLOW_UP", "FULL", "GENERATED", "KINDS", "MEANS_WRONG", "Verifier", "features",
           "kind_of", "load_verifier"]

FLAGGED = (*LINTS, Kind.SHOWS_KEY, Kind.MISSING_VALUE, Kind.SELECT_STAR, Kind.LIMIT_WITHOUT_ORDER)  # a feature each
# Signals that mean "wrong" where they fire: a fitted weight may lower P(right) by them, never raise it.
MEANS_WRONG = ("empty", "null_only", "repeated_rows", "count_asked_not_one_number", "list_asked_one_row",
               "columns_asked_short", "lints", *(f"lint: {k}" for k in FLAGGED),
               *(a for a in ASKED if a.startswith("unmet")))
EARLY = (
    "confidence", "weakest", "tokens", "rows", "empty", "null_only", "repeated_rows", "count_asked_one_number",
    "count_asked_not_one_number", "list_asked_one_row", "columns_asked_short", "lints",
    *(f"lint: {k}" for k in FLAGGED),
)
FULL = (*EARLY, "agreement", "drafts", "groups", "judge", "judged")
# What only several generators can say: the share of those that ran whose drafts reached the reading's result, and
# which of them did.
GENERATED = ("generators agree", *(f"by: {g}" for g in MODEL_GENERATORS))
LIST_ASKED = re.compile(r"^\W*(list|show|give|find|what are|which|who are|name)\b|\b(all|every|each)\b", re.IGNORECASE)
SINGLE_ASKED = re.compile(r"\b(the (most|least|highest|lowest|largest|smallest|first|last|oldest|youngest|top)|"
                          r"\w+est|maximum|minimum|only one|which one|\bone\b)", re.IGNORECASE)


ASKED_SET, FOLLOW_UP_SET = frozenset(ASKED), frozenset(FOLLOW_UP)
DIGITS = 10  # significant digits a verifier's numbers are written with


def _rounded(values: Sequence[float]) -> list[float]:
    return [float(f"{float(v):.{DIGITS}g}") for v in values]


def features(reading: Reading, question: str, *, drafts: int = 1, groups: int = 1,
             asked: bool = True, previous: str = "", ran: Sequence[str] = ()) -> dict[str, float]:
    """The signals of ``reading`` (a valid query that ran) for ``question``; ``drafts`` written and the distinct
    results (``groups``) they gave, for the full model; ``asked``: with the question-against-query features
    (:data:`ASKED`, a parse of the query), which a model that weighs none of them does without; ``previous``: the
    query of the turn a follow-up follows (:data:`FOLLOW_UP`, all 0 without one); ``ran``: the generators that
    drafted for the question (:data:`GENERATED`: of them, those behind the reading's result, ``reading.generators``;
    none given: only the reading's own)."""
    preview = reading.preview
    rows = preview.rows if preview is not None and preview.error is None else []
    count = preview.row_count if preview is not None else 0
    columns = len(preview.columns) if preview is not None else 0
    one_number = count == 1 and columns == 1 and bool(rows) and isinstance(rows[0][0], int | float)
    counts = HOW_MANY.search(question) is not None
    kinds = {f.kind for f in reading.findings}
    asked_and = question.lower().count(" and ") + question.count(",")
    judged = reading.judge_score is not None
    found = {
        "confidence": _logit(reading.confidence if reading.confidence is not None else 0.5),
        "weakest": math.log(max(reading.weakest if reading.weakest is not None else 0.5, 1e-6)),
        "tokens": math.log1p(reading.tokens),
        "rows": math.log1p(count),
        "empty": float(count == 0),
        "null_only": float(bool(rows) and all(v is None for row in rows for v in row)),
        "repeated_rows": float(len(rows) > 1 and len({tuple(map(str, r)) for r in rows}) < len(rows)),
        "count_asked_one_number": float(counts and one_number),
        "count_asked_not_one_number": float(counts and not one_number and not (count >= 1 and columns >= 2)),
        "list_asked_one_row": float(count == 1 and LIST_ASKED.search(question) is not None
                                    and SINGLE_ASKED.search(question) is None and not counts),
        "columns_asked_short": float(asked_and >= 1 and columns == 1 and not counts),
        "lints": float(len(kinds & set(LINTS))),
        **{f"lint: {k}": float(k in kinds) for k in FLAGGED},
        "agreement": reading.votes / max(1, drafts),
        "drafts": float(min(drafts, 3)),
        "groups": float(min(groups, 3)),
        "judge": _logit(reading.judge_score) if judged else 0.0,
        "judged": float(judged),
        **(asked_features(question, reading.sql) if asked else {}),
        **follow_up_features(reading.sql, previous),
        **generated_features(reading.generators or [reading.generator or "draft"], ran),
    }
    return found


def generated_features(behind: Sequence[str], ran: Sequence[str]) -> dict[str, float]:
    """:data:`GENERATED`: the share of the generators that ``ran`` whose drafts are ``behind`` a result, and which."""
    ran_set = ({g for g in ran if g not in PROGRAM_MADE} or {g for g in behind if g not in PROGRAM_MADE}
               or {"draft"})
    found = {"generators agree": len(ran_set.intersection(behind)) / len(ran_set)}
    return found | {f"by: {g}": float(g in behind) for g in MODEL_GENERATORS}


def _logit(p: float) -> float:
    p = min(1 - 1e-4, max(1e-4, float(p)))
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Model:
    """A logistic model over named, standardised features."""

    names: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]

    def probability(self, found: Mapping[str, float]) -> float:
        z = self.intercept + sum(w * (found[n] - m) / s for n, w, m, s in
                                 zip(self.names, self.coefficients, self.means, self.scales, strict=True))
        return logistic(z)

    def never_raising(self, names: Sequence[str]) -> Model:
        """This model with the weights of ``names`` held at or below 0: present, they cannot raise the probability."""
        held = set(names)
        return replace(self, coefficients=tuple(min(0.0, w) if n in held else w
                                                for n, w in zip(self.names, self.coefficients, strict=True)))

    def to_json(self) -> dict[str, Any]:
        """The model as JSON, each number to :data:`DIGITS` significant digits: a refit whose arithmetic differs in
        the last bits (another BLAS, another CPU) writes the same file."""
        return {"names": list(self.names), "coefficients": _rounded(self.coefficients),
                "intercept": _rounded([self.intercept])[0], "means": _rounded(self.means),
                "scales": _rounded(self.scales)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Model:
        return cls(tuple(data["names"]), tuple(map(float, data["coefficients"])), float(data["intercept"]),
                   tuple(map(float, data["means"])), tuple(map(float, data["scales"])))


@dataclass(frozen=True)
class Verifier:
    """The two models, the probability at and above which answers were right 90% of the time out of fold (``sure``),
    the early model's at which one draft is enough (``early_sure``: settling there costs next to no answer that
    sampling gets; not a cut-off for the words), the verdict's own cut-offs by kind of answer
    where the fit chose them on answers as hard as users' (``cut_offs``, keyed by :func:`kind_of`; a kind without
    one is cut at ``sure``, or ``early_sure`` for the early model in a file fitted before the fit wrote both early
    kinds), the one below which answers were wrong most of
    the time (``doubtful``), whether the judge's verdict adds to the full model (``judge_helps``), and what they
    were fitted on (``fitted_on``: the training sets, how many questions, turns and databases, and a digest of the
    collected answers)."""

    early: Model
    full: Model
    sure: float
    doubtful: float
    judge_helps: bool
    fitted_on: Mapping[str, Any]
    early_sure: float = 1.01  # the early model's "sure": one draft is enough
    cut_offs: Mapping[str, float] = field(default_factory=dict)

    def sure_at(self, *, early: bool = False, follow_up: bool = False) -> float:
        """The verdict's cut-off for "likely right" of the model that gives the probability (``early``), for a
        follow-up's answer or a stand-alone question's."""
        return self.cut_offs.get(kind_of(early=early, follow_up=follow_up), self.early_sure if early else self.sure)

    def probability(self, reading: Reading, question: str, *, drafts: int = 1, groups: int = 1,
                    early: bool = False, previous: str = "", ran: Sequence[str] = ()) -> float:
        """P(right) of ``reading``: by the early model (first draft alone), else by the full one; ``previous``: the
        query of the turn a follow-up follows, read where the model weighs :data:`FOLLOW_UP`; ``ran``: the
        generators that drafted for the question (:data:`GENERATED`)."""
        model = self.early if early else self.full
        follows = not FOLLOW_UP_SET.isdisjoint(model.names)  # else no parse of either query
        found = features(reading, question, drafts=drafts, groups=groups, asked=not ASKED_SET.isdisjoint(model.names),
                         previous=previous if follows else "", ran=ran)
        return model.probability(found)

    def inputs(self, *, early: bool = False, follow_up: bool = False, noted: bool = False, valid: bool = True,
               submitted: bool = True) -> VerdictInputs:
        """What the verdict on this verifier's probability is decided from (:class:`~..verdict.VerdictInputs`): the
        cut-offs of the model that gave it (:meth:`sure_at`: the early one's given ``early``; a follow-up's given
        ``follow_up``) and ``doubtful``; ``noted``: the answer carries a warning; ``valid``: its query passed the
        validator; ``submitted``: the program submitted it."""
        return VerdictInputs(cut_off=kind_of(early=early, follow_up=follow_up),
                             sure=self.sure_at(early=early, follow_up=follow_up), doubtful=self.doubtful, noted=noted,
                             valid=valid, submitted=submitted)

    def words(self, probability: float, *, early: bool = False, noted: bool = False, follow_up: bool = False) -> str:
        """The verdict in words on ``probability`` by :meth:`inputs` (a query that passed validation, submitted)."""
        return words_of(probability, self.inputs(early=early, follow_up=follow_up, noted=noted))

    def to_json(self) -> dict[str, Any]:
        sure, early_sure, doubtful = _rounded([self.sure, self.early_sure, self.doubtful])
        found = {"format": 1, "early": self.early.to_json(), "full": self.full.to_json(), "sure": sure,
                 "early_sure": early_sure, "doubtful": doubtful, "judge_helps": self.judge_helps,
                 "fitted_on": dict(self.fitted_on)}
        if self.cut_offs:
            found["cut_offs"] = {k: _rounded([v])[0] for k, v in sorted(self.cut_offs.items())}
        return found

    @classmethod
    def read(cls, path: Path | str) -> Verifier:
        """A verifier file (a compile's)."""
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verifier:
        early, full = (Model.from_json(data[m]).never_raising(MEANS_WRONG) for m in ("early", "full"))
        return cls(early, full, float(data["sure"]),
                   float(data["doubtful"]), bool(data["judge_helps"]), _provenance(data["fitted_on"]),
                   float(data.get("early_sure", 1.01)), {k: float(v) for k, v in data.get("cut_offs", {}).items()})


KINDS = ("stand-alone", "stand-alone early", "follow-up", "follow-up early")  # the keys of Verifier.cut_offs


def kind_of(*, early: bool, follow_up: bool) -> str:
    """An answer's kind, as :attr:`Verifier.cut_offs` keys it: a follow-up's or a stand-alone question's, by the
    early model or the full one."""
    return f"{'follow-up' if follow_up else 'stand-alone'}{' early' if early else ''}"


def _provenance(fitted_on: Any) -> dict[str, Any]:
    """``fitted_on`` as an object; a verifier written before it was one names its files in a string."""
    return dict(fitted_on) if isinstance(fitted_on, Mapping) else {"sets": [str(fitted_on)]}


@cache
def load_verifier() -> Verifier | None:
    """The verifier shipped in the package (``verifier.json`` beside this module); None when it is missing."""
    try:
        text = resources.files("text2sql_dspy.programs.agents").joinpath("verifier.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return Verifier.from_json(json.loads(text))


def fit_model(rows: Sequence[Mapping[str, float]], right: Sequence[bool], names: Sequence[str],
              c: float = 0.5) -> Model:
    """A regularised logistic model over ``names`` fitted on ``rows`` (scikit-learn, standardised features)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.array([[row[n] for n in names] for row in rows], dtype=float)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    found = LogisticRegression(C=c, max_iter=2000).fit((x - means) / scales, np.array(right, dtype=bool))
    return Model(tuple(names), tuple(map(float, found.coef_[0])), float(found.intercept_[0]), tuple(map(float, means)),
                 tuple(map(float, scales)))
