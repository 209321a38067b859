"""What the name check says about an unknown or ambiguous name: the error, "did you mean", and the
real column lists, with names shown as written, as one :class:`~.findings.Finding`."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.names import did_you_mean, written

__all__ = ["NameMessages"]

_MAX_LISTED_COLUMNS = 25
_MAX_LISTED_TABLES = 30

Source = exp.Table | Scope
Sources = list[tuple[str, Source]]


class NameMessages:
    """The messages for one query; ``columns_of`` gives (lower-case names, complete) of a source."""

    def __init__(self, schema: CatalogSchema, sql: str, columns_of: Callable[[Source], tuple[frozenset[str], bool]]):
        self.schema = schema
        self.sql = sql
        self.columns_of = columns_of

    def unknown_table(self, table: exp.Table, key: str) -> Finding:
        shown = written(table.this, self.sql)
        hints = [did_you_mean(key, self.schema.table_names.values())]
        if len(self.schema.table_names) <= _MAX_LISTED_TABLES:
            hints.append(f"available tables: {', '.join(self.schema.catalog.table_names)}")
        owners = self.schema.column_owners.get(key)
        if owners:
            hints.append(f"'{shown}' is a column of {', '.join(owners[:5])}, not a table")
        return Finding(kind=Kind.UNKNOWN_TABLE, message=f"unknown table '{shown}'", where=shown, suggestions=hints)

    def unknown_qualifier(self, column: exp.Column, by_name: dict[str, Source]) -> Finding:
        qualifier = column.table
        shown_q = written(column.args.get("table"), self.sql)
        shown = f"{shown_q}.{'*' if isinstance(column.this, exp.Star) else written(column.this, self.sql)}"
        tables = self.schema.table_names
        hints = []
        aliased = [n for n, s in by_name.items() if isinstance(s, exp.Table) and s.name == qualifier and n != qualifier]
        if aliased:
            hints.append(
                f"table {tables.get(qualifier, qualifier)} is aliased as {aliased[0]} here: "
                f"write {aliased[0]}.{shown.split('.', 1)[1]}"
            )
        elif qualifier in tables:
            hints.append(f"table {tables[qualifier]} is not in this query's FROM clause: join it first")
        else:
            hints.append(did_you_mean(qualifier, by_name.keys()))
        if by_name:
            hints.append("tables/aliases here: " + ", ".join(self._label(n, s) for n, s in by_name.items()))
        message = f"unknown table or alias '{shown_q}' in '{shown}'"
        return Finding(kind=Kind.UNKNOWN_ALIAS, message=message, where=shown, suggestions=hints)

    def ambiguous_column(self, column: exp.Column, matches: list[str], by_name: dict[str, Source]) -> Finding:
        name = written(column.this, self.sql)
        shown = ", ".join(self._label(n, by_name[n]) for n in matches)
        return Finding(
            kind=Kind.AMBIGUOUS_COLUMN,
            message=f"ambiguous column '{name}' (in {shown}): qualify it",
            where=name,
            suggestions=(
                f"write {matches[0]}.{name} (or the right one of: " + ", ".join(f"{m}.{name}" for m in matches) + ")",
            ),
        )

    def unknown_column(self, column: exp.Column, sources: Sources, outer: Sources | None = None) -> Finding:
        """Report ``column``; suggest from ``sources`` (listed) and ``outer`` (correlated, not listed)."""
        shown_name = written(column.this, self.sql)
        shown = f"{written(column.args.get('table'), self.sql)}.{shown_name}" if column.table else shown_name
        candidates: dict[str, str] = {}
        listings = []
        for source_name, source in sources:
            label, display = self._display_columns(source_name, source)
            for col in display:
                candidates.setdefault(col.lower(), f"{source_name}.{col}" if len(sources) > 1 else col)
            if display:
                more = len(display) - _MAX_LISTED_COLUMNS
                listed = ", ".join(display[:_MAX_LISTED_COLUMNS]) + (f", ... (+{more})" if more > 0 else "")
                listings.append(f"columns of {label}: {listed}")
        for source_name, source in outer or []:
            for col in self._display_columns(source_name, source)[1]:
                candidates.setdefault(col.lower(), f"{source_name}.{col}")
        hints = [did_you_mean(column.name, candidates.keys(), qualify=candidates), *listings[:4]]
        in_query = {s.name for _, s in [*sources, *(outer or [])] if isinstance(s, exp.Table)}
        elsewhere = [t for t in self.schema.column_owners.get(column.name, ()) if t.lower() not in in_query]
        if elsewhere:
            hints.append(f"'{shown_name}' is a column of {', '.join(elsewhere[:5])}: join that table to use it")
        return Finding(kind=Kind.UNKNOWN_COLUMN, message=f"unknown column '{shown}'", where=shown, suggestions=hints)

    def quoted_string(self, column: exp.Column, sources: Sources) -> Finding:
        """The warning for an unknown double-quoted name used as a column, which SQLite reads as a string."""
        hint = did_you_mean(column.name, {c for n, src in sources for c in self._display_columns(n, src)[1]})
        shown = written(column.this, self.sql)
        message = f"\"{shown}\" is not a column, so SQLite returns the constant string '{shown}' there" + (
            f" ({hint})" if hint else ""
        )
        return Finding(kind=Kind.QUOTED_NAME, message=message, where=shown)

    def _display_columns(self, source_name: str, source: Source) -> tuple[str, tuple[str, ...]]:
        """(label, column names as declared) of a FROM source."""
        if isinstance(source, exp.Table) and source.name in self.schema.column_display:
            return self.schema.table_names[source.name], self.schema.column_display[source.name]
        cols, _ = self.columns_of(source)
        return source_name, tuple(sorted(cols))

    def _label(self, name: str, source: Source) -> str:
        tables = self.schema.table_names
        if isinstance(source, exp.Table) and source.name != name:
            return f"{name} ({tables.get(source.name, source.name)})"
        if isinstance(source, exp.Table):
            return tables.get(source.name, name)
        return name
