"""Copy a SQLite database (the bundled one, or a Spider database) into PostgreSQL, MySQL/MariaDB or a DuckDB file.

:func:`copy_sqlite_database` recreates every table with its primary and foreign keys, copies the rows and,
on PostgreSQL, runs ANALYZE so that the catalog's sample values come from the engine's statistics. Names
are folded to lower case on PostgreSQL, where unquoted names fold too: ``FROM Student`` in a gold query
then still finds the table. On MySQL/MariaDB table names are folded (run the server with
``lower_case_table_names=1`` so that ``FROM Student`` finds ``student``) and column names keep their case (MySQL
compares them without it). On MySQL a text column in a key is a ``VARCHAR(255)`` (a TEXT column cannot be one),
floats are ``DOUBLE``, text and blobs ``LONGTEXT``/``LONGBLOB`` only where a value passes 64 KB. A column whose
stored values do not fit its declared type (SQLite lets ``'n/a'`` into an INTEGER column) becomes TEXT; a foreign
key declared TEXT that holds only integers and refers to an integer column becomes an integer, so that the key
survives (Spider's ``concert.Stadium_ID``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from text2sql_dspy.programs.catalog.catalog import Catalog, connect_readonly, introspect_sqlite
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.errors import DatabaseError

_INTEGER_WORDS = ("INT",)
_REAL_WORDS = ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL", "NUMBER")


def copy_sqlite_database(
    sqlite_path: Path | str, target: str, *, replace: bool = True, docs: Catalog | None = None
) -> list[str]:
    """Copy every table of ``sqlite_path`` into the (empty, or ``replace``-d) database at ``target``; the table names.

    ``docs``: a catalog whose table and column descriptions (a schema folder's, BIRD's CSVs) become the copy's
    ``COMMENT``s on PostgreSQL and MySQL/MariaDB, where the catalog reads them back; DuckDB gets none."""
    from sqlalchemy import Column, ForeignKeyConstraint, MetaData, PrimaryKeyConstraint, Table, create_engine, types

    address = parse_address(target)
    if address.engine == "sqlite":
        raise DatabaseError("the target is SQLite already: give a postgresql://, mysql+pymysql:// or duckdb:/// URL.")
    fold = str.lower if address.engine in ("postgresql", "mysql") else (lambda name: name)
    mysql = address.engine == "mysql"
    fold_column = str.lower if address.engine == "postgresql" else (lambda name: name)
    catalog = introspect_sqlite(Path(sqlite_path))
    source = connect_readonly(Path(sqlite_path))
    try:
        rows = {t.name: source.execute(f'SELECT * FROM "{t.name}"').fetchall() for t in catalog.tables}
    finally:
        source.close()
    metadata = MetaData()
    keys = _key_columns(catalog) if mysql else set()
    integer_keys = _integer_foreign_keys(catalog, rows)
    rows = _with_integers(catalog, rows, integer_keys)
    commented = docs is not None and address.engine in ("postgresql", "mysql")
    for table in catalog.tables:
        values = rows[table.name]
        documented = docs.table(table.name) if commented else None
        columns = [
            Column(
                fold_column(c.name),
                types.BigInteger() if (table.name.lower(), c.name.lower()) in integer_keys else
                _sql_type(c.type, [r[i] for r in values], types, mysql=mysql,
                          key=(table.name.lower(), c.name.lower()) in keys),
                nullable=True,
                autoincrement=False,
                comment=_description(documented.column(c.name) if documented is not None else None),
            )
            for i, c in enumerate(table.columns)
        ]
        constraints: list[Any] = []
        positions = [table.column_names.index(k) for k in table.primary_key]
        indexable = not mysql or all(_sized(columns[i].type) for i in positions)
        if table.primary_key and indexable and _unique_key(values, positions, fold_text=mysql):
            constraints.append(PrimaryKeyConstraint(*[columns[i].name for i in positions]))
        Table(fold(table.name), metadata, *columns, *constraints, comment=_description(documented))
    _add_foreign_keys(catalog, rows, metadata, fold, fold_column, ForeignKeyConstraint)
    if address.path is not None:
        address.path.parent.mkdir(parents=True, exist_ok=True)  # a new DuckDB file
    engine = create_engine(address.sqlalchemy_url())
    try:
        with engine.begin() as conn:
            if replace:
                metadata.drop_all(conn)
            metadata.create_all(conn)
            by_name = {fold(t.name): t.name for t in catalog.tables}
            for target_table in metadata.sorted_tables:  # referenced tables first
                names = [c.name for c in target_table.columns]
                data = [dict(zip(names, _fit(r, target_table))) for r in rows[by_name[target_table.name]]]
                if data:
                    conn.execute(target_table.insert(), data)
        if address.engine == "postgresql":
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()
    return [fold(t.name) for t in catalog.tables]


def _description(documented: Any) -> str | None:
    text = " ".join(str(getattr(documented, "description", "") or "").split())
    return text[:1000] or None  # MySQL's column comments stop at 1,024 characters


def _sql_type(declared: str, values: list, types: Any, *, mysql: bool = False, key: bool = False) -> Any:
    """The SQLAlchemy type for a column declared ``declared`` holding ``values``; TEXT when they do not fit."""
    kind = declared.upper()
    present = [v for v in values if v is not None]
    if any(word in kind for word in _INTEGER_WORDS) and all(isinstance(v, int) for v in present):
        return types.BigInteger()
    if any(word in kind for word in _REAL_WORDS) and all(isinstance(v, int | float) for v in present):
        return types.Double() if mysql else types.Float()
    if "BOOL" in kind and all(v in (0, 1) for v in present):
        return types.Integer()
    long = mysql and any(len(v if isinstance(v, bytes) else str(v).encode()) > _MYSQL_TEXT_BYTES for v in present)
    if "BLOB" in kind and all(isinstance(v, bytes) for v in present):
        return _mysql_long("LONGBLOB") if long else types.LargeBinary()
    if mysql and key and all(len(str(v)) <= _MYSQL_KEY_CHARS for v in present):
        return types.String(_MYSQL_KEY_CHARS)
    return _mysql_long("LONGTEXT") if long else types.Text()


_MYSQL_KEY_CHARS = 255
_MYSQL_TEXT_BYTES = 65_535  # MySQL's TEXT and BLOB hold this much


def _sized(column_type: Any) -> bool:
    """Whether MySQL can index a column of this type whole (not TEXT or BLOB, which need a prefix length)."""
    return column_type.__class__.__name__ not in ("Text", "LargeBinary", "LONGTEXT", "LONGBLOB")


def _mysql_long(name: str) -> Any:
    """MySQL's LONGTEXT/LONGBLOB (TEXT and BLOB stop at 64 KB), still a Text/LargeBinary for :func:`_fit`."""
    from sqlalchemy.dialects import mysql

    return mysql.LONGTEXT() if name == "LONGTEXT" else mysql.LONGBLOB()


def _key_columns(catalog: Any) -> set[tuple[str, str]]:
    """(table, column), lower-cased, of every primary-key column and both ends of every foreign key."""
    found = set()
    for table in catalog.tables:
        found.update((table.name.lower(), k.lower()) for k in table.primary_key)
        for column, ref_table, ref_column in table.foreign_keys:
            found.add((table.name.lower(), column.lower()))
            found.add((ref_table.lower(), ref_column.lower()))
    return found


def _integer_foreign_keys(catalog: Any, rows: dict[str, list[tuple]]) -> set[tuple[str, str]]:
    """(table, column), lower-cased, of foreign keys declared text that hold only integers (``'3'``) and refer to an
    integer column: copied as integers, so the target engine keeps the key (it refuses one between two types)."""
    found = set()
    for table in catalog.tables:
        for column, ref_table, ref_column in table.foreign_keys:
            referred = catalog.table(ref_table)
            ref = referred.column(ref_column) if referred is not None else None
            own = table.column(column)
            if ref is None or own is None or "INT" not in ref.type.upper() or "INT" in own.type.upper():
                continue
            ref_index = referred.column_names.index(ref.name)
            index = table.column_names.index(own.name)
            integers = all(isinstance(r[ref_index], int) for r in rows[referred.name])
            if integers and all(r[index] is None or _integer_text(r[index]) for r in rows[table.name]):
                found.add((table.name.lower(), own.name.lower()))
    return found


def _with_integers(catalog: Any, rows: dict[str, list[tuple]], columns: set[tuple[str, str]]) -> dict[str, list[tuple]]:
    """``rows`` with the values of ``columns`` ((table, column), lower-cased) as integers: ``'3'`` is 3."""
    converted = dict(rows)
    for table in catalog.tables:
        positions = {i for i, name in enumerate(table.column_names) if (table.name.lower(), name.lower()) in columns}
        if positions:
            converted[table.name] = [tuple(int(v) if i in positions and v is not None else v for i, v in enumerate(r))
                                     for r in rows[table.name]]
    return converted


def _integer_text(value: Any) -> bool:
    """An int, or text that is one written plainly (``'12'``, not ``'012'`` or ``' 12'``)."""
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.lstrip("-").isdigit() and str(int(value)) == value


def _fit(row: tuple, table: Any) -> list:
    """Values as the target column stores them (text columns get text)."""
    out = []
    for value, column in zip(row, table.columns):
        textual = column.type.__class__.__name__ in ("Text", "LONGTEXT", "String")
        if value is not None and textual and not isinstance(value, str):
            value = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        out.append(value)
    return out


def _unique_key(rows: list[tuple], positions: list[int], *, fold_text: bool = False) -> bool:
    """Whether the key is never NULL and never repeats (with ``fold_text``, as MySQL compares text: case and
    trailing spaces aside)."""
    fold = (lambda v: v.lower().rstrip() if isinstance(v, str) else v) if fold_text else (lambda v: v)
    keys = [tuple(fold(r[i]) for i in positions) for r in rows]
    return all(None not in k for k in keys) and len(set(keys)) == len(keys)


def _add_foreign_keys(catalog: Any, rows: dict[str, list[tuple]], metadata: Any, fold: Any, fold_column: Any,
                      constraint: Any) -> None:
    """Foreign keys the stored rows obey, to another table's primary key (SQLite does not insist; the targets do).
    ``fold``/``fold_column``: a table's/column's name in the target."""
    for table in catalog.tables:
        target_table = metadata.tables[fold(table.name)]
        for column, ref_table, ref_column in table.foreign_keys:
            referred = metadata.tables.get(fold(ref_table))
            source_table = catalog.table(ref_table)
            own = table.column(column)
            ref = source_table.column(ref_column) if source_table is not None else None
            if referred is None or referred is target_table or own is None or ref is None:
                continue
            if [c.name for c in referred.primary_key.columns] != [fold_column(ref.name)]:
                continue
            source_type = target_table.columns[fold_column(own.name)].type
            if type(source_type) is not type(referred.columns[fold_column(ref.name)].type):
                continue  # MySQL refuses a key between columns of different types
            keys = {r[source_table.column_names.index(ref.name)] for r in rows[source_table.name]}
            index = table.column_names.index(own.name)
            if all(r[index] is None or r[index] in keys for r in rows[table.name]):
                target = f"{fold(source_table.name)}.{fold_column(ref.name)}"
                target_table.append_constraint(constraint([fold_column(own.name)], [target]))
