"""How many questions of a merged benchmark V2 shows the schema and facts exactly as on the question's own database,
and why the others differ. Not a test.

    python benchmarks/results/namespace-as-database-2026-12-06/same_prompt.py DATA SPLIT OWN_DATABASES
(DATA: a folder `merge_schemas.py --out` wrote; SPLIT: train or dev; OWN_DATABASES: the Spider-format folder of
the questions' own databases.) Run it under an arm's snapshot (PYTHONPATH) to read that arm's views.
"""

import collections
import json
import sys

from text2sql_dspy.programs.agents.registry import make_program
from text2sql_dspy.programs.source import open_source


def main() -> None:
    data, split, own_root = sys.argv[1:4]
    merged = json.load(open(f"{data}/{split}.json", encoding="utf-8"))
    own = json.load(open(f"{data}/own.json", encoding="utf-8"))
    program = make_program("v2")
    big = open_source(f"{data}/database/merged/merged.sqlite")
    sources, counts = {}, collections.Counter()
    for m, o in zip(merged, own):
        alone = sources.setdefault(o["db_id"], open_source(f"{own_root}/database/{o['db_id']}/{o['db_id']}.sqlite"))
        seen, wanted = program.schema(big, m["question"], cold=False), program.schema(alone, o["question"], cold=False)
        shown = {t.lower().split("__", 1)[-1] for t in seen.tables}
        if (seen.text, seen.facts) == (wanted.text, wanted.facts):
            counts["the same prompt"] += 1
        elif not all(t.lower().startswith(o["db_id"].lower() + "__") for t in seen.tables):
            counts["another database's tables"] += 1
        elif shown != {t.lower() for t in wanted.tables}:
            counts["some of its own tables"] += 1
        else:
            counts["its own tables, shown otherwise"] += 1
    print(f"{len(merged)} questions: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))


if __name__ == "__main__":
    main()
