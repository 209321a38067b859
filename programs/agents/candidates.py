"""Candidates: the distinct queries drafted for one question, grouped by the result they return, and chosen between.

Pure functions over :class:`Candidate` objects; running a query is the caller's (``run``), so the same
functions serve the agents and their tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from text2sql_dspy.programs.agents.drafting import Draft
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.findings import BLOCKING, LINTS, Kind
from text2sql_dspy.programs.query.results import ExecutionFacts, same_result
from text2sql_dspy.programs.query.validator import ValidationResult
from text2sql_dspy.signatures import LLMJudgeOutput

__all__ = ["Candidate", "choice_score", "close_readings", "combined_confidence", "group_by_result", "judged_score",
           "lint_weight", "majority_settled", "preference", "rank", "repair_hints", "returns_nothing", "settles",
           "stops"]

SYMPTOM_PENALTY = 0.3  # more than a full vote share of three drafts' difference (0.5 / 3 each)
UNJUDGED_SCORE = 0.25  # a group the judge budget did not reach: below any neutral judgment
UNSURE_MARGIN = 0.1  # two judged results whose choice scores are this close: the user is shown both
SYMPTOMS = frozenset({Kind.MISSING_VALUE, Kind.SHOWS_KEY})  # findings that the result cannot be what was asked

FAILED_VALIDATION_CAP = 0.3
# (lowest judge score, confidence band): the V2 card's confidence table for a structurally valid query
CONFIDENCE_BANDS = [(0.9, (0.9, 1.0)), (0.7, (0.7, 0.9)), (0.5, (0.5, 0.7)), (0.0, (0.3, 0.5))]

Run = Callable[[str], QueryResult]  # runs a query read-only (once per question: the caller keeps the result)


@dataclass
class Candidate:
    """A distinct drafted query: its draft, its validation (None: over the validation budget), how many drafts
    wrote it (or its result), and the judge's judgment."""

    draft: Draft
    validation: ValidationResult | None = None
    votes: int = 1
    judgment: LLMJudgeOutput | None = None
    p: float | None = None  # the verifier's probability that it is right, once asked
    early: bool = False  # ``p`` is the early model's, from the first draft alone
    generators: list[str] = field(default_factory=list)  # the generators whose drafts wrote it (a group: its result)

    @property
    def sql(self) -> str:
        return self.draft.sql

    @property
    def valid(self) -> bool:
        return self.validation is not None and self.validation.valid

    def found(self, *kinds: Kind) -> list[str]:
        """The messages of the validator's findings of these kinds."""
        findings = self.validation.findings if self.validation is not None else []
        return [f.message for f in findings if f.kind in kinds]

    def found_where(self, *kinds: Kind) -> list[str]:
        """Where in the query the validator's findings of these kinds are (each finding's ``where``)."""
        findings = self.validation.findings if self.validation is not None else []
        return [f.where for f in findings if f.kind in kinds and f.where]

    @property
    def blocked(self) -> bool:
        """Whether a finding says the result cannot be right as it stands (:data:`~..findings.BLOCKING`)."""
        return bool(self.found(*BLOCKING))

    @property
    def symptoms(self) -> list[str]:
        """Findings that the result cannot be what was asked: a literal the column does not hold, a key shown
        where the question asks for no id."""
        return self.found(*SYMPTOMS)


def returns_nothing(facts: ExecutionFacts) -> bool:
    """Whether a result gives no answer: it failed, has no rows, or only NULLs."""
    return not facts.ok or facts.empty or facts.all_null


def rank(*, blocked: bool, nothing: bool, symptom: bool, p: float) -> tuple[bool, bool, bool, float]:
    """V2's choice among verified readings, as a sort key, least first (the one rule: the agent, the fit's replays
    and the held-out replays all rank by it): a reading with a blocking finding never beats one without, one that
    returns nothing (no rows, only NULLs, an error) never beats one that returns rows, one showing a symptom
    (:data:`SYMPTOMS`) never beats one without, and between those the verifier's probability decides."""
    return blocked, nothing, symptom, -p


def settles(p: float, early_sure: float, *, blocked: bool, nothing: bool) -> bool:
    """Whether the first draft alone is the answer: the early model gives it ``early_sure`` or more, and it is clear of
    blocking findings and returns rows (a symptom does not keep it from settling: the chosen reading is redrafted
    from it after)."""
    return p >= early_sure and not blocked and not nothing


def stops(p: float, stop: float, *, blocked: bool, nothing: bool, symptom: bool) -> bool:
    """Whether the reading V2 would choose now ends its drafting (an ensemble's ``stop``, from two drafts on): the full
    model gives it ``stop`` or more, and it is clear of blocking findings, returns rows and shows no symptom."""
    return p >= stop and not blocked and not nothing and not symptom


def preference(candidate: Candidate, facts: ExecutionFacts) -> tuple[bool, bool, bool, float]:
    """:func:`rank`'s key of a candidate whose result is ``facts``."""
    return rank(blocked=candidate.blocked, nothing=returns_nothing(facts), symptom=bool(candidate.symptoms),
                p=candidate.p or 0.0)


def majority_settled(run: Run, candidates: list[Candidate], remaining: int) -> bool:
    """True when the most drafted result leads the next by more than ``remaining`` drafts could close.

    This is adaptive consistency (Aggarwal et al., EMNLP 2023): the majority that drawing every sample would
    give, for fewer samples.
    """
    votes = sorted((g.votes for g in group_by_result(run, candidates)), reverse=True) + [0, 0]
    return votes[0] > votes[1] + remaining


def group_by_result(run: Run, candidates: list[Candidate]) -> list[Candidate]:
    """One representative per distinct result, carrying the group's votes, most votes first. The representative is
    the cleanest query of its group (:func:`lint_weight`), the first drafted among equals: the rows are the same,
    so a defect one way of writing them shows is not held against the others.

    Only valid queries that ran can share a result (:func:`~..query.results.same_result`); any other candidate is
    a group of its own.
    """
    groups: list[Candidate] = []
    for candidate in candidates:
        match = None
        if candidate.valid:  # same_result is False for a query that failed to run
            result = run(candidate.sql)
            match = next((g for g in groups if g.valid and same_result(run(g.sql), result)), None)
        if match is not None:
            match.votes += candidate.votes
            match.generators += [g for g in candidate.generators if g not in match.generators]
            if lint_weight(candidate) < lint_weight(match):
                match.draft, match.validation, match.p = candidate.draft, candidate.validation, candidate.p
        else:
            groups.append(Candidate(candidate.draft, candidate.validation, candidate.votes, p=candidate.p,
                                    generators=list(candidate.generators)))
    return sorted(groups, key=lambda g: -g.votes)


def lint_weight(candidate: Candidate) -> tuple[bool, int]:
    """How much the validator holds against a query, least first: a blocking finding, then the count of lints."""
    return candidate.blocked, len(candidate.found(*LINTS))


def judged_score(candidate: Candidate) -> float:
    return candidate.judgment.correctness_score if candidate.judgment is not None else UNJUDGED_SCORE


def choice_score(candidate: Candidate, total: int) -> float:
    """How strongly the evidence supports a candidate: the judge's probability and the candidates' agreement,
    less :data:`SYMPTOM_PENALTY` when it shows a symptom."""
    penalty = SYMPTOM_PENALTY if candidate.symptoms else 0.0
    return 0.5 * judged_score(candidate) + 0.5 * candidate.votes / max(1, total) - penalty


def close_readings(groups: list[Candidate], total: int) -> list[Candidate]:
    """The two best-supported judged results when their choice scores are within :data:`UNSURE_MARGIN`
    (best first), else none: the program cannot decide between them, and says so."""
    judged = sorted((g for g in groups if g.judgment is not None), key=lambda g: -choice_score(g, total))
    if len(judged) < 2 or choice_score(judged[0], total) - choice_score(judged[1], total) >= UNSURE_MARGIN:
        return []
    return judged[:2]


def repair_hints(candidate: Candidate, facts: ExecutionFacts | None = None) -> str:
    """Facts about a rejected query, as hints for one redraft: the validator's findings, what it returned (given
    ``facts``), the judge's issues."""
    lines = [f"A previous attempt was rejected:\n{candidate.sql}"]
    validation = candidate.validation
    if validation is not None and not validation.valid:
        lines += [f"- {e}" for e in validation.errors[:4]] + [f"- {s}" for s in validation.suggestions[:4]]
    missing = candidate.found(Kind.MISSING_VALUE)
    lines += [f"- {m}: use a stored value" for m in missing[:4]]
    lines += [f"- {m}" for m in candidate.symptoms if m not in missing][:2]
    lines += [f"- {m}" for m in candidate.found(*LINTS)][:3]
    if facts is not None and candidate.valid:
        lines.append("It returned:\n" + facts.render())
    if candidate.judgment is not None:
        lines += [f"- {i}" for i in candidate.judgment.issues[:3]]
        lines += [f"- fix: {s}" for s in candidate.judgment.suggestions[:3]]
    lines.append("Write a corrected query.")
    return "\n".join(lines)


def combined_confidence(agent_confidence: float, valid: bool, judge_score: float | None) -> float:
    """The answer's confidence.

    V1 (no judge score): the agent's own confidence, capped at 0.3 unless the query validated.
    V2: ``0.4 * agent + 0.6 * judge``, kept inside the V2 card's band for that judge score when the
    query validated, and capped at 0.3 when it did not.
    """
    agent_confidence = min(1.0, max(0.0, agent_confidence))
    if judge_score is None:
        return agent_confidence if valid else min(agent_confidence, FAILED_VALIDATION_CAP)
    combined = 0.4 * agent_confidence + 0.6 * judge_score
    if not valid:
        return min(combined, FAILED_VALIDATION_CAP)
    low, high = next(band for floor, band in CONFIDENCE_BANDS if judge_score >= floor)
    return min(high, max(low, combined))
