"""A :class:`Catalog` as sqlglot's schema: where the name check looks tables and columns up.

:class:`CatalogSchema` is a sqlglot ``MappingSchema`` (``{schema: {table: {column: type}}}``, names
lower-cased) that looks a query's table up the way the database would: a bare name, or one in a
default schema (``main``, ``public``), reads the default schema; ``schema.table`` reads that schema
when the catalog has it; any other qualifier is another database, which is not checked. It also keeps
what the messages show: names as declared, column lists, which tables own a column.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.schema import MappingSchema

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.query.tables_read import DEFAULT_SCHEMAS

__all__ = ["CatalogSchema", "SYSTEM_COLUMNS"]

# Implicit columns every ordinary table has, per dialect.
SYSTEM_COLUMNS = {
    "sqlite": frozenset({"rowid", "oid", "_rowid_"}),
    "postgres": frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"}),
    "duckdb": frozenset({"rowid"}),
}


class CatalogSchema(MappingSchema):
    """The catalog's tables and columns for sqlglot, plus their declared spellings for messages.

    Built once per validator and only read afterwards (sqlglot's lookup caches aside), so it is
    safe to share between threads.
    """

    def __init__(self, catalog: Catalog, dialect: str = "sqlite"):
        self.catalog = catalog
        self.dialect_name = dialect
        self.default_schemas = DEFAULT_SCHEMAS.get(dialect, frozenset())
        self.system_columns = SYSTEM_COLUMNS.get(dialect, frozenset())
        self._home = min(self.default_schemas, default="main")  # where bare names live in the mapping
        # catalog key (lower-case ``name`` or ``schema.name``) -> catalog name / column names as declared
        self.table_names: dict[str, str] = {t.name.lower(): t.name for t in catalog.tables}
        self.column_display: dict[str, tuple[str, ...]] = {
            t.name.lower(): tuple(t.column_names) for t in catalog.tables
        }
        self.schemas = {key.rsplit(".", 1)[0] for key in self.table_names if "." in key}
        owners: dict[str, list[str]] = {}
        mapping: dict[str, dict[str, dict[str, str]]] = {}
        self._paths: dict[str, exp.Table] = {}  # catalog key -> the table's path in the mapping
        for t in catalog.tables:
            db, _, name = t.name.lower().rpartition(".")
            mapping.setdefault(db or self._home, {})[name] = {c.name.lower(): c.type for c in t.columns}
            self._paths[t.name.lower()] = exp.Table(
                this=exp.to_identifier(name), db=exp.to_identifier(db or self._home)
            )
            for c in t.columns:
                owners.setdefault(c.name.lower(), []).append(t.name)
        self.column_owners: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in owners.items()}
        super().__init__(mapping, dialect=dialect, normalize=False)

    def table_key(self, table: exp.Table) -> str | None:
        """The catalog key of ``table`` (``name`` or ``schema.name``); None when it names another database."""
        db = table.text("db")
        if not db or db in self.default_schemas:
            return table.name
        if db in self.schemas:
            return f"{db}.{table.name}"
        return None

    def column_names(
        self, table: exp.Table | str, only_visible: bool = False, dialect=None, normalize=None
    ) -> list[str]:
        """Lower-case column names of ``table`` in declaration order; [] for a table not in the catalog."""
        if isinstance(table, exp.Table):
            key = self.table_key(table) if isinstance(table.this, exp.Identifier) else None
            path = self._paths.get(key) if key is not None else None
            if path is None:
                return []
            table = path
        return super().column_names(table, only_visible, dialect, normalize)
