"""The bundled ``saas`` database: schema YAML <-> built SQLite agreement, gold queries, splits, determinism."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import sqlglot
import yaml
from sqlglot import exp
from sqlglot.optimizer import optimize

from tests.scripts import script

REPO = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO / "schemas" / "saas"
DATA_DIR = REPO / "data"
SPLITS = {"train": 100, "dev": 50, "test": 50}
BIG_TABLES = ["login_attempts", "audit_events", "sessions", "api_requests", "invoices", "users"]
SEED_QUESTION = (
    "Find the top 10 users by failed login attempts who have never been blocked. "
    "Show each user's name, email and number of failed attempts."
)


builder = script("data/build_database.py")
auditor = script("data/audit_questions.py")


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return builder.build_database(tmp_path_factory.mktemp("saas") / "saas.sqlite")


@pytest.fixture(scope="module")
def conn(db_path: Path):
    connection = sqlite3.connect(db_path)
    yield connection
    connection.close()


def _schema() -> dict[str, dict]:
    tables = {}
    for path in sorted(SCHEMA_DIR.glob("*.yaml")):
        table = yaml.safe_load(path.read_text(encoding="utf-8"))
        tables[table["name"]] = table
    return tables


def _split(name: str) -> list[dict]:
    return json.loads((DATA_DIR / f"{name}.json").read_text(encoding="utf-8"))


def _norm(question: str) -> str:
    return " ".join(question.lower().split())


# ---- schema files ---------------------------------------------------------------------------------


def test_schema_files_are_well_formed() -> None:
    files = sorted(SCHEMA_DIR.glob("*.yaml"))
    assert len(files) >= 25
    problems = []
    for path in files:
        table = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(table, dict):
            problems.append(f"{path.name}: not a mapping")
            continue
        if set(table) != {"name", "description", "columns"}:
            problems.append(f"{path.name}: keys {sorted(table)}")
            continue
        if path.stem != table["name"]:
            problems.append(f"{path.name}: file name does not match table name {table['name']!r}")
        if not isinstance(table["description"], str) or len(table["description"].split()) < 4:
            problems.append(f"{path.name}: table description missing or too short")
        if not table["columns"]:
            problems.append(f"{path.name}: no columns")
        names = [c.get("name") for c in table["columns"]]
        if len(names) != len(set(names)):
            problems.append(f"{path.name}: duplicate column names")
        if not any(c.get("primary_key") for c in table["columns"]):
            problems.append(f"{path.name}: no primary key")
        for column in table["columns"]:
            where = f"{path.name}:{column.get('name')}"
            extra = set(column) - {"name", "type", "description", "primary_key", "nullable", "references", "unique"}
            if extra:
                problems.append(f"{where}: unknown keys {sorted(extra)}")
            if not column.get("name") or column.get("type") not in ("INTEGER", "REAL", "TEXT"):
                problems.append(f"{where}: bad name or type {column.get('type')!r}")
            if not isinstance(column.get("description"), str) or len(column["description"].split()) < 2:
                problems.append(f"{where}: description missing or too short")
            for flag in ("primary_key", "nullable", "unique"):
                if flag in column and not isinstance(column[flag], bool):
                    problems.append(f"{where}: {flag} must be a boolean")
            if column.get("primary_key") and column.get("nullable"):
                problems.append(f"{where}: a primary key cannot be nullable")
    assert not problems, "\n".join(problems)


def test_references_point_to_existing_columns() -> None:
    tables = _schema()
    problems = []
    for table in tables.values():
        for column in table["columns"]:
            ref = column.get("references")
            if ref is None:
                continue
            ref_table, _, ref_column = ref.partition(".")
            target = tables.get(ref_table)
            if target is None or ref_column not in [c["name"] for c in target["columns"]]:
                problems.append(f"{table['name']}.{column['name']} -> {ref}")
                continue
            target_col = next(c for c in target["columns"] if c["name"] == ref_column)
            if not (target_col.get("primary_key") or target_col.get("unique")):
                problems.append(f"{table['name']}.{column['name']} -> {ref}: target is neither a key nor unique")
    assert not problems, "\n".join(problems)


# ---- schema <-> database ------------------------------------------------------------------------


def test_database_matches_schema_exactly(conn: sqlite3.Connection) -> None:
    schema = _schema()
    db_tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%'")}
    assert db_tables == set(schema)
    problems = []
    for name, table in schema.items():
        cols = table["columns"]
        pk_cols = [c["name"] for c in cols if c.get("primary_key")]
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        if [r[1] for r in info] != [c["name"] for c in cols]:
            problems.append(f"{name}: columns {[r[1] for r in info]} != {[c['name'] for c in cols]}")
            continue
        for (_, col_name, col_type, notnull, _, pk), c in zip(info, cols):
            if col_type != c["type"]:
                problems.append(f"{name}.{col_name}: type {col_type} != {c['type']}")
            single_int_pk = c.get("primary_key") and len(pk_cols) == 1 and c["type"] == "INTEGER"
            expected_notnull = 0 if single_int_pk or c.get("nullable", False) else 1
            if notnull != expected_notnull:
                problems.append(f"{name}.{col_name}: notnull {notnull} != {expected_notnull}")
        db_pk = [r[1] for r in sorted((r for r in info if r[5] > 0), key=lambda r: r[5])]
        if db_pk != pk_cols:
            problems.append(f"{name}: primary key {db_pk} != {pk_cols}")
        db_fks = {(r[3], f"{r[2]}.{r[4]}") for r in conn.execute(f'PRAGMA foreign_key_list("{name}")')}
        yaml_fks = {(c["name"], c["references"]) for c in cols if c.get("references")}
        if db_fks != yaml_fks:
            problems.append(f"{name}: foreign keys {sorted(db_fks)} != {sorted(yaml_fks)}")
        unique = set()
        for _, index_name, is_unique, origin, _ in conn.execute(f'PRAGMA index_list("{name}")'):
            if is_unique and origin == "u":
                idx_cols = [r[2] for r in conn.execute(f'PRAGMA index_info("{index_name}")')]
                if len(idx_cols) == 1:
                    unique.add(idx_cols[0])
        yaml_unique = {c["name"] for c in cols if c.get("unique")}
        if unique != yaml_unique:
            problems.append(f"{name}: unique columns {sorted(unique)} != {sorted(yaml_unique)}")
    assert not problems, "\n".join(problems)


def test_foreign_keys_hold(conn: sqlite3.Connection) -> None:
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_table_count_and_sizes(conn: sqlite3.Connection) -> None:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%'")]
    assert len(names) >= 25
    counts = {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}
    empty = [n for n, c in counts.items() if c == 0]
    assert not empty, f"empty tables: {empty}"
    small = {n: counts[n] for n in BIG_TABLES if counts[n] < (500 if n == "users" else 1000)}
    assert not small, f"big tables too small: {small}"


def test_timestamps_are_iso_text_in_range(conn: sqlite3.Connection) -> None:
    problems = []
    for name, table in _schema().items():
        for c in table["columns"]:
            if c["type"] != "TEXT" or not (c["name"].endswith("_at") or c["name"] in ("period_start", "period_end")):
                continue
            bad = conn.execute(
                f'SELECT COUNT(*) FROM "{name}" WHERE "{c["name"]}" IS NOT NULL AND ('
                f'"{c["name"]}" NOT GLOB \'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] '
                '[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\' '
                f'OR datetime("{c["name"]}") IS NOT "{c["name"]}")'
            ).fetchone()[0]
            if bad:
                problems.append(f"{name}.{c['name']}: {bad} malformed timestamps")
    assert not problems, "\n".join(problems)


def test_planned_edge_cases_exist(conn: sqlite3.Connection) -> None:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    assert one("SELECT COUNT(*) FROM users WHERE last_login_at IS NULL") > 0
    assert one("SELECT COUNT(*) FROM login_attempts WHERE user_id IS NULL") > 0
    assert one("SELECT COUNT(*) FROM blocks WHERE unblocked_at IS NULL") > 0
    assert one("SELECT COUNT(*) FROM (SELECT user_id FROM blocks GROUP BY user_id HAVING COUNT(*) > 1)") > 0
    assert one("SELECT COUNT(*) FROM users WHERE deleted_at IS NOT NULL") > 0
    assert one("SELECT COUNT(DISTINCT status) FROM subscriptions") == 4
    assert one("SELECT COUNT(*) FROM (SELECT monthly_price_cents FROM plans GROUP BY 1 HAVING COUNT(*) > 1)") > 0
    # the two never-blocked users with the most failed logins are tied
    top = conn.execute(
        "SELECT COUNT(*) AS n FROM login_attempts la WHERE la.success = 0 AND la.user_id IS NOT NULL "
        "AND la.user_id NOT IN (SELECT user_id FROM blocks) GROUP BY la.user_id ORDER BY n DESC LIMIT 2"
    ).fetchall()
    assert top[0][0] == top[1][0]


def test_build_is_deterministic(tmp_path: Path, db_path: Path) -> None:
    again = builder.build_database(tmp_path / "again.sqlite")
    digest = lambda p: hashlib.sha256(Path(p).read_bytes()).hexdigest()  # noqa: E731
    assert digest(again) == digest(db_path)
    assert not list(tmp_path.glob("*.tmp"))


# ---- question / gold-SQL splits ------------------------------------------------------------------


def test_split_sizes_and_format() -> None:
    for name, minimum in SPLITS.items():
        records = _split(name)
        assert len(records) >= minimum, f"{name}: {len(records)} < {minimum}"
        for r in records:
            assert set(r) == {"db_id", "question", "query"}, r
            assert r["db_id"] == "saas"
            assert r["question"].strip() and r["query"].strip()


def test_no_duplicate_questions() -> None:
    seen: dict[str, str] = {}
    duplicates = []
    for name in SPLITS:
        for r in _split(name):
            key = _norm(r["question"])
            if key in seen:
                duplicates.append(f"{name}: {r['question']!r} (also in {seen[key]})")
            seen[key] = name
    assert not duplicates, "\n".join(duplicates)


def test_seed_question_is_in_test_split() -> None:
    assert _norm(SEED_QUESTION) in {_norm(r["question"]) for r in _split("test")}


def test_every_gold_query_returns_rows(conn: sqlite3.Connection) -> None:
    failures = []
    for name in SPLITS:
        for i, r in enumerate(_split(name)):
            try:
                rows = conn.execute(r["query"]).fetchall()
            except sqlite3.Error as exc:
                failures.append(f"{name}[{i}] {r['question']!r}: {exc}")
                continue
            if not rows:
                failures.append(f"{name}[{i}] {r['question']!r}: empty result")
    assert not failures, f"{len(failures)} failing gold queries:\n" + "\n".join(failures)


def _records() -> list[tuple[str, int, dict]]:
    return [(name, i, r) for name in SPLITS for i, r in enumerate(_split(name))]


def _tree(record: dict) -> exp.Expression:
    return sqlglot.parse_one(record["query"], read="sqlite")


def test_no_two_test_gold_queries_are_the_same_query(conn: sqlite3.Connection) -> None:
    """Compared after sqlglot's optimizer: aliases, quoting and predicate order do not hide a duplicate."""
    schema = {
        t: {r[1]: r[2] for r in conn.execute(f'PRAGMA table_info("{t}")')}
        for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    }
    seen: dict[str, int] = {}
    duplicates = []
    for i, r in enumerate(_split("test")):
        canonical = optimize(_tree(r), schema=schema, dialect="sqlite").sql(dialect="sqlite")
        if canonical in seen:
            duplicates.append(f"test[{i}] repeats test[{seen[canonical]}]: {r['query']}")
        seen[canonical] = i
    assert not duplicates, "\n".join(duplicates)


def test_case_labels_in_the_answer_are_named_by_the_question() -> None:
    """A CASE that labels output rows ('on', 'later', '2xx') only scores if the question gives the labels."""
    missing = []
    for name, i, r in _records():
        for _, expression in auditor.output_columns(_tree(r)):
            for case in expression.find_all(exp.Case):
                labels = [c.args["true"] for c in case.args.get("ifs", [])] + [case.args.get("default")]
                for label in labels:
                    if (isinstance(label, exp.Literal) and label.is_string
                            and label.this.lower() not in r["question"].lower()):
                        missing.append(f"{name}[{i}] label {label.this!r}: {r['question']}")
    assert not missing, "\n".join(missing)


def test_rounded_answers_say_so() -> None:
    """An output column the gold query rounds is only matched if the question asks for that rounding."""
    missing = []
    for name, i, r in _records():
        rounded = any(e.find(exp.Round) is not None for _, e in auditor.output_columns(_tree(r)))
        if rounded and "round" not in r["question"].lower():
            missing.append(f"{name}[{i}] {r['question']}")
    assert not missing, "\n".join(missing)


def test_ordered_gold_queries_are_ranked_or_say_their_order() -> None:
    """Execution match compares rows in order when the gold query ends in ORDER BY: without a LIMIT,
    the question must ask for that order ("... first")."""
    unasked = []
    for name, i, r in _records():
        tree = _tree(r)
        if tree.args.get("order") is not None and tree.args.get("limit") is None:
            if " first" not in r["question"].lower():
                unasked.append(f"{name}[{i}] {r['question']}")
    assert not unasked, "\n".join(unasked)


def test_no_limit_cuts_through_a_tie(conn: sqlite3.Connection) -> None:
    """A top-N gold query must not pick among rows tied on its first ORDER BY key at the cut-off."""
    cut = []
    for name, i, r in _records():
        tree = _tree(r)
        if tree.args.get("limit") is not None and "ties at the LIMIT cut-off" in auditor.tie_flags(conn, tree):
            cut.append(f"{name}[{i}] {r['question']}")
    assert not cut, "\n".join(cut)
