"""Names in a query: compared as the database compares them, shown as the user wrote them.

The validator compares every name case-insensitively (SQLite, DuckDB; for PostgreSQL the dry
run has the last word), so :func:`normalize_names` lower-cases the tree with sqlglot's
``normalize_identifiers``. Messages quote names as written: :func:`written` reads them back from
the column's stored parts or from the query text.
"""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz import fuzz, process
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

__all__ = ["did_you_mean", "normalize_names", "written"]

# Every identifier lower-cased, quoted or not, and not only its ASCII letters.
_CASE_INSENSITIVE = Dialect(normalization_strategy=NormalizationStrategy.CASE_INSENSITIVE)
CLOSE_SPELLING = 60.0  # rapidfuzz's fuzz.ratio, 0 to 100: a name this close to another is suggested for it


def normalize_names(tree: exp.Expr) -> exp.Expr:
    """Lower-case every identifier of ``tree`` in place; columns keep their parts as written."""
    return normalize_identifiers(tree, dialect=_CASE_INSENSITIVE, store_original_column_identifiers=True)


def written(node: exp.Expr | None, sql: str) -> str:
    """``node``'s name as it stands in ``sql``, the text ``node`` was parsed from ("" for None)."""
    if node is None:
        return ""
    if isinstance(node, exp.TableAlias) and node.this is not None:
        node = node.this
    if not isinstance(node, exp.Identifier):
        return node.name
    parent = node.parent
    if isinstance(parent, exp.Column):  # normalize_identifiers kept its parts
        parts, original = parent.parts, parent.meta.get("dot_parts")
        if original and len(original) == len(parts):
            return next((text for part, text in zip(parts, original) if part is node), node.this)
    start, end = node.meta.get("start"), node.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return node.this
    text = sql[start : end + 1]
    if node.quoted and len(text) >= 2:
        close = text[-1]
        text = text[1:-1].replace(close * 2, close)
    return text if text.lower() == node.this else node.this


def did_you_mean(name: str, candidates: Iterable[str], qualify: dict[str, str] | None = None) -> str:
    """``did you mean: a, b?`` for up to three candidates close to ``name``; "" when none is.

    Close means similar spelling (an Indel similarity of at least :data:`CLOSE_SPELLING`, closest first, equally
    close ones by name in descending order, whatever the candidates' order), else one name containing the other.
    ``qualify`` maps a lower-case candidate to how it is shown (``users.email``).
    """
    pool = {c.lower(): c for c in candidates}
    close = process.extract(name.lower(), list(pool), scorer=fuzz.ratio, score_cutoff=CLOSE_SPELLING, limit=None)
    matches = [m for m, _, _ in sorted(close, key=lambda hit: (hit[1], hit[0]), reverse=True)[:3]]
    if not matches:
        matches = [k for k in pool if name.lower() in k or (len(k) > 2 and k in name.lower())][:3]
    if not matches:
        return ""
    shown = [qualify[m] if qualify and m in qualify else pool[m] for m in matches]
    return f"did you mean: {', '.join(shown)}?"
