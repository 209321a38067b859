"""How well the value lookup finds the literals gold queries compare with, and what it costs (no model).

    python benchmarks/bench_values.py ../shared/benchmarks/bird-public --split dev
    python benchmarks/bench_values.py ../shared/benchmarks/spider-public --split dev
    python benchmarks/bench_values.py ../shared/benchmarks/sparc-public --databases ../shared/benchmarks/spider-public
    python benchmarks/bench_values.py --big-table 1000000      # index build time on a generated 1M-row table

For every gold query, each ``column = 'text'`` / ``IN`` / ``LIKE`` literal (no wildcard) that the database
holds is a target. Recall: the share of targets the prompt shows for the question: the lookup's lines (the
value itself, in that column), or the schema text the program shows, which quotes it (in any column). As
the program does, the lookup reads only the tables shown (keyword retrieval where the schema is over budget)
and takes no one-word phrase that the schema itself uses (``--plain``: the lookup before that rule and the one on
numbers). Noise: lines that name no target's column. Also: characters added, lookup
time, build time.
``--rule`` compares the column rules: ``chess`` (the shipped one: text, not an id or key; a name column, short
text, or < 100 distinct values) and ``dataherald`` (text columns with 2-99 distinct values).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import sqlglot
from sqlglot.optimizer.scope import traverse_scope

from text2sql_dspy.programs.catalog import values as values_module
from text2sql_dspy.programs.catalog.values import FEW_DISTINCT, build_value_index, render_matches, schema_words
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.retrieval.schema_view import schema_view
from text2sql_dspy.programs.source import open_source


def gold_literals(sql: str, catalog) -> list[tuple[str, str, str]]:
    """(table, column, literal) for each text literal a gold query compares a column with."""
    from text2sql_dspy.programs.query.literals import _compared, _stored_table

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
        found = []
        for scope in traverse_scope(tree):
            for column, literal, _ in _compared(scope):
                table = _stored_table(column, scope, catalog)
                if table is not None:
                    found.append((table, catalog.table(table).column(column.name).name, literal))
        return found
    except (sqlglot.errors.SqlglotError, RecursionError):
        return []


def dataherald_keeps(values: list[str], column) -> bool:
    return 2 <= len(values) < FEW_DISTINCT


def measure(data: str, split: str, rule: str, plain: bool = False, databases: str | None = None) -> dict:
    if rule == "dataherald":
        values_module.keeps = dataherald_keeps
    examples = load_split(data, split, databases=databases)
    targets = shown = in_schema = by_lookups = 0
    columns, noise, chars, lookup_ms, builds = [], [], [], [], {}
    for example in examples:
        source = open_source(example.db_path)
        if example.db_path not in builds:
            start = time.perf_counter()
            builds[example.db_path] = (build_value_index(source.database, source.catalog, progress=False),
                                       time.perf_counter() - start)
        index = builds[example.db_path][0]
        view = schema_view(source, example.question, retrieval_type="keyword")
        start = time.perf_counter()
        if plain:
            matches = index.lookup(example.question, tables=view.tables)
        else:
            matches = index.lookup(example.question, tables=view.tables, names=schema_words(source.catalog))
        lookup_ms.append(1000 * (time.perf_counter() - start))
        columns.append(len(matches))
        chars.append(len(render_matches(matches)))
        gold = [(t, c, v) for t, c, v in gold_literals(example.gold_sql, source.catalog) if index.holds(t, c, v)]
        noise.append(sum(not any(m.table == t and m.column == c for t, c, _ in gold) for m in matches))
        for table, column, literal in gold:  # a literal the data does not hold (or not indexed) is no target
            targets += 1
            by_lookup = any(m.table == table and m.column == column and literal in m.shown for m in matches)
            by_schema = f"'{literal}'" in view.text
            shown += by_lookup or by_schema
            in_schema += by_schema
            by_lookups += by_lookup
    return {
        "data": f"{data} ({split}, {len(examples)} questions)", "rule": rule,
        "gold literals held by an indexed column": targets,
        "shown by the lookup or the schema": shown, "quoted by the schema": in_schema,
        "shown by the lookup": by_lookups, "lookup recall": round(by_lookups / targets, 3) if targets else None,
        "recall": round(shown / targets, 3) if targets else None,
        "lookup": "plain" if plain else "shipped",
        "columns shown per question (mean)": round(statistics.mean(columns), 2),
        "columns naming no target, per question (mean)": round(statistics.mean(noise), 2),
        "characters added per question (median)": statistics.median(chars),
        "lookup ms (median / max)": (round(statistics.median(lookup_ms), 1), round(max(lookup_ms), 1)),
        "build s per database (max)": round(max(t for _, t in builds.values()), 2),
        "values indexed (total)": sum(sum(len(c.values) for c in ix.columns) for ix, _ in builds.values()),
    }


def big_table(rows: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE crime (id INTEGER PRIMARY KEY, lsoa TEXT, crime_type TEXT, outcome TEXT, note TEXT)")
        conn.executemany("INSERT INTO crime (lsoa, crime_type, outcome, note) VALUES (?, ?, ?, ?)", (
            (f"Area {i % 3000:04d}{'ABCD'[i % 4]}", f"type {i % 14}", f"outcome {i % 9}", f"free text note number {i}")
            for i in range(rows)))
        conn.commit()
        conn.close()
        source = open_source(path)
        start = time.perf_counter()
        index = build_value_index(source.database, source.catalog, progress=True)
        return {"rows": rows, "build s": round(time.perf_counter() - start, 2),
                "columns": {f"{c.table}.{c.column}": (len(c.values), c.complete) for c in index.columns}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--databases", help="the folder of the SQLite files, where DATA holds only questions (SParC)")
    parser.add_argument("--rule", action="append", choices=["chess", "dataherald"])
    parser.add_argument("--big-table", type=int)
    parser.add_argument("--plain", action="store_true", help="the lookup without the rules on schema words "
                        "and numbers")
    args = parser.parse_args()
    if args.big_table:
        print(json.dumps(big_table(args.big_table), indent=1))
    for rule in args.rule or (["chess"] if not args.data else ["chess", "dataherald"]):
        if args.data:
            print(json.dumps(measure(args.data, args.split, rule, args.plain, args.databases), indent=1))


if __name__ == "__main__":
    main()
