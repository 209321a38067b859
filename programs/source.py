"""A database paired with its catalog: what every program needs to answer questions about it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType

from text2sql_dspy.programs.bundled import BUNDLED_DB_ID, BUNDLED_SCHEMAS, ensure_bundled_database
from text2sql_dspy.programs.catalog.catalog import SCHEMA_SUFFIXES, Catalog, Column, load_schema_dir
from text2sql_dspy.programs.catalog.documentation import docs_beside, load_docs, with_docs
from text2sql_dspy.programs.catalog.introspection import introspect
from text2sql_dspy.programs.catalog.samples import sampled
from text2sql_dspy.programs.catalog.values import value_index
from text2sql_dspy.programs.db.address import parse_address
from text2sql_dspy.programs.db.database import Database
from text2sql_dspy.programs.db.dialect import DIALECT_NAMES, portable
from text2sql_dspy.programs.db.opening import open_database
from text2sql_dspy.programs.errors import DatabaseError, SchemaFileError
from text2sql_dspy.programs.examples.identity import catalog_key
from text2sql_dspy.programs.query.grouping import regrouped
from text2sql_dspy.programs.query.rename import renamed
from text2sql_dspy.programs.query.requalify import requalified
from text2sql_dspy.programs.query.validator import SQLValidator


@dataclass(frozen=True)
class DataSource:
    """A read-only database and the catalog describing it (with sample values).

    ``database`` is None when only schema files were given: queries are then checked
    statically, without a dry run.
    """

    db_id: str
    catalog: Catalog
    database: Database | None

    @cached_property
    def validator(self) -> SQLValidator:
        """The structural validator for this database, built once."""
        return SQLValidator(self.catalog, self.database, dialect=self.dialect, values=lambda: value_index(self))

    @cached_property
    def column_names(self) -> frozenset[str]:
        """Every column name in the catalog, lower-cased."""
        return frozenset(c.name.lower() for t in self.catalog.tables for c in t.columns)

    @cached_property
    def text_column_names(self) -> frozenset[str]:
        """Column names, lower-cased, that are text-typed in every table that has them."""
        return self._names_typed_everywhere(lambda column: column.stores_text)

    @cached_property
    def integer_column_names(self) -> frozenset[str]:
        """Column names, lower-cased, that are integer-typed in every table that has them."""
        return self._names_typed_everywhere(lambda column: column.stores_integer)

    def _names_typed_everywhere(self, is_typed: Callable[[Column], bool]) -> frozenset[str]:
        typed: dict[str, set[bool]] = {}
        for table in self.catalog.tables:
            for column in table.columns:
                typed.setdefault(column.name.lower(), set()).add(is_typed(column))
        return frozenset(name for name, kinds in typed.items() if kinds == {True})

    @cached_property
    def catalog_validator(self) -> SQLValidator:
        """The validator against the catalog alone: names and structure, no dry run."""
        return SQLValidator(self.catalog, None, dialect=self.dialect)

    def names_only_its_own(self, sql: str) -> bool:
        """Whether ``sql`` passes :attr:`catalog_validator`: every table and column it names is here."""
        return self.catalog_validator.validate(sql).valid

    def runnable(self, sql: str, shown: Mapping[str, str] = MappingProxyType({})) -> str:
        """A drafted ``sql`` as this engine needs it: tables the prompt ``shown`` under other names (lower-cased, as
        :attr:`~.schema_view.SchemaView.renamed` maps them) renamed to the stored ones (:func:`~.rename.renamed`), a
        column on the wrong table moved to the one that has it
        (:func:`~.requalify.requalified`), a join ranked by an aggregate it has no group for grouped by the rows it
        shows (:func:`~.grouping.regrouped`), then SQLite habits carried to this engine (:func:`~.dialect.portable`).
        A query too deeply nested to rewrite is returned as it is, for the validator to refuse."""
        try:
            sql = regrouped(requalified(renamed(sql, shown, self.dialect), self.catalog, self.dialect), self.dialect)
            return portable(sql, self.dialect, self.column_names, self.text_column_names, self.integer_column_names)
        except RecursionError:
            return sql

    @cached_property
    def store_key(self) -> str:
        """The key the example store and the calibrations file this database under
        (:func:`~.examples.identity.database_key`)."""
        return catalog_key(self.db_id, self.catalog)

    @property
    def dialect(self) -> str:
        return self.database.dialect if self.database is not None else "sqlite"

    @cached_property
    def whole_schema(self) -> str:
        """Every table, rendered in catalog order under the header: the same text for every question."""
        return self.with_header(self.catalog.render())

    def with_header(self, schemas: str, name: str | None = None) -> str:
        """Rendered schemas under a line naming the database (or ``name``, a namespace of it shown as a database of
        its own) and its SQL dialect."""
        return f"-- {DIALECT_NAMES.get(self.dialect, self.dialect)} database {name or self.db_id!r}\n\n{schemas}"


_cache: dict[tuple[str, str | None, str | None], DataSource] = {}
_asked: dict[tuple[str, str | None, str | None, str | None], DataSource] = {}  # (cwd, the arguments as given) -> source
_lock = threading.Lock()


def open_source(
    db_path: Path | str | None, schema_dir: Path | str | None = None, docs: Path | str | None = None
) -> DataSource:
    """Open ``db_path`` (a SQLite path, or a ``sqlite:///``, ``postgresql://`` or ``duckdb:///`` URL) read-only
    and describe it, once per process for each (database, schema folder, docs).

    The catalog comes from ``schema_dir`` if given, else from ``schemas/<db_id>`` when the project
    ships one, else from introspecting the database. A schema folder that names tables or columns
    the database lacks raises :class:`SchemaFileError`. With no ``db_path``, the schema folder
    alone describes the data (the bundled schemas find their bundled database).

    ``docs`` (:func:`~.catalog.documentation.load_docs`: BIRD's ``database_description/``, dbt's ``schema.yml``)
    adds column and table descriptions; a SQLite file with a ``database_description/`` folder beside it (a BIRD
    download) gets that folder's without being asked.
    """
    asked = (_cwd(), *(None if arg is None else str(arg) for arg in (db_path, schema_dir, docs)))
    with _lock:
        source = _asked.get(asked)
    if source is None:
        source = _opened(db_path, schema_dir, docs)
        with _lock:
            _asked[asked] = source
    return source


def _opened(db_path: Path | str | None, schema_dir: Path | str | None, docs: Path | str | None) -> DataSource:
    if db_path is None:
        return _schema_only(schema_dir, docs)
    address = parse_address(db_path)
    db_id = address.db_id
    if schema_dir is None and (BUNDLED_SCHEMAS / db_id).is_dir():
        schema_dir = BUNDLED_SCHEMAS / db_id
    if docs is None and address.engine == "sqlite" and address.path is not None:
        docs = docs_beside(address.path)
    key = (address.key, _resolved(schema_dir), _resolved(docs))
    with _lock:
        if key not in _cache:
            database = open_database(address)
            actual = introspect(database)
            if not actual.tables:  # an empty file opens as an empty database: nothing to ask about
                raise DatabaseError(
                    f"{address.shown} has no tables (or none this role may read). Check --db, "
                    "or build the database first."
                )
            catalog = actual if schema_dir is None else load_schema_dir(Path(schema_dir), db_id)
            if schema_dir is not None:
                check_agreement(catalog, actual)
            if docs is not None:
                catalog = with_docs(catalog, load_docs(docs))
            _cache[key] = DataSource(db_id, sampled(catalog, database), database)
        return _cache[key]


def _cwd() -> str:
    """The folder relative paths resolve against, or "" when it is gone."""
    try:
        return os.getcwd()
    except OSError:
        return ""


def _resolved(path: Path | str | None) -> str | None:
    return None if path is None else str(Path(path).expanduser().resolve())


def _schema_only(schema_dir: Path | str | None, docs: Path | str | None = None) -> DataSource:
    if schema_dir is None:
        raise SchemaFileError("give a database (db_path) or a schema folder (schema_path).")
    folder = Path(schema_dir).resolve()
    tables_here = any(p.suffix.lower() in SCHEMA_SUFFIXES for p in folder.glob("*"))
    subfolders = [p for p in folder.glob("*") if p.is_dir()]
    if folder.is_dir() and not tables_here and len(subfolders) == 1:
        folder = subfolders[0]  # schemas/ holding one database's folder, as in schema_path="schemas/"
    if folder.parent == BUNDLED_SCHEMAS.resolve() and folder.name == BUNDLED_DB_ID:
        return open_source(ensure_bundled_database(), folder, docs)
    key = ("", str(folder), _resolved(docs))
    with _lock:
        if key not in _cache:
            catalog = load_schema_dir(folder)
            _cache[key] = DataSource(folder.name, catalog if docs is None else with_docs(catalog, load_docs(docs)),
                                     None)
        return _cache[key]


def check_agreement(declared: Catalog, actual: Catalog) -> None:
    """Raise :class:`SchemaFileError` listing every declared table or column the database lacks."""
    problems = []
    for table in declared.tables:
        real = actual.table(table.name)
        if real is None:
            problems.append(f"table {table.name} is not in the database")
            continue
        missing = [c.name for c in table.columns if real.column(c.name) is None]
        if missing:
            problems.append(f"{table.name} lacks column(s) {', '.join(missing)}")
    if problems:
        raise SchemaFileError(
            f"schema files disagree with database {actual.db_id}: {'; '.join(problems)}. "
            "Fix the schema files or point at the right database."
        )
