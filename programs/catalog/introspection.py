"""The catalog of a live database: tables, columns, types, keys and comments, read from the engine itself.

:func:`introspect` works for every engine :func:`~..db.opening.open_database` opens. SQLite is read with its
PRAGMAs (:func:`~.catalog.introspect_sqlite`); PostgreSQL and MySQL/MariaDB through SQLAlchemy's inspector
(``COMMENT ON`` and ``COMMENT '...'`` included; on MySQL every database the user may read is a schema, the
URL's own the default); DuckDB through its ``duckdb_tables()``/``duckdb_columns()``/``duckdb_constraints()`` functions
(duckdb-engine's SQLAlchemy reflection fails under SQLAlchemy 2.1).

Every user schema counts. A table in the default schema (``public``, ``main``) keeps its bare name; one in
another schema is named ``schema.table``, and the validator resolves it by that name.

Tables come in the order they were created where the engine keeps it (SQLite, DuckDB). MySQL's catalog lists
them by name, so there each schema's tables are put in :func:`referenced_first` order, the nearest a reader
gets to the order a schema's author wrote them in.
"""

from __future__ import annotations

import re
from typing import Any

from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table, introspect_sqlite

SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast"})
MYSQL_SYSTEM_SCHEMAS = frozenset({"information_schema", "mysql", "performance_schema", "sys"})


def introspect(database: Any) -> Catalog:
    """The catalog of an open :class:`~.database.Database` (no descriptions beyond the engine's comments)."""
    # not the inspector: it lists tables by name and types by affinity (INT as INTEGER)
    if database.dialect == "sqlite":
        return introspect_sqlite(database.path)
    if database.dialect in ("postgres", "mysql"):
        tables = _postgres_tables(database.engine, database.dialect)
    else:
        tables = _duckdb_tables(database.engine)
    return Catalog(db_id=database.db_id, tables=tables)


def qualified(schema: str | None, name: str, default_schema: str) -> str:
    """``name`` in the default schema, else ``schema.name``."""
    return name if not schema or schema == default_schema else f"{schema}.{name}"


def _postgres_tables(engine: Any, dialect: str = "postgres") -> list[Table]:
    """PostgreSQL's or MySQL's tables, read with SQLAlchemy's inspector (the default schema's first on MySQL)."""
    from sqlalchemy import inspect

    inspector = inspect(engine)
    default = inspector.default_schema_name or ("public" if dialect == "postgres" else engine.url.database)
    tables = []
    schemas = inspector.get_schema_names()
    if dialect == "mysql":
        schemas = sorted(schemas, key=lambda s: (s != default, s))
    for schema in schemas:
        schema_tables: list[Table] = []
        if schema in SYSTEM_SCHEMAS or schema.startswith("pg_") or (dialect == "mysql"
                                                                    and schema.lower() in MYSQL_SYSTEM_SCHEMAS):
            continue
        for name in inspector.get_table_names(schema=schema):
            pk = set(inspector.get_pk_constraint(name, schema=schema).get("constrained_columns") or [])
            unique = {
                u["column_names"][0] for u in inspector.get_unique_constraints(name, schema=schema)
                if len(u["column_names"]) == 1
            }
            references = {}
            for fk in inspector.get_foreign_keys(name, schema=schema):
                target = qualified(fk.get("referred_schema"), fk["referred_table"], default)  # None: the default schema
                for source_col, target_col in zip(fk["constrained_columns"], fk["referred_columns"]):
                    references[source_col] = f"{target}.{target_col}"
            columns = [
                Column(
                    name=c["name"],
                    type=_type_name(c["type"], engine),
                    description=c.get("comment") or "",
                    primary_key=c["name"] in pk,
                    nullable=bool(c.get("nullable", True)) and c["name"] not in pk,
                    unique=c["name"] in unique,
                    references=references.get(c["name"]),
                )
                for c in inspector.get_columns(name, schema=schema)
            ]
            if columns:
                comment = inspector.get_table_comment(name, schema=schema).get("text") or ""
                schema_tables.append(Table(name=qualified(schema, name, default), description=comment, columns=columns))
        tables += referenced_first(schema_tables) if dialect == "mysql" else schema_tables
    return tables


def referenced_first(tables: list[Table]) -> list[Table]:
    """``tables`` reordered so that each follows the tables among them that its keys refer to, the order given
    kept otherwise (a referenced table moves up to just before its first referrer; a cycle keeps the given order)."""
    by_name = {t.name: t for t in tables}
    seen: set[str] = set()
    ordered: list[Table] = []

    def place(table: Table) -> None:
        seen.add(table.name)  # before its references, so a cycle ends here
        for _, target, _ in table.foreign_keys:
            if target in by_name and target not in seen:
                place(by_name[target])
        ordered.append(table)

    for table in tables:
        if table.name not in seen:
            place(table)
    return ordered


def _duckdb_tables(engine: Any) -> list[Table]:
    with engine.connect() as conn:
        database, default = conn.exec_driver_sql("SELECT current_database(), current_schema()").one()
        table_rows = conn.exec_driver_sql(
            "SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name = ? AND NOT internal "
            "ORDER BY schema_name <> ?, schema_name, table_oid", (database, default)
        ).all()  # fmt: skip
        column_rows = conn.exec_driver_sql(
            "SELECT schema_name, table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
            "WHERE database_name = ? AND NOT internal ORDER BY column_index", (database,)
        ).all()  # fmt: skip
        constraint_rows = conn.exec_driver_sql(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints() WHERE database_name = ?", (database,)
        ).all()  # fmt: skip
    pk: set[tuple[str, str, str]] = set()
    unique: set[tuple[str, str, str]] = set()
    references: dict[tuple[str, str, str], str] = {}
    for schema, table, kind, cols, ref_table, ref_cols in constraint_rows:
        if kind == "PRIMARY KEY":
            pk.update((schema, table, c) for c in cols)
        elif kind == "UNIQUE" and len(cols) == 1:
            unique.add((schema, table, cols[0]))
        elif kind == "FOREIGN KEY":
            for c, r in zip(cols, ref_cols):
                references[(schema, table, c)] = f"{qualified(schema, ref_table, default)}.{r}"
    by_table: dict[tuple[str, str], list[Column]] = {}
    for schema, table, name, data_type, nullable, comment in column_rows:
        key = (schema, table, name)
        by_table.setdefault((schema, table), []).append(
            Column(
                name=name, type=data_type or "TEXT", description=comment or "", primary_key=key in pk,
                nullable=bool(nullable) and key not in pk, unique=key in unique, references=references.get(key),
            )
        )  # fmt: skip
    return [
        Table(name=qualified(schema, table, default), description=comment or "", columns=by_table[(schema, table)])
        for schema, table, comment in table_rows
        if by_table.get((schema, table))
    ]


def _type_name(sa_type: Any, engine: Any) -> str:
    try:
        name = sa_type.compile(dialect=engine.dialect).upper()
        return re.sub(r"^(\w*INT(?:EGER)?)\(\d+\)", r"\1", name)  # MySQL's display widths: BIGINT(20)
    except Exception:  # a type SQLAlchemy cannot render (NullType, an extension's type)
        return "TEXT"
