"""``python evaluate.py ...`` from the repository root: the same as ``text2sql evaluate ...``.

The evaluation lives in :mod:`text2sql_dspy.optimize.evaluation`, so it also works once installed.
"""

import sys

from text2sql_dspy.optimize.evaluation import main

if __name__ == "__main__":
    sys.exit(main())
