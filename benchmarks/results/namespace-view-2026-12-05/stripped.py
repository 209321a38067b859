"""How many of a merged benchmark's questions get a view shown without its namespace (the program's default retrieval).

    python benchmarks/results/namespace-view-2026-12-05/stripped.py OUT/train/data train     # 87 of 96
    python benchmarks/results/namespace-view-2026-12-05/stripped.py OUT/dev/data dev         # 98 of 100
"""

import json
import sys

from text2sql_dspy.programs.retrieval.schema_view import schema_view
from text2sql_dspy.programs.source import open_source

data, split = sys.argv[1], sys.argv[2]
questions = json.load(open(f"{data}/{split}.json"))
source = open_source(f"{data}/database/merged/merged.sqlite")
stripped = sum(bool(schema_view(source, q["question"]).renamed) for q in questions)
print(f"{stripped} of {len(questions)} views shown without their namespace")
