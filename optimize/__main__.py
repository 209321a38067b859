"""``python -m optimize ...`` from the repository root: the same as ``text2sql compile ...``."""

import sys

from text2sql_dspy.optimize.compile_command import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m optimize"))
