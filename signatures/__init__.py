"""DSPy signatures: what each LM step maps from and to. Declarations only."""

from signatures.drafting import DraftSQL
from signatures.judging import RUBRIC, JudgeAgainstReference, JudgeSQL, LLMJudgeOutput

__all__ = ["DraftSQL", "JudgeSQL", "JudgeAgainstReference", "LLMJudgeOutput", "RUBRIC"]
