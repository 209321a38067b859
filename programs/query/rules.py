"""The checks of a parsed, read-only query, as rules in the manner of sqlglot's optimizer: :data:`RULES`, in order.

A rule is a plain function of a :class:`Query` that returns findings (:class:`~.findings.Finding`) and changes nothing:

1. :func:`names` — every table and column resolved against the catalog (:mod:`~.resolution`);
2. :func:`~.lints.select_star`, :func:`~.lints.limit_without_order`, :func:`~.lints.cartesian_join` — advice;
3. :func:`missing_values` — a literal that a column does not hold (:mod:`~.literals`), given the value index;
4. :func:`shows_key` — a key shown where the question asks for no id (:mod:`~.query_warnings`), given the question.

The last two (:data:`WHILE_VALID`) judge a query the database would take: :func:`apply` skips them once an error
has been found. :data:`AFTER_DRY_RUN` are the rules whose findings follow the validator's dry run. A rule that
fails says what went unchecked, or nothing, and never raises (but a value index getter that raises does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, wraps

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from text2sql_dspy.programs.catalog.catalog import Catalog
from text2sql_dspy.programs.catalog.values import ValueIndex
from text2sql_dspy.programs.query import literals
from text2sql_dspy.programs.query.catalog_schema import CatalogSchema
from text2sql_dspy.programs.query.findings import Finding, Kind, distinct, one_line
from text2sql_dspy.programs.query.lints import cartesian_join, limit_without_order, select_star
from text2sql_dspy.programs.query.query_warnings import asks_for_keys, key_findings
from text2sql_dspy.programs.query.resolution import check_names

__all__ = ["AFTER_DRY_RUN", "RULES", "WHILE_VALID", "Query", "Rule", "apply", "missing_values", "names", "shows_key"]


@dataclass(frozen=True)
class Query:
    """What the rules read about one query: built for one validation."""

    tree: exp.Expr  # the one statement, its names normalized (:func:`~.names.normalize_names`)
    sql: str  # the cleaned text ``tree`` was parsed from
    catalog: Catalog
    schema: CatalogSchema  # ``catalog`` as sqlglot's schema
    dialect: str = "sqlite"
    values: Callable[[], ValueIndex | None] | None = None  # the database's value index, when it has one
    question: str = ""  # what the query should answer; "" when unknown

    @cached_property
    def scopes(self) -> list[Scope]:
        """sqlglot's scopes of ``tree`` (``traverse_scope``), built once; raises as ``traverse_scope`` does."""
        return traverse_scope(self.tree)


Rule = Callable[[Query], Iterable[Finding]]


def names(query: Query) -> Iterator[Finding]:
    """The name check's findings; one that fails part-way keeps what it found and warns that names went unchecked."""
    try:
        yield from check_names(query.scopes, query.sql, query.schema)
    except RecursionError:
        yield Finding(kind=Kind.UNCHECKED, message="query too deeply nested to check table and column names")
    except Exception as exc:  # sqlglot's scope builder refuses some exotic shapes
        message = f"could not check table and column names ({one_line(str(exc))[:120]})"
        yield Finding(kind=Kind.UNCHECKED, message=message)


def missing_values(query: Query) -> list[Finding]:
    """The literals that fully indexed columns do not hold; none without a value index, or where the check fails."""
    index = query.values() if query.values is not None else None
    if index is None:
        return []
    try:
        return literals.missing_values(query.tree, query.catalog, index)
    except Exception:  # a shape sqlglot's scopes refuse: the name check has warned already
        return []


def shows_key(query: Query) -> list[Finding]:
    """The keys the answer shows, when there is a question and it asks for no id; none where the check fails."""
    if not query.question or asks_for_keys(query.question):
        return []
    try:
        return key_findings(query.tree, query.catalog, query.sql)
    except Exception:  # advice: never let it break validation
        return []


def _advice(lint: Rule) -> Rule:
    """``lint`` with its findings all or none: a lint that raises says nothing."""

    @wraps(lint)
    def contained(query: Query) -> list[Finding]:
        try:
            return list(lint(query))
        except Exception:  # warnings are advice: never let them break validation
            return []

    return contained


RULES: tuple[Rule, ...] = (
    names,
    *map(_advice, (select_star, limit_without_order, cartesian_join)),
    missing_values,
    shows_key,
)
WHILE_VALID: frozenset[Rule] = frozenset({missing_values, shows_key})
AFTER_DRY_RUN: frozenset[Rule] = frozenset({shows_key})


def apply(query: Query, rules: Iterable[Rule] = RULES, found: Iterable[Finding] = ()) -> list[Finding]:
    """``found``, then the findings of ``rules`` on ``query`` in order (:func:`~.findings.distinct`); a rule of
    :data:`WHILE_VALID` is skipped once any of them is an error."""
    found = list(found)
    for rule in rules:
        if rule in WHILE_VALID and any(finding.is_error for finding in found):
            continue
        found.extend(rule(query))
    return distinct(found)
