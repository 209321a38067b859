"""DSPy signatures: what each LM step maps from and to. Declarations only."""

from text2sql_dspy.signatures.conversation import StandAloneQuestion
from text2sql_dspy.signatures.drafting import ColumnsFirstSQL, DraftSQL, EditSQL
from text2sql_dspy.signatures.judging import RUBRIC, JudgeAgainstReference, JudgeSQL, LLMJudgeOutput

__all__ = ["DraftSQL", "EditSQL", "ColumnsFirstSQL", "JudgeSQL", "JudgeAgainstReference", "LLMJudgeOutput", "RUBRIC",
           "StandAloneQuestion"]
