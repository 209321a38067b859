"""Name resolution: every table and column of a query, checked against the catalog at once.

Built on sqlglot's optimizer parts: ``traverse_scope`` gives each query level (CTEs, derived tables,
subqueries, set-operation arms) and its FROM sources; :class:`CatalogSchema` (a ``MappingSchema``)
gives a stored table's columns; ``Resolver.outer_resolvers`` gives the enclosing levels a correlated
subquery can see. What a derived table or CTE exposes is read off its projections the way SQLite
names them: ``*`` expanded, an unnamed expression (``count(*)``) making the list open-ended, so
that nothing is reported that the database would accept.

sqlglot's own column lookups (``Resolver.get_source_columns``, ``Scope.columns``,
``Scope.external_columns``) expect a query that ``qualify`` has already rewritten: before that they
raise on a repeated source name, name ``CAST(a AS TEXT)`` ``a``, leave ``*`` unexpanded, drop an
unqualified HAVING column and count every unqualified column of a subquery as the outer query's.
So projections are read here, and only the parts that hold on a query as written are sqlglot's.

Every unknown or ambiguous name is reported, each with "did you mean" and the real column lists; an
unknown column that names a table (``COUNT(attendance)``) is told so, with how to count its rows or
which of its columns to read.
Names are compared lower-cased (:func:`~.names.normalize_names` runs first) and shown as written.
:func:`check_names` gives the findings, :func:`catalog_tables` the catalog tables read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlglot import exp
from sqlglot.optimizer.resolver import Resolver
from sqlglot.optimizer.scope import Scope, walk_in_scope

from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Finding, Kind
from text2sql_dspy.programs.query.names import did_you_mean, written
from text2sql_dspy.programs.query.tables_read import scope_sources, table_sources

__all__ = ["NameMessages", "catalog_tables", "check_names"]

_MAX_DEPTH = 50  # nested derived tables and CTEs followed when listing a source's columns

Columns = tuple[frozenset[str], bool]  # lower-case names, and whether that is all of them


def check_names(scopes: list[Scope], sql: str, schema: CatalogSchema) -> Iterator[Finding]:
    """The findings on the query that ``scopes`` cover (sqlglot's ``traverse_scope`` of a normalized tree parsed
    from ``sql``): its tables first, then each query level's columns."""
    if not scopes:
        yield _unchecked("could not check table and column names (no query scope)")
        return
    check = _NameCheck(schema, sql)
    for table in table_sources(scopes):
        yield from check.table(table)
    for scope in scopes:
        yield from check.columns(scope)


def _names_within(table: str, name: str) -> bool:
    """Whether ``name`` ends or begins with ``table`` at a word: ``failed_login_attempts``, ``attendance_count``."""
    return name.endswith("_" + table) or name.startswith(table + "_")


def catalog_tables(scopes: list[Scope], schema: CatalogSchema) -> list[str]:
    """The catalog names of the stored tables ``scopes`` read, in the order they appear in the query, each once."""
    read = [(_position(t), real) for t in table_sources(scopes) if (real := _catalog_name(t, schema)) is not None]
    return list(dict.fromkeys(real for _, real in sorted(read)))


def _catalog_name(table: exp.Table, schema: CatalogSchema) -> str | None:
    """The catalog name of ``table``; None for a table-valued function, another database's table or an unknown one."""
    if not isinstance(table.this, exp.Identifier):
        return None
    key = schema.table_key(table)
    return None if key is None else schema.table_names.get(key)


def _unchecked(message: str, where: str = "") -> Finding:
    return Finding(kind=Kind.UNCHECKED, message=message, where=where)


class _NameCheck:
    """The name check of one query; lives for one call."""

    def __init__(self, schema: CatalogSchema, sql: str):
        self.schema = schema
        self.sql = sql
        self.say = NameMessages(schema, sql, self.columns_of)
        self._columns: dict[int, Columns] = {}

    # -- tables --------------------------------------------------------------------------------

    def table(self, table: exp.Table) -> Iterator[Finding]:
        """What is wrong with a FROM item that is no catalog table: nothing for one that is."""
        if not isinstance(table.this, exp.Identifier):
            func = table.this.sql_name() if isinstance(table.this, exp.Func) else table.sql(self.schema.dialect)
            name = table.this.name if isinstance(table.this, exp.Anonymous) else func
            yield _unchecked(f"table-valued function {name.lower()}(...): its columns were not checked")
            return
        key = self.schema.table_key(table)
        if key is None:
            shown = f"{written(table.args.get('db'), self.sql)}.{written(table.this, self.sql)}"
            yield _unchecked(f"table '{shown}' is in another database: not checked", shown)
            return
        if key in self.schema.table_names:
            return
        if key.startswith("sqlite_"):
            shown = written(table.this, self.sql)
            yield _unchecked(f"reads SQLite's system table {shown}: its columns were not checked", shown)
            return
        yield self.say.unknown_table(table, key)

    # -- what a source exposes -----------------------------------------------------------------

    def columns_of(self, source: exp.Table | Scope, depth: int = 0) -> Columns:
        """(lower-case column names, complete) a FROM source exposes; incomplete means 'maybe more'."""
        key = id(source)
        if key in self._columns:
            return self._columns[key]
        self._columns[key] = (frozenset(), False)  # guards recursive CTEs
        if isinstance(source, exp.Table):
            names = self.schema.column_names(source)
            result = (frozenset(names), True) if names else (frozenset(), False)
        elif depth > _MAX_DEPTH:
            result = (frozenset(), False)
        else:
            result = self._query_columns(source, depth + 1)
        self._columns[key] = result
        return result

    def _query_columns(self, scope: Scope, depth: int) -> Columns:
        if scope.outer_columns:
            return frozenset(c.lower() for c in scope.outer_columns), True
        query = scope.expression
        # the self-reference of a recursive CTE is scoped as its first arm, without the CTE's column list
        body = query.parent
        if isinstance(body, exp.SetOperation) and isinstance(body.parent, exp.CTE) and body.parent.alias_column_names:
            return frozenset(c.lower() for c in body.parent.alias_column_names), True
        if isinstance(query, exp.Subquery):
            query = query.unnest()
        if isinstance(query, exp.SetOperation):
            if scope.set_operation_scopes:
                return self.columns_of(scope.set_operation_scopes[0], depth)
            left = query.this.unnest() if isinstance(query.this, exp.Subquery) else query.this
            return _select_names(left)
        if not isinstance(query, exp.Select):
            return frozenset(), False
        names: set[str] = set()
        complete = True
        sources = dict(scope_sources(scope))
        for item in query.expressions:
            if isinstance(item, exp.Star):
                expanded = list(sources.values())
                complete = complete and bool(sources)
            elif isinstance(item, exp.Column) and isinstance(item.this, exp.Star):
                expanded = [sources[item.table]] if item.table in sources else []
                complete = complete and bool(expanded)
            elif isinstance(item, exp.Alias | exp.Column) and item.alias_or_name:
                names.add(item.alias_or_name.lower())
                continue
            else:
                complete = False  # an unnamed expression: SQLite names it by its text
                continue
            for source in expanded:
                cols, ok = self.columns_of(source, depth)
                names |= cols
                complete = complete and ok
        return frozenset(names), complete

    # -- columns -------------------------------------------------------------------------------

    def columns(self, scope: Scope) -> Iterator[Finding]:
        """What is wrong with the columns named at one query level."""
        query = scope.expression
        if isinstance(query, exp.SetOperation):
            yield from self._set_operation_order(query)
            return
        if not isinstance(query, exp.Select):
            return
        sources = scope_sources(scope)
        by_name = dict(sources)
        enclosing = [resolver.scope for resolver in Resolver(scope, self.schema).outer_resolvers()]  # nearest first
        outer = [source for parent in enclosing for source in scope_sources(parent)]
        aliases = {item.alias.lower() for item in query.expressions if isinstance(item, exp.Alias) and item.alias}
        shared = _using_columns(query)
        natural = any((j.method or "").upper() == "NATURAL" for j in query.args.get("joins") or [])

        for node in walk_in_scope(query):
            if node is query or type(node) is not exp.Column:
                continue
            column: exp.Column = node
            qualifier = column.table
            if isinstance(column.this, exp.Star):
                if qualifier and qualifier not in by_name and _named(outer, qualifier) is None:
                    yield self.say.unknown_qualifier(column, by_name)
                continue
            name = column.name
            if not name:
                continue
            if qualifier:
                source = by_name[qualifier] if qualifier in by_name else _named(outer, qualifier)
                if source is None:
                    yield self.say.unknown_qualifier(column, by_name)
                    continue
                cols, complete = self.columns_of(source)
                if (
                    name in cols
                    or not complete
                    or (name in self.schema.system_columns and isinstance(source, exp.Table))
                ):
                    continue
                yield self.say.unknown_column(column, [(qualifier, source)], here=sources + outer)
                continue

            # unqualified: ORDER BY may name a result alias first (SQLite resolves those first there)
            if name in aliases and _in_order_by_of(column, query):
                continue
            matches = []
            unsure = False
            for source_name, source in sources:
                cols, complete = self.columns_of(source)
                if name in cols:
                    matches.append(source_name)
                elif not complete:
                    unsure = True
            if len(matches) == 1:
                continue
            if len(matches) > 1:
                if name not in shared and not natural:
                    yield self.say.ambiguous_column(column, matches, by_name)
                continue
            if unsure or (name in aliases and not _in_select_list(column, query)):
                continue  # SQLite sees result aliases in ON/WHERE/GROUP BY/HAVING/ORDER BY, not in the list
            if name in self.schema.system_columns and any(isinstance(s, exp.Table) for _, s in sources):
                continue
            if self._resolves_outside(scope, enclosing, name):
                continue
            if (
                self.schema.dialect_name == "sqlite"
                and column.this.quoted
                and _quote_char(column.this, self.sql) == '"'
            ):
                # SQLite reads an unknown double-quoted name as a string. As a value (x = "Paris")
                # that is what was meant; as a whole result/sort/group column it is a bad name.
                if _used_as_column(column, query):
                    yield self.say.quoted_string(column, sources)
                continue
            yield self.say.unknown_column(column, sources, outer=outer)

    def _set_operation_order(self, query: exp.SetOperation) -> Iterator[Finding]:
        """ORDER BY of a UNION/INTERSECT/EXCEPT may only name result columns (of any arm)."""
        order = query.args.get("order")
        if order is None:
            return
        names: set[str] = set()
        for arm in query.find_all(exp.Select):
            if not arm.find_ancestor(exp.Subquery, exp.CTE):
                names.update(n.lower() for n in arm.named_selects if n)
        if not names:
            return
        for node in order.find_all(exp.Column):
            if not isinstance(node.this, exp.Star) and node.name and node.name not in names:
                term = written(node.this, self.sql)
                yield Finding(
                    kind=Kind.COMPOUND_ORDER_BY,
                    message=f"ORDER BY term '{term}' does not match a result column of the compound query",
                    where=term,
                    suggestions=(f"order by one of: {', '.join(sorted(names))}",),
                )

    def _resolves_outside(self, scope: Scope, enclosing: list[Scope], name: str) -> bool:
        """A correlated reference: ``name`` is a column of a source (or a result alias) of an enclosing query."""
        for parent in enclosing:
            for _, source in scope_sources(parent):
                cols, complete = self.columns_of(source)
                if name in cols or not complete:
                    return True
            if (
                isinstance(parent.expression, exp.Select)
                and name in {i.alias.lower() for i in parent.expression.expressions if isinstance(i, exp.Alias)}
                and not _in_select_list(scope.expression, parent.expression)
            ):
                return True
        return False


def _named(sources: list[tuple[str, exp.Table | Scope]], name: str) -> exp.Table | Scope | None:
    """The first source called ``name`` (the nearest, for an enclosing query's sources)."""
    return next((source for source_name, source in sources if source_name == name), None)


def _position(node: exp.Expr) -> int:
    """Where ``node`` starts in the query text (its first identifier), for reporting in reading order."""
    ident = node.find(exp.Identifier)
    start = ident.meta.get("start") if ident is not None else None
    return start if isinstance(start, int) else 1 << 30


def _quote_char(ident: exp.Identifier, sql: str) -> str:
    start = ident.meta.get("start")
    return sql[start] if isinstance(start, int) and 0 <= start < len(sql) else '"'


def _select_names(select: exp.Expr) -> Columns:
    if not isinstance(select, exp.Select):
        return frozenset(), False
    names = list(select.named_selects)
    complete = all(names) and "*" not in names
    return frozenset(n.lower() for n in names if n), complete


def _using_columns(select: exp.Select) -> set[str]:
    return {item.name.lower() for join in select.args.get("joins") or [] for item in join.args.get("using") or []}


def _in_select_list(node: exp.Expr, query: exp.Expr) -> bool:
    """True when ``node`` lies inside one of ``query``'s result expressions."""
    while node is not None and node.parent is not query:
        node = node.parent
    return node is not None and node.arg_key == "expressions"


def _used_as_column(column: exp.Column, query: exp.Select) -> bool:
    """True when ``column`` is a whole select item, ORDER BY term or GROUP BY term of ``query``."""
    parent = column.parent
    if isinstance(parent, exp.Alias | exp.Ordered):
        parent = parent.parent
    return parent is query or (isinstance(parent, exp.Order | exp.Group) and parent.parent is query)


def _in_order_by_of(column: exp.Column, query: exp.Expr) -> bool:
    order = column.find_ancestor(exp.Order, exp.Select, exp.SetOperation, exp.Window)
    return isinstance(order, exp.Order) and order.parent is query


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

    def unknown_column(
        self, column: exp.Column, sources: Sources, outer: Sources | None = None, here: Sources | None = None,
    ) -> Finding:
        """Report ``column``; suggest from ``sources`` (listed) and ``outer`` (correlated, not listed). ``here``: every
        source the query level sees (``sources`` and ``outer`` when not given), for telling a table used as a column."""
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
        message = f"unknown column '{shown}'"
        table = self._table_used_as_column(column.name, here if here is not None else [*sources, *(outer or [])])
        if table is not None:
            message += f": {self._not_a_column(shown_name, table, sources)}"
        return Finding(kind=Kind.UNKNOWN_COLUMN, message=message, where=shown, suggestions=hints)

    def _table_used_as_column(self, name: str, here: Sources) -> str | None:
        """The catalog key of the table ``name`` names, when no table the query reads has a column ``name``: the
        table of that name, else, where no table has such a column, the longest table name that ``name`` ends or
        begins with at a word (``failed_login_attempts``, ``attendance_count``)."""
        keys = [key for key in self.schema.table_names if key == name or key.rpartition(".")[2] == name]
        if not keys and name not in self.schema.column_owners:
            keys = sorted((key for key in self.schema.table_names if _names_within(key.rpartition(".")[2], name)),
                          key=lambda key: -len(key.rpartition(".")[2]))
        if not keys:
            return None
        read = {self.schema.table_key(s) for _, s in here if isinstance(s, exp.Table)}
        owners = {owner.lower() for owner in self.schema.column_owners.get(name, ())}
        return None if read & owners else keys[0]

    def _not_a_column(self, shown_name: str, key: str, sources: Sources) -> str:
        """'x is a table, not a column': how to count its rows (a join along a declared key where there is one)
        or which of its columns to read."""
        real = self.schema.table_names[key]
        if any(isinstance(s, exp.Table) and self.schema.table_key(s) == key for _, s in sources):
            count = "count its rows (COUNT(*))"
        else:
            count = f"count its rows (JOIN {real} ON {self._join_on(key, sources) or '...'} and COUNT(*))"
        columns = self.schema.column_display.get(key, ())
        more = len(columns) - _MAX_LISTED_COLUMNS
        listed = ", ".join(columns[:_MAX_LISTED_COLUMNS]) + (f", ... (+{more})" if more > 0 else "")
        said = f"'{shown_name}' is a table, not a column" if shown_name.lower() == key.rpartition(".")[2] else (
            f"'{real}' is a table")
        return f"{said}: {count}, or read one of its columns: {listed}"

    def _join_on(self, key: str, sources: Sources) -> str | None:
        """The ON condition joining table ``key`` to one of ``sources`` along a declared foreign key, or None."""
        table = self.schema.catalog.table(self.schema.table_names[key])
        if table is None:
            return None
        for _, source in sources:
            other_key = self.schema.table_key(source) if isinstance(source, exp.Table) else None
            if other_key not in self.schema.table_names:
                continue
            other = self.schema.catalog.table(self.schema.table_names[other_key])
            if other is None:
                continue
            alias = source.args.get("alias")
            label = written(alias.this, self.sql) if alias is not None and alias.this else other.name
            for col, ref_table, ref_col in table.foreign_keys:
                if ref_table.lower() == other_key:
                    return f"{table.name}.{col} = {label}.{ref_col}"
            for col, ref_table, ref_col in other.foreign_keys:
                if ref_table.lower() == key:
                    return f"{label}.{col} = {table.name}.{ref_col}"
        return None

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
