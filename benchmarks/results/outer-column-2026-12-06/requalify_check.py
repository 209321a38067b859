#!/usr/bin/env python
"""The training readings the outer-column lint flags whose selected column is qualified with an enclosing alias while
exactly one table of the subquery has it: given to that table, how many become right (executed against gold)? A
repair measured, not built. No model calls. Run from the repository root:

    python benchmarks/results/outer-column-2026-12-06/requalify_check.py      # requalify-check.txt
"""
import gzip, json, glob, copy
import sqlglot
from sqlglot import exp
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.query.lints import Query, outer_column, sources, _enclosing
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.names import normalize_names
from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.query.results import Scoring

def repaired(sql, cat):
    tree = sqlglot.parse_one(sql, read="sqlite")
    changed = False
    for select in tree.find_all(exp.Select):
        if not _enclosing(select) or isinstance(select.parent, exp.Exists): continue
        own = sources(select, cat)
        for projected in select.expressions:
            col = projected.unalias()
            if not isinstance(col, exp.Column) or not col.table or col.table.lower() in own: continue
            owners = [a for a, s in own.items() if s.table.column(col.name)]
            if len(owners) == 1:
                col.set("table", exp.to_identifier(owners[0])); changed = True
    return tree.sql(dialect="sqlite") if changed else None

cats = {}; seen = set(); n = fixable = right_before = right_after = 0
for f in sorted(glob.glob("benchmarks/results/verifier-data-*/*.jsonl.gz")):
    for line in gzip.open(f, "rt"):
        r = json.loads(line); db = r["db_id"]
        if db not in cats: cats[db] = open_source(f"../shared/benchmarks/spider-train/database/{db}/{db}.sqlite").catalog
        for reading, ok in zip(r["answer"].get("readings") or [], r.get("readings_correct") or []):
            key = (db, r["question"], reading["sql"])
            if key in seen: continue
            seen.add(key)
            sql = reading["sql"]
            try:
                if not outer_column(Query(normalize_names(sqlglot.parse_one(sql, read="sqlite")), sql, cats[db], CatalogSchema(cats[db]))): continue
            except Exception: continue
            n += 1
            new = repaired(sql, cats[db])
            if new is None: continue
            fixable += 1; right_before += bool(ok)
            good = compare_execution(new, r["gold"], f"../shared/benchmarks/spider-train/database/{db}/{db}.sqlite", Scoring.SPIDER).match
            right_after += good
            print(ok, good, new[:170])
print(f"flagged {n}, requalifiable {fixable}: right as drafted {right_before}, requalified {right_after}")
