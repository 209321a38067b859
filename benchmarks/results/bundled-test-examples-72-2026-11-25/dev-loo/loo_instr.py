import sys, runpy
import text2sql_dspy.programs.agents.base as base
orig = base.with_notes
LINE = ("-- The example questions before the question are verified answers on this database: reuse their tables, "
        "joins, filters and conventions, but answer exactly the question asked: return only the columns it asks for, with its own filters, limit and ordering.")
def with_notes(text, notes):
    return orig(text, notes) + "\n\n" + LINE
base.with_notes = with_notes
sys.argv = [sys.argv[0]] + sys.argv[1:]
runpy.run_path('/work/dev/loo.py', run_name='__main__')
