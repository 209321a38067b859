"""A large-schema benchmark anyone can rebuild: Spider dev questions over one database of 300+ tables.

The chosen Spider dev databases and enough Spider train databases (distractors, whole databases) to reach
``--min-tables`` tables are copied into one SQLite file, every table renamed ``<db>__<table>``, its columns,
keys, unique constraints, indexes and rows kept, its foreign keys pointed at the new names. Each dev question's
gold SQL is rewritten with sqlglot to the new names (``FROM singer`` -> ``FROM concert_singer__singer AS singer``
where the query qualifies columns with ``singer.``), then checked: on ``merged.sqlite`` it must return the rows
the original returns on its own database, else the script exits 1.

Written into ``--out``: ``database/merged/merged.sqlite``; ``dev.json`` (Spider's format, ``db_id`` "merged");
``own.json`` (the same questions, in the same order, with their own ``db_id`` and original gold SQL, for the
comparison run); ``merge.json`` (the settings and the databases chosen). No ``tables.json``: the evaluator reads
the schema from the SQLite file.

    python benchmarks/merge_schemas.py --out runs/merged [--spider ../shared/benchmarks/spider-public]
        [--train ../shared/benchmarks/spider-train] [--databases N] [--questions-per-db K] [--min-tables 300] [--seed 0]
    text2sql evaluate --data runs/merged --split dev --program v2 --out runs/merged-eval
    text2sql evaluate --data runs/merged --split own --databases ../shared/benchmarks/spider-public \\
        --program v2 --out runs/own-eval

The data is Spider 1.0 (Yu et al., EMNLP 2018, Yale LILY), CC BY-SA 4.0: keep the attribution with the output.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
from collections import defaultdict
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from text2sql_dspy.programs.db.database import QueryResult  # noqa: E402
from text2sql_dspy.programs.query.rename import NAMESPACE_SEPARATOR, cte_names, rename_tables  # noqa: E402
from text2sql_dspy.programs.query.results import is_ordered, results_match  # noqa: E402

MERGED_DB_ID = "merged"
USER_TABLES = "FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"


# ---------------------------------------------------------------------------------------------------------------
# Gold SQL rewriting: pure functions over sqlglot's AST.


def merged_name(db_id: str, table: str) -> str:
    """A table's name in the merged database: its database's name, ``__``, its own name (case kept)."""
    return f"{db_id}{NAMESPACE_SEPARATOR}{table}"


def name_map(db_id: str, tables: list[str]) -> dict[str, str]:
    """Each of ``db_id``'s tables, keyed by its lower-cased name (SQLite's names ignore ASCII case), to its merged
    name. Raises ``ValueError`` when two tables differ only in case."""
    names: dict[str, str] = {}
    for table in tables:
        key = table.lower()
        if key in names:
            raise ValueError(f"{db_id}: tables {names[key]!r} and {merged_name(db_id, table)!r} differ only in case")
        names[key] = merged_name(db_id, table)
    return names


def rewrite_gold(sql: str, names: dict[str, str]) -> str:
    """``sql`` (SQLite) with its tables renamed by :func:`rename_tables`, written back as SQLite.
    Raises sqlglot's ``ParseError`` when ``sql`` does not parse."""
    return rename_tables(sqlglot.parse_one(sql, read="sqlite"), names).sql(dialect="sqlite")


def tables_used(sql: str) -> set[str]:
    """The lower-cased names of the stored tables a query reads (``WITH`` names left out)."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    local = cte_names(tree)
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in local}


# ---------------------------------------------------------------------------------------------------------------
# Schemas: read with PRAGMAs, written back as DDL under the new names.


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str  # as declared, kept verbatim so that SQLite gives the copy the same affinity
    notnull: bool
    default: str | None
    pk: int  # position in the primary key, 0 when not in it


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    table: str  # the referenced table, as the declaration spells it
    to: tuple[str | None, ...]  # None: the referenced table's primary key
    on_update: str
    on_delete: str


@dataclass(frozen=True)
class Index:
    name: str
    unique: bool
    columns: tuple[str, ...]  # each already written as DDL: quoted name, COLLATE, DESC


@dataclass(frozen=True)
class TableInfo:
    name: str
    columns: tuple[ColumnInfo, ...]
    foreign_keys: tuple[ForeignKey, ...]
    uniques: tuple[tuple[str, ...], ...]  # UNIQUE constraints
    indexes: tuple[Index, ...]  # CREATE INDEX statements
    rows: int


def quote(name: str) -> str:
    """``name`` as a double-quoted SQLite identifier."""
    return '"' + name.replace('"', '""') + '"'


def read_tables(conn: sqlite3.Connection) -> list[TableInfo]:
    """Every user table of ``conn`` (SQLite's own ``sqlite_*`` tables left out), in the order they were made."""
    names = [n for (n,) in conn.execute(f"SELECT name {USER_TABLES} ORDER BY rowid")]
    return [_read_table(conn, name) for name in names]


def _read_table(conn: sqlite3.Connection, name: str) -> TableInfo:
    q = quote(name)
    columns = tuple(ColumnInfo(c[1], c[2] or "", bool(c[3]), c[4], c[5])
                    for c in conn.execute(f"PRAGMA table_info({q})"))
    grouped: dict[int, list[tuple]] = defaultdict(list)
    for row in conn.execute(f"PRAGMA foreign_key_list({q})"):  # id, seq, table, from, to, on_update, on_delete, match
        grouped[row[0]].append(row)
    fks = tuple(
        ForeignKey(tuple(r[3] for r in rows), rows[0][2], tuple(r[4] for r in rows), rows[0][5], rows[0][6])
        for _, rows in sorted(grouped.items(), key=lambda item: item[0], reverse=True)  # declaration order
    )
    uniques, indexes = [], []
    for _, index, unique, origin, partial in conn.execute(f"PRAGMA index_list({q})"):
        # seqno, cid, name, desc, coll, key: the key columns only
        keys = [r for r in conn.execute(f"PRAGMA index_xinfo({quote(index)})") if r[5]]
        if any(r[1] < 0 for r in keys) or partial:
            raise ValueError(f"table {name!r}: index {index!r} is partial or on an expression, which is not copied")
        if origin == "u":
            uniques.append(tuple(r[2] for r in keys))
        elif origin == "c":
            indexes.append(Index(index, bool(unique), tuple(_index_key(r) for r in keys)))
    (rows,) = conn.execute(f"SELECT count(*) FROM {q}").fetchone()
    return TableInfo(name, columns, fks, tuple(reversed(uniques)), tuple(reversed(indexes)), rows)


def _index_key(row: tuple) -> str:
    _, _, column, desc, collation, _ = row
    key = quote(column)
    if collation and collation.upper() != "BINARY":
        key += f" COLLATE {collation}"
    return key + (" DESC" if desc else "")


def resolve_foreign_key(fk: ForeignKey, names: dict[str, str], columns: dict[str, set[str]]) -> ForeignKey | None:
    """``fk`` pointed at the referenced table's merged name, or None when it dangles: the table is not in
    ``names`` (lower-cased name -> merged name) or a referenced column is not in ``columns`` (merged name ->
    its lower-cased column names)."""
    target = names.get(fk.table.lower())
    if target is None or any(c is not None and c.lower() not in columns[target] for c in fk.to):
        return None
    return ForeignKey(fk.columns, target, fk.to, fk.on_update, fk.on_delete)


def create_table_sql(table: TableInfo, new_name: str, foreign_keys: tuple[ForeignKey, ...]) -> str:
    """``CREATE TABLE`` for ``table`` under ``new_name``: its columns (declared types, NOT NULL, DEFAULT), primary
    key, UNIQUE constraints and ``foreign_keys`` (already resolved to merged names). A one-column INTEGER primary
    key stays an alias of the rowid, as SQLite makes it in either form."""
    parts = []
    for column in table.columns:
        part = f"{quote(column.name)} {column.type}".rstrip()
        if column.notnull:
            part += " NOT NULL"
        if column.default is not None:
            part += f" DEFAULT ({column.default})"
        parts.append(part)
    pk = [c.name for c in sorted(table.columns, key=lambda c: c.pk) if c.pk]
    if pk:
        parts.append(f"PRIMARY KEY ({', '.join(map(quote, pk))})")
    parts += [f"UNIQUE ({', '.join(map(quote, cols))})" for cols in table.uniques]
    for fk in foreign_keys:
        to = "" if any(c is None for c in fk.to) else f" ({', '.join(map(quote, fk.to))})"
        clause = f"FOREIGN KEY ({', '.join(map(quote, fk.columns))}) REFERENCES {quote(fk.table)}{to}"
        for event, action in (("UPDATE", fk.on_update), ("DELETE", fk.on_delete)):
            if action and action.upper() != "NO ACTION":
                clause += f" ON {event} {action}"
        parts.append(clause)
    return f"CREATE TABLE {quote(new_name)} (\n  " + ",\n  ".join(parts) + "\n)"


def create_index_sql(index: Index, db_id: str, new_table: str) -> str:
    """``CREATE INDEX`` for ``index`` on ``new_table``, its name prefixed like a table's (index names are global)."""
    unique = "UNIQUE " if index.unique else ""
    name = quote(merged_name(db_id, index.name))
    return f"CREATE {unique}INDEX {name} ON {quote(new_table)} ({', '.join(index.columns)})"


def rowid_name(table: TableInfo) -> str:
    """A name of the table's rowid that no column of it takes (the copy keeps the rows in rowid order)."""
    taken = {c.name.lower() for c in table.columns}
    return next(n for n in ("rowid", "_rowid_", "oid") if n not in taken)


# ---------------------------------------------------------------------------------------------------------------
# Choosing the questions and the databases: seeded, deterministic.


def choose_questions(records: list[dict], databases: int | None, per_db: int | None, seed: int) -> list[dict]:
    """The records of ``databases`` seeded-chosen databases (all when None), at most ``per_db`` seeded-chosen
    records of each (all when None), in the records' own order."""
    by_db: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        by_db[record["db_id"]].append(i)
    db_ids = sorted(by_db)
    if databases is not None:
        if databases > len(db_ids):
            raise ValueError(f"--databases {databases}: the questions cover only {len(db_ids)} databases")
        db_ids = sorted(random.Random(seed).sample(db_ids, databases))
    keep: set[int] = set()
    for db_id in db_ids:
        indices = by_db[db_id]
        if per_db is not None and per_db < len(indices):
            indices = random.Random(f"{seed}:{db_id}").sample(indices, per_db)
        keep.update(indices)
    return [records[i] for i in sorted(keep)]


def choose_distractors(table_counts: dict[str, int], have: int, min_tables: int, seed: int,
                       exclude: set[str]) -> list[str]:
    """Whole databases from ``table_counts`` (db_id -> its number of tables), in a seeded order, until ``have``
    tables plus theirs reach ``min_tables``; none whose name, lower-cased, is in ``exclude``. Raises
    ``ValueError`` when all of them are not enough."""
    pool = sorted(db for db in table_counts if db.lower() not in exclude)
    random.Random(seed).shuffle(pool)
    chosen = []
    for db_id in pool:
        if have >= min_tables:
            break
        chosen.append(db_id)
        have += table_counts[db_id]
    if have < min_tables:
        raise ValueError(f"only {have} tables in all, fewer than --min-tables {min_tables}")
    return sorted(chosen)


# ---------------------------------------------------------------------------------------------------------------
# Building the merged database.


@dataclass
class Merged:
    names: dict[str, dict[str, str]]  # db_id -> lower-cased table name -> merged name
    tables: int
    rows: int
    foreign_keys: int
    dangling: list[str]  # foreign keys dropped because they point at no table or column of their database


def sqlite_uri(path: Path, mode: str) -> str:
    """A ``file:`` URI for ``path`` (any characters in it escaped), opened in ``mode`` (``ro``, ``rwc``)."""
    return f"{path.resolve().as_uri()}?mode={mode}"


def open_read_only(path: Path) -> closing[sqlite3.Connection]:
    """A read-only connection to ``path``, for a ``with`` block that closes it."""
    return closing(sqlite3.connect(sqlite_uri(path, "ro"), uri=True))


TABLE_ORDERS = ("name", "stored")


def merge(sources: dict[str, Path], target: Path, table_order: str = "name") -> Merged:
    """Copy every table of ``sources`` (db_id -> SQLite file) into a new SQLite file ``target``, renamed
    ``<db>__<table>``, rows in rowid order. Tables are created in the order of their merged names (case ignored)
    with ``table_order="name"``, or database by database (by name), each in its own order, with ``"stored"``, so
    that a database's tables are read back in the order it shows them alone. Foreign keys are rewritten to the
    merged names; those that dangle are dropped and listed. Raises ``ValueError`` when two merged names differ
    only in case."""
    if table_order not in TABLE_ORDERS:
        raise ValueError(f"table_order must be one of {TABLE_ORDERS}, got {table_order!r}")
    schemas: dict[str, list[TableInfo]] = {}
    for db_id, path in sources.items():
        with open_read_only(path) as conn:
            schemas[db_id] = read_tables(conn)
    names = {db_id: name_map(db_id, [t.name for t in tables]) for db_id, tables in schemas.items()}
    everything = [(merged, db_id, t) for db_id, tables in schemas.items() for t in tables
                  for merged in [names[db_id][t.name.lower()]]]
    by_name = sorted(everything, key=lambda item: (item[0].lower(), item[0]))
    for before, after in zip(by_name, by_name[1:]):
        if before[0].lower() == after[0].lower():
            raise ValueError(f"merged table names {before[0]!r} and {after[0]!r} differ only in case")
    everything = by_name if table_order == "name" else sorted(everything, key=lambda item: item[1].lower())
    columns = {merged: {c.name.lower() for c in t.columns} for merged, _, t in everything}
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(sqlite_uri(partial, "rwc"), uri=True)
    kept, dangling, rows = 0, [], 0
    try:
        for merged, db_id, table in everything:
            fks = []
            for fk in table.foreign_keys:
                resolved = resolve_foreign_key(fk, names[db_id], columns)
                if resolved is None:
                    dangling.append(f"{db_id}.{table.name}({', '.join(fk.columns)}) -> "
                                    f"{fk.table}({', '.join(map(str, fk.to))})")
                else:
                    fks.append(resolved)
            kept += len(fks)
            conn.execute(create_table_sql(table, merged, tuple(fks)))
        for db_id, path in sources.items():
            conn.execute("ATTACH DATABASE ? AS src", (sqlite_uri(path, "ro"),))
            for table in schemas[db_id]:
                merged, cols = names[db_id][table.name.lower()], ", ".join(quote(c.name) for c in table.columns)
                copied = conn.execute(f"INSERT INTO main.{quote(merged)} ({cols}) SELECT {cols} "
                                      f"FROM src.{quote(table.name)} ORDER BY {rowid_name(table)}").rowcount
                if copied != table.rows:
                    raise RuntimeError(f"{db_id}.{table.name}: copied {copied} of its {table.rows} rows")
                rows += copied
                for index in table.indexes:
                    conn.execute(create_index_sql(index, db_id, merged))
            conn.commit()
            conn.execute("DETACH DATABASE src")
        conn.commit()
    finally:
        conn.close()
    partial.replace(target)
    return Merged(names, len(everything), rows, kept, dangling)


# ---------------------------------------------------------------------------------------------------------------
# Checking the rewritten gold.


def run_query(conn: sqlite3.Connection, sql: str) -> QueryResult:
    try:
        cursor = conn.execute(sql)
        return QueryResult(columns=[d[0] for d in cursor.description or []], rows=cursor.fetchall())
    except sqlite3.Error as exc:
        return QueryResult(error=str(exc))


def same_answer(original: QueryResult, rewritten: QueryResult, sql: str) -> bool:
    """Whether the rewritten gold answers as the original: both fail, or both give the same rows (in order when
    the original orders them), as the evaluator compares them."""
    if not original.ok or not rewritten.ok:
        return not original.ok and not rewritten.ok
    same_width = len(rewritten.columns) == len(original.columns)  # results_match cannot tell for empty results
    return same_width and results_match(rewritten, original, ordered=is_ordered(sql))


def share_figures(used: list[int], total: int) -> str:
    """One line on how many of the ``total`` tables each question's gold reads."""
    return (f"tables each gold query reads: mean {statistics.mean(used):.2f}, median {statistics.median(used):g}, "
            f"max {max(used)} of {total} (mean {100 * statistics.mean(used) / total:.2f}%, "
            f"max {100 * max(used) / total:.2f}% of the tables)")


# ---------------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spider", default=str(REPO.parent / "shared/benchmarks/spider-public"),
                        help="Spider-format folder with dev.json and the dev databases")
    parser.add_argument("--train", default=str(REPO.parent / "shared/benchmarks/spider-train"),
                        help="Spider-format folder whose databases are the distractors")
    parser.add_argument("--split", default="dev", help="the questions: <spider>/<split>.json (default: dev)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--databases", type=int,
                        help="how many of the split's databases to take questions from, seeded (default: all)")
    parser.add_argument("--questions-per-db", type=int, help="at most this many questions of each (default: all)")
    parser.add_argument("--min-tables", type=int, default=300, help="add distractor databases until this many tables")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table-order", choices=TABLE_ORDERS, default="name",
                        help="create the tables in the order of their merged names, or database by database in "
                             "each one's own order (default: name)")
    args = parser.parse_args(argv)
    spider, train, out = Path(args.spider), Path(args.train), Path(args.out)

    records = json.loads((spider / f"{args.split}.json").read_text(encoding="utf-8"))
    try:
        questions = choose_questions(records, args.databases, args.questions_per_db, args.seed)
    except ValueError as exc:
        parser.error(str(exc))
    dev_dbs = sorted({r["db_id"] for r in questions})
    sources = {db: spider / "database" / db / f"{db}.sqlite" for db in dev_dbs}
    dev_tables = 0
    for path in sources.values():
        with open_read_only(path) as conn:
            dev_tables += len(read_tables(conn))
    train_dbs = sorted(p.name for p in (train / "database").iterdir() if (p / f"{p.name}.sqlite").is_file())
    counts = {}
    for db in train_dbs:
        with open_read_only(train / "database" / db / f"{db}.sqlite") as conn:
            (counts[db],) = conn.execute(f"SELECT count(*) {USER_TABLES}").fetchone()
    try:
        distractors = choose_distractors(counts, dev_tables, args.min_tables, args.seed, {d.lower() for d in dev_dbs})
    except ValueError as exc:
        parser.error(str(exc))
    sources |= {db: train / "database" / db / f"{db}.sqlite" for db in distractors}

    target = out / "database" / MERGED_DB_ID / f"{MERGED_DB_ID}.sqlite"
    merged = merge(sources, target, args.table_order)
    print(f"merged {len(dev_dbs)} dev databases ({dev_tables} tables) and {len(distractors)} distractor databases: "
          f"{merged.tables} tables, {merged.rows} rows, {merged.foreign_keys} foreign keys kept, "
          f"{len(merged.dangling)} dangling ones dropped -> {target}")
    for line in merged.dangling:
        print(f"  dropped foreign key {line}")

    rewritten, used, mismatches, both_fail = [], [], [], 0
    with open_read_only(target) as merged_conn:
        own = {db: sqlite3.connect(sqlite_uri(sources[db], "ro"), uri=True) for db in dev_dbs}
        try:
            for record in questions:
                sql = rewrite_gold(record["query"], merged.names[record["db_id"]])
                rewritten.append(sql)
                used.append(len(tables_used(sql)))
                original, new = run_query(own[record["db_id"]], record["query"]), run_query(merged_conn, sql)
                if not same_answer(original, new, record["query"]):
                    mismatches.append((record, sql, original, new))
                both_fail += not original.ok and not new.ok
        finally:
            for conn in own.values():
                conn.close()

    (out / f"{args.split}.json").write_text(json.dumps(
        [{"db_id": MERGED_DB_ID, "question": r["question"], "query": sql} for r, sql in zip(questions, rewritten)],
        indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "own.json").write_text(json.dumps(
        [{"db_id": r["db_id"], "question": r["question"], "query": r["query"]} for r in questions],
        indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "merge.json").write_text(json.dumps({
        "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
        "dev_databases": dev_dbs, "distractor_databases": distractors, "tables": merged.tables, "rows": merged.rows,
        "questions": len(questions), "dropped_foreign_keys": merged.dangling,
        "source": "Spider 1.0 (Yu et al., EMNLP 2018, Yale LILY), CC BY-SA 4.0",
    }, indent=1) + "\n", encoding="utf-8")

    matched = len(questions) - len(mismatches)
    shown = ", ".join(dev_dbs) if len(dev_dbs) <= 10 else f"{len(dev_dbs)} databases"
    print(f"questions: {len(questions)} from {shown}")
    print(f"rewritten gold returns the original's rows: {matched}/{len(questions)}"
          + (f" ({both_fail} fail on both)" if both_fail else ""))
    print(share_figures(used, merged.tables))
    print(f"wrote {out / (args.split + '.json')}, {out / 'own.json'}, {out / 'merge.json'}")
    for record, sql, original, new in mismatches:
        print(f"MISMATCH [{record['db_id']}] {record['query']}\n  rewritten: {sql}\n  original: "
              f"{original.error or original.rows[:5]}\n  merged:   {new.error or new.rows[:5]}", file=sys.stderr)
    if mismatches:
        print(f"FAILED: {len(mismatches)} rewritten gold queries differ from the originals", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
