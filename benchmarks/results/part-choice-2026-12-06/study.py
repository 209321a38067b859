#!/usr/bin/env python
"""Which part of a merged schema to show, retrieval only (no model calls): the part of the blend's top hit (as the
program does, `schema_view.one_part`), the part whose tables score most among the top N, or the part of a table
storing a value the question names (a lookup match scoring at least T). Scored by whether every gold table is among
the tables the view renders.

    python benchmarks/merge_schemas.py --spider ../shared/benchmarks/spider-train --split train --databases 30 \
        --questions-per-db 8 --min-tables 300 --table-order stored --seed S --out OUT/trS/data     # S = 1, 2, 3
    python benchmarks/results/part-choice-2026-12-06/study.py OUT/tr1/data OUT/tr2/data OUT/tr3/data
"""

from __future__ import annotations

import collections
import json
import sys

import sqlglot
from sqlglot import exp

from text2sql_dspy.programs.catalog.values import schema_words, value_index
from text2sql_dspy.programs.retrieval.retriever import RetrievedTable, make_retriever
from text2sql_dspy.programs.retrieval.schema_view import one_part
from text2sql_dspy.programs.source import open_source

DEPTHS = (3, 5, 8, 12)
VALUE_SCORES = (3.0, 4.0, 5.0)  # lookup scores: 3 a one-word value named exactly, 4 a two-word one


def gold_tables(sql: str) -> set[str]:
    return {t.name.lower() for t in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Table)}


def led_by(hits: list[RetrievedTable], first: RetrievedTable | None) -> list[RetrievedTable]:
    return hits if first is None else [first] + [h for h in hits if h.name != first.name]


def summed(catalog, hits, scores, depth):
    """The best hit of the part whose tables score most among the top ``depth``."""
    parts = catalog.parts()
    group = lambda name: parts.get(name.lower(), "alone:" + name.lower())  # noqa: E731
    total = collections.defaultdict(float)
    for name in sorted(scores, key=lambda n: -scores[n])[:depth]:
        total[group(name)] += scores[name]
    best = max(total, key=total.get)
    return next((h for h in hits if group(h.name) == best), None)


def valued(catalog, hits, matches, at_least):
    """The best hit of the part of the best value match scoring ``at_least``, where the top hit's part holds none."""
    parts = catalog.parts()
    group = lambda name: parts.get(name.lower(), "alone:" + name.lower())  # noqa: E731
    strong = [m for m in matches if m.score >= at_least]
    if not strong or group(hits[0].name) in {group(m.table) for m in strong}:
        return None
    return next((h for h in hits if group(h.name) == group(strong[0].table)),
                RetrievedTable(catalog.table(strong[0].table).name, 1.0))


def main() -> None:
    for data in sys.argv[1:]:
        questions = json.load(open(f"{data}/train.json", encoding="utf-8"))
        source = open_source(f"{data}/database/merged/merged.sqlite")
        catalog, retriever = source.catalog, make_retriever(source.catalog, "semantic")
        index, names = value_index(source, progress=False), schema_words(source.catalog)
        shown, top_ok = collections.Counter(), 0
        for q in questions:
            gold, hits, scores = gold_tables(q["query"]), retriever.search(q["question"], 5), retriever.scores(q["question"])
            base = gold <= one_part(catalog, hits)[0]
            top_ok += base
            arms = {f"sum of top {d}": summed(catalog, hits, scores, d) for d in DEPTHS}
            matches = index.lookup(q["question"], names=names)
            arms |= {f"value scoring {t:g}+": valued(catalog, hits, matches, t) for t in VALUE_SCORES}
            for arm, first in arms.items():
                ok = gold <= one_part(catalog, led_by(hits, first))[0]
                shown[arm, "right"] += ok
                shown[arm, "gained"] += ok and not base
                shown[arm, "lost"] += base and not ok
        print(f"{data}: {len(questions)} questions; the top hit's part shows every gold table for {top_ok}")
        for arm in dict.fromkeys(a for a, _ in shown):
            print(f"  {arm}: {shown[arm, 'right']} ({shown[arm, 'gained']} gained, {shown[arm, 'lost']} lost)")


if __name__ == "__main__":
    main()
