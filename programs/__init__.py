"""text2sql-dspy programs: the baseline, the ReAct agents V1 and V2, and what they run on."""

from programs.agents import ReActAgent, ReActAgentV2
from programs.baseline import Baseline
from programs.registry import make_program

__all__ = ["Baseline", "ReActAgent", "ReActAgentV2", "make_program"]
