"""``llm_as_judge_reward``: a judge LM scores a prediction against a golden answer (the V2 card's reward).

    >>> llm_as_judge_reward("SELECT COUNT(*) FROM users", "SELECT COUNT(id) FROM users")
    {'reward': 1.0, 'raw_score': 1.0}

The judge model is ``llm_backend`` (a ``dspy.LM`` or a model string), else ``$LLM_JUDGE_MODEL``
(or ``$TEXT2SQL_JUDGE_MODEL``), else the embedded local model.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import dspy

from text2sql_dspy.programs.agents.recovery import predict_or_error
from text2sql_dspy.signatures import JudgeAgainstReference

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReferenceVerdict:
    """A reference judgement: ``reward`` clamped to [0, 1], ``raw_score`` as the judge gave it,
    ``error`` the reason when the reply could not be read (both scores are then 0.0)."""

    reward: float
    raw_score: float
    error: str | None = None


def judge_lm(llm_backend: Any = None) -> Any:
    """The judge LM: ``llm_backend`` if it is an LM; else the model it names; else the judge's
    environment variables (``TEXT2SQL_JUDGE_MODEL``, ``LLM_JUDGE_MODEL``); else the LM configured
    with ``dspy.configure``; else the embedded model."""
    from text2sql_dspy.programs.llm.factory import build_lm, judge_model_from_env

    if llm_backend is not None and not isinstance(llm_backend, str):
        return llm_backend
    if llm_backend is None and judge_model_from_env() is None and dspy.settings.lm is not None:
        return dspy.settings.lm
    return build_lm(llm_backend, role="judge")


def judge_against_reference(prediction: str, golden_answer: str, lm: Any,
                            predictor: dspy.Predict | None = None) -> ReferenceVerdict:
    """Score ``prediction`` against ``golden_answer`` with :class:`JudgeAgainstReference` on ``lm``."""
    predictor = predictor or dspy.Predict(JudgeAgainstReference)
    with dspy.context(lm=lm):
        pred, error = predict_or_error(predictor, prediction=str(prediction), golden_answer=str(golden_answer))
    raw = _as_float(pred.get("score")) if pred is not None else None
    if raw is None:
        reason = error or f"the judge gave no number: {pred.get('score') if pred is not None else None!r}"
        logger.info("reference judge: %s", reason)
        return ReferenceVerdict(0.0, 0.0, reason)
    return ReferenceVerdict(min(1.0, max(0.0, raw)), raw)


def llm_as_judge_reward(prediction: str, golden_answer: str, llm_backend: Any = None) -> dict[str, float]:
    """``{"reward": score clamped to [0, 1], "raw_score": score as given}``; 0.0 for both when unparseable."""
    verdict = judge_against_reference(prediction, golden_answer, judge_lm(llm_backend))
    return {"reward": verdict.reward, "raw_score": verdict.raw_score}


def _as_float(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number
