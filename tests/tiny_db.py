"""A four-table SQLite database and schema folder for fast unit tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import yaml

DDL = """
CREATE TABLE organizations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, plan TEXT NOT NULL);
CREATE TABLE users (
  id INTEGER PRIMARY KEY, organization_id INTEGER NOT NULL REFERENCES organizations(id),
  email TEXT NOT NULL UNIQUE, full_name TEXT NOT NULL, status TEXT NOT NULL, last_login_at TEXT
);
CREATE TABLE login_attempts (
  id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id),
  attempted_at TEXT NOT NULL, success INTEGER NOT NULL
);
CREATE TABLE blocks (
  id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id),
  reason TEXT NOT NULL, blocked_at TEXT NOT NULL, unblocked_at TEXT
);
"""

ROWS = {
    "organizations": [(1, "Acme", "Business"), (2, "Globex", "Starter")],
    "users": [
        (1, 1, "ann@acme.test", "Ann Lee", "active", "2024-05-01 10:00:00"),
        (2, 1, "bob@acme.test", "Bob Ray", "suspended", "2024-04-02 09:30:00"),
        (3, 2, "cy@globex.test", "Cy Young", "active", None),
    ],
    "login_attempts": [
        (1, 1, "2024-05-01 09:59:00", 0),
        (2, 1, "2024-05-01 10:00:00", 1),
        (3, 2, "2024-04-02 09:00:00", 0),
        (4, 2, "2024-04-02 09:10:00", 0),
        (5, 2, "2024-04-02 09:20:00", 0),
        (6, None, "2024-04-03 11:00:00", 0),
    ],
    "blocks": [(1, 2, "too_many_failed_logins", "2024-04-02 09:21:00", None)],
}

DESCRIPTIONS = {
    "organizations": "Customer companies.",
    "users": "People who can sign in.",
    "login_attempts": "One row per sign-in attempt, successful or failed.",
    "blocks": "Times a user was blocked from signing in, and when unblocked.",
}


def build_tiny_db(folder: Path) -> Path:
    """Create ``folder/tiny.sqlite`` and return its path."""
    path = folder / "tiny.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(DDL)
    for table, rows in ROWS.items():
        marks = ",".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    conn.commit()
    conn.close()
    return path


def write_schema_dir(folder: Path, db_path: Path) -> Path:
    """Per-table YAML files describing the tiny database, as ``schemas/`` holds them."""
    from text2sql_dspy.programs.catalog.catalog import introspect_sqlite

    schema_dir = folder / "tiny_schemas"
    schema_dir.mkdir()
    for table in introspect_sqlite(db_path).tables:
        data = table.model_dump(exclude={"columns": {"__all__": {"samples"}}})
        data["description"] = DESCRIPTIONS[table.name]
        (schema_dir / f"{table.name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return schema_dir


def write_spider_folder(folder: Path, tiny_db: Path, splits: dict[str, list[tuple[str, str]]]) -> Path:
    """A Spider-format folder around ``tiny_db`` (db_id ``tiny``): one ``<split>.json`` per entry of ``splits``."""
    import json
    import shutil

    (folder / "database" / "tiny").mkdir(parents=True)
    shutil.copy(tiny_db, folder / "database" / "tiny" / "tiny.sqlite")
    for split, pairs in splits.items():
        records = [{"db_id": "tiny", "question": q, "query": s} for q, s in pairs]
        (folder / f"{split}.json").write_text(json.dumps(records))
    return folder
