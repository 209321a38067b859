"""Spider dev questions with a store of Spider train's pairs: how many pairs does the selector show? (no model)"""
import json, tempfile
from pathlib import Path
from text2sql_dspy.programs.examples.store import ExampleStore
from text2sql_dspy.programs.examples.selector import ExampleSelector
from text2sql_dspy.programs.dataset import load_split
data = "/work/shared/benchmarks/spider-public"
store = ExampleStore(Path(tempfile.mkdtemp()) / "spider-train.sqlite")
report = store.import_split(data, "train", progress=False)
print("store:", report.added, "pairs added,", len(report.refused), "refused; databases:", len(store.keys()))
selector = ExampleSelector(store)
from text2sql_dspy.programs.db.source import open_source
shown = 0
dev = load_split(data, "dev")
for ex in dev:
    notes, demos = selector.shown(open_source(ex.db_path), ex.question)
    shown += len(demos) + len(notes)
print(f"{len(dev)} Spider dev questions: {shown} pairs or notes shown in all")
