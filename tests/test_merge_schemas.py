"""The large-schema benchmark (benchmarks/merge_schemas.py): gold SQL rewritten to ``<db>__<table>`` names, and
databases merged into one SQLite file with their keys, indexes and rows."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.fakes import sqlite_file
from tests.scripts import script
from text2sql_dspy.programs.db.database import QueryResult
from text2sql_dspy.programs.query.results import results_match

merge_schemas = script("benchmarks/merge_schemas.py")

NAMES = {
    "singer": "cs__singer", "concert": "cs__concert", "name": "cs__name", "my table": "cs__my table",
    "order": "cs__order",
}


@pytest.mark.parametrize(("sql", "expected"), [
    # aliased tables keep their aliases
    ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id",
     "SELECT T1.name FROM cs__singer AS T1 JOIN cs__concert AS T2 ON T1.id = T2.singer_id"),
    ("SELECT t.name FROM singer t", "SELECT t.name FROM cs__singer AS t"),
    # unqualified columns: no alias needed
    ("SELECT count(*) FROM singer", "SELECT COUNT(*) FROM cs__singer"),
    # columns qualified by the table's own name: the old name becomes the alias
    ("SELECT singer.name FROM singer", "SELECT singer.name FROM cs__singer AS singer"),
    ("SELECT singer.* FROM singer JOIN concert ON singer.id = concert.singer_id",
     "SELECT singer.* FROM cs__singer AS singer JOIN cs__concert AS concert ON singer.id = concert.singer_id"),
    ("SELECT Singer.name FROM SINGER", "SELECT Singer.name FROM cs__singer AS SINGER"),  # names ignore case
    ("SELECT singer.name FROM singer JOIN concert AS c ON singer.id = c.singer_id",
     "SELECT singer.name FROM cs__singer AS singer JOIN cs__concert AS c ON singer.id = c.singer_id"),
    # subqueries: IN, correlated, derived tables
    ("SELECT name FROM singer WHERE id NOT IN (SELECT singer_id FROM concert)",
     "SELECT name FROM cs__singer WHERE NOT id IN (SELECT singer_id FROM cs__concert)"),
    ("SELECT name FROM singer WHERE EXISTS (SELECT 1 FROM concert WHERE concert.singer_id = singer.id)",
     "SELECT name FROM cs__singer AS singer WHERE EXISTS(SELECT 1 FROM cs__concert AS concert "
     "WHERE concert.singer_id = singer.id)"),
    ("SELECT t.n FROM (SELECT name AS n FROM singer) AS t", "SELECT t.n FROM (SELECT name AS n FROM cs__singer) AS t"),
    # set operations
    ("SELECT name FROM singer UNION SELECT name FROM concert",
     "SELECT name FROM cs__singer UNION SELECT name FROM cs__concert"),
    ("SELECT name FROM singer EXCEPT SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id",
     "SELECT name FROM cs__singer EXCEPT SELECT T1.name FROM cs__singer AS T1 JOIN cs__concert AS T2 "
     "ON T1.id = T2.singer_id"),
    ("SELECT singer.name FROM singer INTERSECT SELECT concert.name FROM concert",
     "SELECT singer.name FROM cs__singer AS singer INTERSECT SELECT concert.name FROM cs__concert AS concert"),
    # a table named like a column: the column keeps its name
    ("SELECT name FROM name WHERE name = 'x'", "SELECT name FROM cs__name WHERE name = 'x'"),
    ("SELECT name.name FROM name JOIN singer ON name.name = singer.name",
     "SELECT name.name FROM cs__name AS name JOIN cs__singer AS singer ON name.name = singer.name"),
    ("SELECT singer FROM concert", "SELECT singer FROM cs__concert"),
    # a double-quoted string equal to a table's name is not a table
    ('SELECT name FROM singer WHERE country = "singer"', 'SELECT name FROM cs__singer WHERE country = "singer"'),
    # odd names are quoted; keyword names prefixed need no quotes
    ('SELECT "my table".x FROM "my table"', 'SELECT "my table".x FROM "cs__my table" AS "my table"'),
    ('SELECT * FROM "order"', "SELECT * FROM cs__order"),
    # a WITH name, a schema-qualified table and an unknown table stay as they are
    ("WITH singer AS (SELECT 1 AS x) SELECT x FROM singer", "WITH singer AS (SELECT 1 AS x) SELECT x FROM singer"),
    ("SELECT * FROM main.singer", "SELECT * FROM main.singer"),
    ("SELECT * FROM other", "SELECT * FROM other"),
])
def test_rewrite_gold(sql: str, expected: str) -> None:
    assert merge_schemas.rewrite_gold(sql, NAMES) == expected


def test_rewrite_leaves_the_input_tree_alone() -> None:
    tree = merge_schemas.sqlglot.parse_one("SELECT singer.name FROM singer", read="sqlite")
    merge_schemas.rename_tables(tree, NAMES)
    assert tree.sql(dialect="sqlite") == "SELECT singer.name FROM singer"


def test_name_map_refuses_tables_that_differ_only_in_case() -> None:
    assert merge_schemas.name_map("db", ["Singer", "concert"]) == {"singer": "db__Singer", "concert": "db__concert"}
    with pytest.raises(ValueError, match="differ only in case"):
        merge_schemas.name_map("db", ["Singer", "SINGER"])


def test_dangling_foreign_keys_resolve_to_none() -> None:
    fk = merge_schemas.ForeignKey(("singer_id",), "Singer", ("ID",), "NO ACTION", "NO ACTION")
    columns = {"db__singer": {"id"}}
    resolved = merge_schemas.resolve_foreign_key(fk, {"singer": "db__singer"}, columns)
    assert resolved.table == "db__singer" and resolved.to == ("ID",)
    assert merge_schemas.resolve_foreign_key(fk, {"concert": "db__concert"}, columns) is None  # no such table
    assert merge_schemas.resolve_foreign_key(fk, {"singer": "db__singer"}, {"db__singer": {"x"}}) is None  # no column


def test_choices_are_seeded() -> None:
    records = [{"db_id": db, "question": f"{db} {i}", "query": "SELECT 1"} for db in "abc" for i in range(4)]
    picked = merge_schemas.choose_questions(records, 2, 3, seed=1)
    assert picked == merge_schemas.choose_questions(records, 2, 3, seed=1)
    assert len({r["db_id"] for r in picked}) == 2 and len(picked) == 6
    assert picked == [r for r in records if r in picked]  # the records' own order
    assert merge_schemas.choose_questions(records, None, None, seed=5) == records
    with pytest.raises(ValueError):
        merge_schemas.choose_questions(records, 4, None, seed=0)
    counts = {f"t{i}": 3 for i in range(10)} | {"A": 50}
    chosen = merge_schemas.choose_distractors(counts, have=5, min_tables=12, seed=2, exclude={"a"})
    assert chosen == merge_schemas.choose_distractors(counts, have=5, min_tables=12, seed=2, exclude={"a"})
    assert len(chosen) == 3 and "A" not in chosen
    with pytest.raises(ValueError):
        merge_schemas.choose_distractors(counts, have=5, min_tables=100, seed=2, exclude={"a"})


ALPHA = """
CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age int DEFAULT 30, UNIQUE (name));
CREATE TABLE concert (cid INTEGER, singer_id INTEGER, year TEXT, PRIMARY KEY (cid),
                      FOREIGN KEY (singer_id) REFERENCES Singer(id));
CREATE INDEX concert_year ON concert (year DESC);
INSERT INTO singer VALUES (1, 'Ann', 41), (2, 'Bo', 25), (3, 'Cy', 30);
INSERT INTO concert VALUES (10, 1, '2014'), (11, 1, '2015'), (12, 3, '2014');
"""
BETA = """
CREATE TABLE singer (code TEXT PRIMARY KEY, label TEXT);
CREATE TABLE "my table" (x int, code TEXT REFERENCES singer(code), ghost_id int REFERENCES ghost(id));
CREATE INDEX concert_year ON "my table" (x);
INSERT INTO singer VALUES ('a', 'one'), ('b', 'two');
INSERT INTO "my table" VALUES (1, 'a', 7), (2, 'b', 8), (3, 'a', 9), (3, NULL, NULL);
"""


def _rows(conn: sqlite3.Connection, sql: str) -> QueryResult:
    return QueryResult(rows=conn.execute(sql).fetchall())


@pytest.mark.parametrize(("order", "tables"), [
    ("name", ["alpha__concert", "alpha__singer", "beta__my table", "beta__singer"]),
    ("stored", ["alpha__singer", "alpha__concert", "beta__singer", "beta__my table"]),
])
def test_merge_creates_tables_in_the_order_asked(tmp_path: Path, order: str, tables: list[str]) -> None:
    alpha, beta = sqlite_file(tmp_path / "alpha.sqlite", ALPHA), sqlite_file(tmp_path / "beta.sqlite", BETA)
    target = tmp_path / "merged.sqlite"
    merge_schemas.merge({"alpha": alpha, "beta": beta}, target, table_order=order)
    with closing(sqlite3.connect(target)) as conn:
        made = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        assert [n for (n,) in made] == tables


def test_merge_two_databases(tmp_path: Path) -> None:
    alpha, beta = sqlite_file(tmp_path / "alpha.sqlite", ALPHA), sqlite_file(tmp_path / "beta.sqlite", BETA)
    target = tmp_path / "out" / "merged.sqlite"
    merged = merge_schemas.merge({"alpha": alpha, "beta": beta}, target)

    assert merged.tables == 4 and merged.rows == 3 + 3 + 2 + 4
    assert merged.foreign_keys == 2
    assert merged.dangling == ["beta.my table(ghost_id) -> ghost(id)"]
    assert merged.names["alpha"] == {"singer": "alpha__singer", "concert": "alpha__concert"}
    conn = sqlite3.connect(target)
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    assert tables == ["alpha__concert", "alpha__singer", "beta__my table", "beta__singer"]
    fks = {t: [(r[2], r[3], r[4]) for r in conn.execute(f'PRAGMA foreign_key_list("{t}")')] for t in tables}
    assert fks == {"alpha__concert": [("alpha__singer", "singer_id", "id")], "alpha__singer": [],
                   "beta__my table": [("beta__singer", "code", "code")], "beta__singer": []}
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute('SELECT * FROM "beta__my table"').fetchall() == [
        (1, "a", 7), (2, "b", 8), (3, "a", 9), (3, None, None)]
    assert conn.execute("SELECT * FROM alpha__singer").fetchall() == [(1, "Ann", 41), (2, "Bo", 25), (3, "Cy", 30)]
    indexes = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"))
    assert indexes == {"alpha__concert_year": "alpha__concert", "beta__concert_year": "beta__my table"}
    for db_id, path in (("alpha", alpha), ("beta", beta)):  # columns, types, NOT NULL, defaults, primary keys
        with closing(sqlite3.connect(path)) as own:
            for (table,) in own.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                assert (conn.execute(f'PRAGMA table_info("{db_id}__{table}")').fetchall()
                        == own.execute(f'PRAGMA table_info("{table}")').fetchall())
    assert conn.execute("PRAGMA table_info(alpha__singer)").fetchall()[2] == (2, "age", "INT", 0, "30", 0)
    with pytest.raises(sqlite3.IntegrityError):  # UNIQUE (name) kept
        conn.execute("INSERT INTO alpha__singer (name) VALUES ('Ann')")

    golds = [
        ("alpha", "SELECT singer.name, count(*) FROM singer JOIN concert ON singer.id = concert.singer_id "
                  "GROUP BY singer.id ORDER BY singer.name"),
        ("alpha", "SELECT name FROM singer WHERE id NOT IN (SELECT singer_id FROM concert) "
                  "UNION SELECT year FROM concert"),
        ("beta", 'SELECT T1.label, "my table".x FROM singer AS T1 JOIN "my table" ON T1.code = "my table".code'),
    ]
    for db_id, sql in golds:
        rewritten = merge_schemas.rewrite_gold(sql, merged.names[db_id])
        assert f"{db_id}__" in rewritten
        own = sqlite3.connect(tmp_path / f"{db_id}.sqlite")
        original, new = _rows(own, sql), _rows(conn, rewritten)
        own.close()
        assert original.rows and results_match(new, original, ordered=True), (sql, rewritten)


def test_main_writes_the_benchmark_and_fails_on_a_wrong_rewrite(tmp_path: Path, monkeypatch, capsys) -> None:
    spider, train = tmp_path / "spider", tmp_path / "train"
    for folder, db_id, ddl in ((spider, "alpha", ALPHA), (train, "beta", BETA)):
        (folder / "database" / db_id).mkdir(parents=True)
        sqlite_file(folder / "database" / db_id / f"{db_id}.sqlite", ddl)
    questions = [{"db_id": "alpha", "question": "How many singers?", "query": "SELECT count(*) FROM singer"},
                 {"db_id": "alpha", "question": "Names?", "query": "SELECT singer.name FROM singer ORDER BY name"}]
    (spider / "dev.json").write_text(json.dumps(questions))
    out = tmp_path / "bench"
    argv = ["--spider", str(spider), "--train", str(train), "--out", str(out), "--min-tables", "3"]

    assert merge_schemas.main(argv) == 0
    printed = capsys.readouterr().out
    assert "4 tables" in printed and "2/2" in printed and "mean 1.00" in printed
    dev = json.loads((out / "dev.json").read_text())
    assert [r["db_id"] for r in dev] == ["merged", "merged"]
    assert dev[1]["query"] == "SELECT singer.name FROM alpha__singer AS singer ORDER BY name"
    assert json.loads((out / "own.json").read_text()) == questions
    assert (out / "database" / "merged" / "merged.sqlite").is_file()

    monkeypatch.setattr(merge_schemas, "rewrite_gold", lambda sql, names: "SELECT 1")
    assert merge_schemas.main(argv) == 1
    assert "FAILED: 2 rewritten gold" in capsys.readouterr().err
