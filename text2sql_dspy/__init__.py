"""text2sql-dspy: a natural-language question in, correct and safe SQL over your database out.

    from text2sql_dspy import make_program, bundled_database
    agent = make_program("v2", db_path=bundled_database())
    print(agent.run("How many users are blocked right now?")["query"])

The repository's ``programs/``, ``signatures/`` and ``optimize/`` folders install as
``text2sql_dspy.programs``, ``text2sql_dspy.signatures`` and ``text2sql_dspy.optimize``; the bundled
dataset's ``data/`` and ``schemas/`` as ``text2sql_dspy.data`` and ``text2sql_dspy/schemas``.
"""

from text2sql_dspy.programs.agents.baseline import Baseline
from text2sql_dspy.programs.agents.react import ReActAgent, ReActAgentV2
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.bundled import ensure_bundled_database as bundled_database

__all__ = ["Baseline", "ReActAgent", "ReActAgentV2", "bundled_database", "make_program"]
