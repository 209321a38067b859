"""Rerun chosen indexes of the bundled test with a compiled program, scored as evaluate scores. Usage: rerun.py OUT SPEC i,j,k"""
import json, sys
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.optimize.evaluation import answer_one
out, spec, idx = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split(",")]
examples = load_split(split="test")
program = make_program(spec)
with open(out, "a") as fh:
    for i in idx:
        r = answer_one(program, spec, i, examples[i])
        fh.write(json.dumps(r, default=str) + "\n"); fh.flush()
        print(i, r["correct"], r["lm_calls"], r["tools"], flush=True)
