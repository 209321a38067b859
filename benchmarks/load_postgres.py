"""Serve a Spider-format benchmark from PostgreSQL (or DuckDB), and prepare a fair comparison with SQLite.

For every ``db_id`` of the split, the SQLite database is copied into ``--url`` (``{db_id}`` in the URL is
replaced by each id: one PostgreSQL database, or one DuckDB file, per id; PostgreSQL databases must exist).
Then every gold query is transpiled with sqlglot (:func:`transpile_gold`) and run on both engines. A gold
query that cannot be transpiled, fails on the target, or returns other rows than on SQLite is listed and
left out of **both** sides. Two folders are written, holding the same filtered split::

    OUT/sqlite/   <split>.json + databases.json -> the original SQLite files
    OUT/target/   <split>.json + databases.json -> the URLs

and ``OUT/excluded.json``. Then ``python evaluate.py --data OUT/sqlite`` and ``--data OUT/target`` compare
like with like. Example (a throwaway server: ``python tests/postgres_server.py`` prints its socket)::

    python benchmarks/load_postgres.py --data data --split test \\
        --url 'postgresql://postgres@/{db_id}?host=/tmp/t2s-pg-XXXX' --out runs/served
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from text2sql_dspy.programs.catalog.introspection import introspect  # noqa: E402
from text2sql_dspy.programs.dataset import database_target  # noqa: E402
from text2sql_dspy.programs.db.dialect import TranspileError, transpile_gold  # noqa: E402
from text2sql_dspy.programs.db.opening import open_database  # noqa: E402
from text2sql_dspy.programs.db.transfer import copy_sqlite_database  # noqa: E402
from text2sql_dspy.programs.query.results import is_ordered, results_match  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data"), help="Spider-format folder (default: the bundled data/)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--url", required=True, help="target URL, with {db_id} where each database's name goes")
    parser.add_argument("--reader-url",
                        help="URL the evaluation connects with (default: --url), e.g. a SELECT-only role")
    parser.add_argument("--out", required=True, help="folder for the two served copies of the split")
    parser.add_argument("--skip-load", action="store_true", help="the databases are loaded already")
    args = parser.parse_args(argv)
    logging.getLogger("sqlglot").setLevel(logging.ERROR)

    data, out = Path(args.data), Path(args.out)
    records = json.loads((data / f"{args.split}.json").read_text(encoding="utf-8"))
    db_ids = sorted({r["db_id"] for r in records})
    sqlite_paths = {db_id: database_target(data, db_id) for db_id in db_ids}
    load_urls = {db_id: args.url.replace("{db_id}", db_id) for db_id in db_ids}
    serve_urls = {db_id: (args.reader_url or args.url).replace("{db_id}", db_id) for db_id in db_ids}
    if not args.skip_load:
        for db_id in db_ids:
            tables = copy_sqlite_database(sqlite_paths[db_id], load_urls[db_id])
            print(f"loaded {db_id}: {len(tables)} tables")

    kept, excluded = [], []
    engines = {db_id: (open_database(sqlite_paths[db_id]), open_database(serve_urls[db_id])) for db_id in db_ids}
    columns = {db_id: [c.name for t in introspect(engines[db_id][1]).tables for c in t.columns] for db_id in db_ids}
    for index, record in enumerate(records):
        sqlite_db, target_db = engines[record["db_id"]]
        reason = _unfaithful(record["query"], sqlite_db, target_db, columns[record["db_id"]])
        if reason:
            excluded.append({"index": index, "db_id": record["db_id"], "query": record["query"], "reason": reason})
        else:
            kept.append(record)
    for name, mapping in (("sqlite", sqlite_paths), ("target", serve_urls)):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{args.split}.json").write_text(json.dumps(kept, indent=1), encoding="utf-8")
        (folder / "databases.json").write_text(json.dumps(mapping, indent=1), encoding="utf-8")
    (out / "excluded.json").write_text(json.dumps(excluded, indent=1), encoding="utf-8")
    print(f"{len(kept)} of {len(records)} gold queries run alike on both engines; "
          f"{len(excluded)} left out of both sides:")
    for item in excluded:
        print(f"  #{item['index']} [{item['db_id']}] {item['reason']}: {item['query'][:100]}")
    print(f"wrote {out / 'sqlite'}, {out / 'target'} and {out / 'excluded.json'}")
    return 0


def _unfaithful(gold: str, sqlite_db, target_db, column_names: list[str]) -> str | None:  # noqa: ANN001
    """Why ``gold`` cannot be compared on the target engine, or None."""
    try:
        translated = transpile_gold(gold, target_db.dialect, column_names)
    except TranspileError as exc:
        return f"not transpiled ({exc})"
    expected = sqlite_db.execute(gold, max_rows=100_000, timeout_s=30)
    got = target_db.execute(translated, max_rows=100_000, timeout_s=30)
    if not expected.ok:
        return f"fails on SQLite ({expected.error})"
    if not got.ok:
        return f"transpiled query fails ({got.error[:120]})"
    if not results_match(got, expected, ordered=is_ordered(gold)):
        return "transpiled query returns other rows"
    return None


if __name__ == "__main__":
    sys.exit(main())
