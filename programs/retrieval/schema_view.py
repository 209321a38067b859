"""The schema a drafting prompt shows, as text that stays the same from question to question.

The local model's KV cache reuses a prompt prefix only if it is identical byte for byte, and the
schema sits right after the instructions. So:

* a database whose whole schema fits ``budget_tokens`` is shown whole, in catalog order: one text
  per database, evaluated once and then served from the cache (and from disk, across processes);
* a larger one keeps retrieval, but the retrieved tables are rendered in catalog order, with no
  per-question scores, so questions on the same tables share their prompt;
* where the retrieved tables fall in more than one part of the schema (tables that declared foreign keys link,
  :meth:`~text2sql_dspy.programs.catalog.catalog.Catalog.parts`), only the top hit's part is rendered, whole
  where it fits ``PART_BUDGET`` tokens, with the tables no key links; the other parts' tables are named after it,
  without their columns (:func:`one_part`);
* a view that holds every table of each part it touches shows none of them briefly (:func:`whole_part`), as the
  part's own database would;
* where every rendered table of such a view has one namespace prefix (``concert_singer__singer``,
  ``concert_singer__concert``: :func:`~.query.rename.namespace`), they are shown by their own names, under the
  namespace's name as the database's, and no other namespace's table is named; :attr:`SchemaView.renamed` maps the
  names shown back to the stored ones, for the draft to be renamed before it is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from text2sql_dspy.programs.catalog.catalog import Catalog, Table
from text2sql_dspy.programs.query.rename import NAMESPACE_SEPARATOR, namespace, without
from text2sql_dspy.programs.retrieval.retriever import RetrievedTable, make_retriever
from text2sql_dspy.programs.source import DataSource

__all__ = ["CHARS_PER_TOKEN", "DEFAULT_COLD_BUDGET", "DEFAULT_FACTS_BUDGET", "DEFAULT_SCHEMA_BUDGET", "LINKED_TOP_K",
           "PART_BUDGET", "SchemaView",
           "estimated_tokens", "one_part", "schema_view", "whole_part", "without_prefix"]

# Characters a token of Qwen2.5's tokenizer on rendered DDL with comments, rounded down so that the
# estimate errs on the safe side.
CHARS_PER_TOKEN = 3.5
DEFAULT_SCHEMA_BUDGET = 9000  # tokens; the bundled 31-table schema is ~8,000
# Tokens above which ``ask`` shows a database no cache holds yet by its linked tables (the top 5 and those that join
# them: about 1,850 tokens of the bundled schema), rather than read it whole before its first answer.
DEFAULT_COLD_BUDGET = 2500
# Tokens of stored values and verified pairs shown with each question. Unlike the schema, they differ from
# question to question, so every call reads them anew: on a CPU they are what a question's latency grows with.
DEFAULT_FACTS_BUDGET = 300
# Tokens within which the top hit's part of the schema is shown whole rather than by its retrieved tables.
PART_BUDGET = 2500
LINKED_TOP_K = 3  # tables a view of the linked tables alone ranks before the keys that join them


@dataclass(frozen=True)
class SchemaView:
    """Tables shown to the model and their rendered text (under the database/dialect header)."""

    tables: list[str]
    text: str
    whole: bool
    facts: str = ""  # what is shown with the question: earlier turns, verified pairs, the hint, stored values
    namespace: str = ""  # the prefix every table shown has and is shown without (lower-cased); "" for none

    @property
    def renamed(self) -> dict[str, str]:
        """Each table shown under another name: that name (lower-cased) -> the table's stored name."""
        return {without(t, self.namespace).lower(): t for t in self.tables} if self.namespace else {}


def estimated_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def one_part(catalog: Catalog, hits: list[RetrievedTable],
             budget_tokens: int = PART_BUDGET) -> tuple[set[str], list[str]]:
    """The retrieved tables to render, and those only to name (lower-cased).

    Where ``hits`` (top hit first) fall in one part of the schema, or the top hit is in none, all are rendered.
    Else the top hit's part is rendered, whole if it fits ``budget_tokens`` and by its hits if not, with the hits no
    declared key links; the hits of other parts are only named."""
    names = {h.name.lower() for h in hits}
    if not hits:
        return names, []
    parts = catalog.parts()
    top = parts.get(hits[0].name.lower())
    others = [h.name.lower() for h in hits if parts.get(h.name.lower(), top) != top]
    if top is None or not others:
        return names, []
    members = [t for t in catalog.tables if parts.get(t.name.lower()) == top]
    rendered = {h.name.lower() for h in hits if parts.get(h.name.lower(), top) == top}
    if estimated_tokens("\n\n".join(t.render() for t in members)) <= budget_tokens:
        rendered |= {t.name.lower() for t in members}
    return rendered, others


def whole_part(catalog: Catalog, rendered: set[str]) -> bool:
    """Whether ``rendered`` (lower-cased names) holds every table of each part it touches, as the part's own
    database would show them: then no table of it is shown briefly."""
    parts = catalog.parts()
    touched = {parts[name] for name in rendered if name in parts}
    return all(name in rendered for name, number in parts.items() if number in touched)


def schema_view(
    source: DataSource, question: str, *, retrieval_type: str = "semantic", top_k: int = 5,
    budget_tokens: int = DEFAULT_SCHEMA_BUDGET, keep_to_one_part: bool = True,
) -> SchemaView:
    """The whole schema if it fits ``budget_tokens``, else the top-k retrieved tables, kept to the top hit's part of
    the schema with ``keep_to_one_part`` (see module docstring)."""
    whole = source.whole_schema
    if estimated_tokens(whole) <= budget_tokens:
        return SchemaView(source.catalog.table_names, whole, whole=True)
    hits = make_retriever(source.catalog, retrieval_type).search(question, top_k)
    join_only = {h.name.lower() for h in hits if h.via is not None}
    rendered, named = one_part(source.catalog, hits) if keep_to_one_part else ({h.name.lower() for h in hits}, [])
    ordered = [t for t in source.catalog.tables if t.name.lower() in rendered]
    prefix = namespace([t.name for t in ordered], source.catalog.table_names)
    brief = set() if whole_part(source.catalog, rendered) else join_only
    blocks = [without_prefix(t, prefix).render(brief=t.name.lower() in brief) for t in ordered]
    if named and not prefix:  # a namespace is shown as a database of its own: another namespace is not in it
        shown = [t.name for t in source.catalog.tables if t.name.lower() in set(named)]
        blocks.append(f"-- Also in this database, not linked to the tables above by any key: {', '.join(shown)}")
    text = "\n\n".join(blocks) if blocks else "-- no matching tables"
    name = ordered[0].name[:len(prefix) - len(NAMESPACE_SEPARATOR)] if prefix else None
    return SchemaView([t.name for t in ordered], source.with_header(text, name), whole=False, namespace=prefix)


def without_prefix(table: Table, prefix: str) -> Table:
    """``table`` named, and its keys' referenced tables named, without ``prefix`` (lower-cased) where they have it."""
    if not prefix:
        return table
    columns = [c.model_copy(update={"references": without(c.references, prefix)}) if c.references else c
               for c in table.columns]
    return table.model_copy(update={"name": without(table.name, prefix), "columns": columns})
