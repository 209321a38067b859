"""The table catalog: what tables and columns a database has, described for people and models.

A :class:`Catalog` is built from one of three sources and is the one place that knows how a
schema is rendered into a prompt:

* :func:`load_schema_dir` — a folder of per-table YAML/JSON files (``schemas/<db_id>/``);
* :func:`introspect_sqlite` — a live SQLite file;
* :func:`load_spider_tables` — Spider/BIRD ``tables.json``.

:func:`~.samples.sampled` adds a few stored values per column, read from the database.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator
from sqlglot import exp
from sqlglot.errors import SqlglotError

from text2sql_dspy.programs.errors import DatabaseError, SchemaFileError

SCHEMA_SUFFIXES = (".yaml", ".yml", ".json")


class Column(BaseModel):
    """One column. ``references`` is ``"table.column"`` (``"schema.table.column"`` outside the default schema)
    for a foreign key; columns are NOT NULL unless ``nullable``."""

    name: str
    type: str = "TEXT"
    description: str = ""
    primary_key: bool = False
    nullable: bool = False
    unique: bool = False
    references: str | None = None
    samples: list[str | int | float] = Field(default_factory=list)

    @property
    def stores_text(self) -> bool:
        """Whether the declared type is a text type (TEXT, VARCHAR, CHARACTER VARYING, CLOB, STRING)."""
        return any(word in self.type.upper() for word in ("TEXT", "CHAR", "CLOB", "STRING"))

    @property
    def opaque(self) -> bool:
        """Whether this is a key of opaque ids (UUIDs, ``rec…`` record ids, hashes): a key column whose every sample
        (two or more) is one token of 8 or more characters mixing letters and digits. A model copies such ids from
        samples into filters; the prompt shows their shape instead (:func:`id_shape`)."""
        keyish = self.primary_key or self.unique or bool(self.references) or self.name.lower().endswith(("id", "_ref"))
        texts = [s for s in self.samples if isinstance(s, str)]
        return keyish and len(texts) >= 2 and len(texts) == len(self.samples) and all(_opaque_id(s) for s in texts)

    @property
    def stores_integer(self) -> bool:
        """Whether the declared type is an integer type (INTEGER, INT, BIGINT, SMALLINT, ...), as sqlglot reads it."""
        try:
            return exp.DataType.build(self.type).is_type(*exp.DataType.INTEGER_TYPES)
        except (SqlglotError, ValueError):
            return False

    @field_validator("name", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value or not value.strip():
            raise ValueError("must not be empty")
        return value.strip()

    @field_validator("references")
    @classmethod
    def _table_dot_column(cls, value: str | None) -> str | None:
        if value is not None and ("." not in value or not all(value.split("."))):
            raise ValueError(f"must look like 'table.column', got {value!r}")
        return value


class Table(BaseModel):
    """One table and its columns, in declaration order."""

    name: str
    description: str = ""
    columns: list[Column]

    @field_validator("columns")
    @classmethod
    def _has_columns(cls, value: list[Column]) -> list[Column]:
        if not value:
            raise ValueError("a table needs at least one column")
        names = [c.name.lower() for c in value]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate columns: {', '.join(duplicates)}")
        return value

    def column(self, name: str) -> Column | None:
        """The column called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def primary_key(self) -> list[str]:
        return [c.name for c in self.columns if c.primary_key]

    @property
    def foreign_keys(self) -> list[tuple[str, str, str]]:
        """``(column, referenced_table, referenced_column)`` triples."""
        keys = []
        for c in self.columns:
            if c.references:
                ref_table, ref_column = c.references.rsplit(".", 1)
                keys.append((c.name, ref_table, ref_column))
        return keys

    def render(self, *, samples: bool = True, brief: bool = False, values_only: bool = False) -> str:
        """This table as a ``CREATE TABLE`` statement whose comments carry descriptions and samples.

        ``brief`` keeps the table's description, columns, types and keys but drops the column comments:
        enough to join through the table at a third of the tokens. ``values_only`` keeps just the
        column comments that show stored values (quoted values or samples), which a filter must match.
        """
        header = f"CREATE TABLE {self.name} ("
        if self.description:
            header += f"  -- {_one_line(self.description)}"
        lines = [header]
        pk = self.primary_key
        for i, c in enumerate(self.columns):
            parts = [f"  {c.name} {c.type}"]
            if c.primary_key and len(pk) == 1:
                parts.append("PRIMARY KEY")
            elif not c.nullable:
                parts.append("NOT NULL")
            if c.references:
                ref_table, ref_column = c.references.rsplit(".", 1)
                parts.append(f"REFERENCES {ref_table}({ref_column})")
            last = i == len(self.columns) - 1 and len(pk) <= 1
            line = " ".join(parts) + ("" if last else ",")
            comment = "" if brief else _column_comment(c, samples)
            if values_only and "'" not in comment:
                comment = ""
            lines.append(f"{line}  -- {comment}" if comment else line)
        if len(pk) > 1:
            lines.append(f"  PRIMARY KEY ({', '.join(pk)})")
        lines.append(");")
        return "\n".join(lines)


class Catalog(BaseModel):
    """All tables of one database."""

    db_id: str
    tables: list[Table]

    def table(self, name: str) -> Table | None:
        """The table called ``name`` (case-insensitive), or None."""
        lowered = name.lower()
        return next((t for t in self.tables if t.name.lower() == lowered), None)

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def links(self) -> dict[str, set[str]]:
        """Each table's lower-cased name -> the lower-cased names of the other tables a declared foreign key joins
        it to, either way."""
        links: dict[str, set[str]] = {t.name.lower(): set() for t in self.tables}
        for table in self.tables:
            for _, referenced, _ in table.foreign_keys:
                a, b = table.name.lower(), referenced.lower()
                if a != b and b in links:
                    links[a].add(b)
                    links[b].add(a)
        return links

    def parts(self) -> dict[str, int]:
        """Each table with a declared foreign key (from it or to it), by lower-cased name: the number of the part of
        the schema its keys link it to, directly or through other tables (tables no key links are left out)."""
        links = {name: near for name, near in self.links().items() if near}
        part: dict[str, int] = {}
        for number, start in enumerate(name for name in links if name not in part):
            todo, part[start] = [start], number
            while todo:
                for near in links[todo.pop()]:
                    if near not in part:
                        part[near] = number
                        todo.append(near)
        return part

    def neighbours(self, name: str) -> list[str]:
        """Tables joined to ``name`` by a foreign key, in either direction."""
        table = self.table(name)
        if table is None:
            return []
        linked = {ref for _, ref, _ in table.foreign_keys} | {t.name for t, _, _ in self.referring(table)}
        linked.discard(table.name)
        return [t.name for t in self.tables if t.name in linked]

    def referring(self, table: Table) -> list[tuple[Table, str, str]]:
        """(other table, its foreign key, the column of ``table`` it references) for each declared key of another
        table into ``table``, in catalog order."""
        return [(t, fk, ref_col) for t in self.tables if t is not table for fk, ref_table, ref_col in t.foreign_keys
                if ref_table.lower() == table.name.lower()]

    def subset(self, names: Iterable[str]) -> Catalog:
        """A catalog of just the named tables, in the given order; unknown names are skipped."""
        chosen = [t for n in names if (t := self.table(n)) is not None]
        return Catalog(db_id=self.db_id, tables=chosen)

    def render(
        self, names: Iterable[str] | None = None, *, samples: bool = True, brief: bool = False,
        values_only: bool = False
    ) -> str:
        """``CREATE TABLE`` statements for ``names`` (default: every table), separated by blank lines."""
        tables = self.tables if names is None else self.subset(names).tables
        return "\n\n".join(t.render(samples=samples, brief=brief, values_only=values_only) for t in tables)


def connect_readonly(db_path: Path) -> sqlite3.Connection:
    """Open an existing SQLite file read-only, or raise :class:`DatabaseError` naming the problem."""
    path = Path(db_path)
    if not path.is_file():
        raise DatabaseError(f"database file not found: {path}. Pass an existing .sqlite file (--db PATH).")
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DatabaseError(f"{path} is not a readable SQLite database ({exc}). Check the file or rebuild it.") from exc
    return conn


def load_schema_dir(path: Path, db_id: str | None = None) -> Catalog:
    """Read every ``*.yaml``/``*.yml``/``*.json`` table file in ``path`` (sorted by file name)."""
    folder = Path(path)
    if not folder.is_dir():
        raise SchemaFileError(f"schema folder not found: {folder}. Point schema_path at a folder of table files.")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in SCHEMA_SUFFIXES)
    if not files:
        raise SchemaFileError(f"no .yaml/.yml/.json table files in {folder}.")
    tables = [_read_table_file(f) for f in files]
    names = [t.name.lower() for t in tables]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SchemaFileError(f"{folder}: tables defined twice: {', '.join(duplicates)}.")
    return Catalog(db_id=db_id or folder.name, tables=tables)


def introspect_sqlite(db_path: Path, db_id: str | None = None) -> Catalog:
    """Read tables, columns, keys and foreign keys from a SQLite file (no descriptions)."""
    conn = connect_readonly(db_path)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                "ORDER BY rowid"
            )
        ]
        tables = []
        for name in names:
            quoted = _quote(name)
            fks = {row[3]: f"{row[2]}.{row[4] or 'rowid'}"
                   for row in conn.execute(f"PRAGMA foreign_key_list({quoted})")}
            unique = _unique_columns(conn, name)
            columns = [
                Column(
                    name=col_name,
                    type=(col_type or "TEXT").upper(),
                    primary_key=pk > 0,
                    nullable=not notnull and pk == 0,
                    unique=col_name in unique,
                    references=fks.get(col_name),
                )
                for _, col_name, col_type, notnull, _, pk in conn.execute(f"PRAGMA table_info({quoted})")
            ]
            tables.append(Table(name=name, columns=columns))
    finally:
        conn.close()
    return Catalog(db_id=db_id or Path(db_path).stem, tables=tables)


def load_spider_tables(tables_json: Path, db_id: str) -> Catalog:
    """The catalog of ``db_id`` from a Spider/BIRD ``tables.json``; natural-language names become descriptions."""
    try:
        entries = json.loads(Path(tables_json).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaFileError(f"cannot read {tables_json}: {exc}") from exc
    entry = next((e for e in entries if e.get("db_id") == db_id), None)
    if entry is None:
        raise SchemaFileError(f"db_id {db_id!r} is not in {tables_json}.")
    table_names = entry["table_names_original"]
    columns = entry["column_names_original"]
    pks: set[int] = set()
    for pk in entry.get("primary_keys", []):
        pks.update(pk if isinstance(pk, list) else [pk])
    fks = {src: dst for src, dst in entry.get("foreign_keys", [])}
    by_table: dict[int, list[Column]] = {i: [] for i in range(len(table_names))}
    for index, (table_index, col_name) in enumerate(columns):
        if table_index < 0:
            continue
        ref = None
        if index in fks:
            ref_table, ref_col = columns[fks[index]]
            ref = f"{table_names[ref_table]}.{ref_col}"
        by_table[table_index].append(
            Column(
                name=col_name,
                type=entry["column_types"][index].upper(),
                description=_unless_same(entry["column_names"][index][1], col_name),
                primary_key=index in pks,
                nullable=index not in pks,
                references=ref,
            )
        )
    tables = [
        Table(name=name, description=_unless_same(entry["table_names"][i], name), columns=by_table[i])
        for i, name in enumerate(table_names)
        if by_table[i]
    ]
    return Catalog(db_id=db_id, tables=tables)


def _read_table_file(path: Path) -> Table:
    try:
        text = path.read_text(encoding="utf-8")
        raw: Any = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise SchemaFileError(f"{path}: cannot parse ({_one_line(str(exc))}). Fix the file's syntax.") from exc
    if not isinstance(raw, dict):
        raise SchemaFileError(f"{path}: expected a mapping with 'name' and 'columns', got {type(raw).__name__}.")
    try:
        return Table.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise SchemaFileError(f"{path}: {problems}.") from exc


def _unique_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    unique: set[str] = set()
    for _, index_name, is_unique, origin, _ in conn.execute(f"PRAGMA index_list({_quote(table)})"):
        if is_unique and origin == "u":
            cols = [row[2] for row in conn.execute(f"PRAGMA index_info({_quote(index_name)})")]
            if len(cols) == 1:
                unique.add(cols[0])
    return unique


MAX_SAMPLE_CHARS = 30  # longer values are left out whole: a cut value would be copied into SQL as if real
SAMPLES = "values like "  # a column's kind of values, not filters to copy: a small model copied after "e.g."
OPAQUE = "compare only with ids the question gives"


def _column_comment(column: Column, samples: bool) -> str:
    """Description (not for keys, which describe themselves) and a few stored values.

    Values are shown only for text columns whose description does not already quote them,
    and never for timestamps, whose format the description gives: they would cost tokens
    and teach nothing. They are shown as ``values like 'Open', 'Planning'``: what the column holds, not
    filters. Opaque ids are not shown at all, nor any start of one that a model could continue (:func:`id_shape`).
    """
    parts = []
    if column.description and not column.primary_key:
        parts.append(_one_line(column.description))
    describes_values = "'" in column.description
    if samples and column.opaque:
        parts.append(f"{id_shape(column.samples)}; {OPAQUE}")
    elif (samples and column.samples and column.type.upper() == "TEXT" and not describes_values
          and not column.references):
        shown = [
            s for s in column.samples if isinstance(s, str) and len(s) <= MAX_SAMPLE_CHARS
            and not _looks_like_timestamp(s)
        ][:3]
        if shown:
            parts.append(SAMPLES + ", ".join(repr(v) for v in shown))
    elif samples and column.samples and not column.description and not (column.primary_key or column.references):
        parts.append(SAMPLES + ", ".join(repr(v) for v in column.samples[:3]))
    if len(parts) == 2 and parts[0][-1] not in ".;:!?)":
        parts[0] += ";"  # "the sign-in address; values like 'ann@acme.test'", not one phrase
    return " ".join(parts)


def _opaque_id(value: str) -> bool:
    return len(value) >= 8 and not any(ch.isspace() for ch in value) and any(ch.isdigit() for ch in value) and any(
        ch.isalpha() for ch in value)


def id_shape(samples: list) -> str:
    """What opaque ids are, without any of them or a start of one that a model would continue into a literal
    (``'rec…'`` drew ``= 'rec0000…'`` until the token cap): ``opaque ids (17 characters)``."""
    lengths = sorted({len(str(s)) for s in samples})
    size = f"{lengths[0]}" if len(lengths) == 1 else f"{lengths[0]}-{lengths[-1]}"
    return f"opaque ids ({size} characters)"


def _looks_like_timestamp(value: str) -> bool:
    return len(value) >= 10 and value[:4].isdigit() and value[4] == "-" and value[7] == "-"


def _unless_same(natural_name: str, identifier: str) -> str:
    """Spider's natural-language name, unless it only restates the identifier."""
    same = natural_name.lower().split() == identifier.replace("_", " ").lower().split()
    return "" if same else natural_name


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _one_line(text: str) -> str:
    return " ".join(text.split())
