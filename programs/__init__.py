"""text2sql-dspy programs: the baseline, the ReAct agents V1 and V2, and what they run on."""

from programs.agents import ReActAgent, ReActAgentV2
from programs.baseline import Baseline
from programs.dataset import ensure_bundled_database as bundled_database
from programs.registry import make_program

__all__ = ["Baseline", "ReActAgent", "ReActAgentV2", "bundled_database", "make_program"]
