"""Documentation from where people keep it: column and table descriptions, and what stored values mean.

A :class:`Docs` maps tables and ``(table, column)`` pairs to one line of text each, read by
:func:`load_docs` from

* BIRD's ``database_description/<table>.csv`` files (:mod:`.docs_bird`), or the folder holding that folder;
* dbt's ``schema.yml`` (``models:``, ``seeds:``, ``snapshots:``, ``sources: - tables:``), one file or a
  folder of them (:mod:`.docs_dbt`).

:func:`with_docs` writes the text into a :class:`~.catalog.Catalog`'s descriptions, where the prompt's
schema shows it on each column's line. :func:`docs_beside` finds a BIRD download's docs by its layout:
``X/<db>.sqlite`` with ``X/database_description/`` beside it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from text2sql_dspy.programs.catalog import docs_bird, docs_dbt
from text2sql_dspy.programs.catalog.catalog import Catalog, Column, Table
from text2sql_dspy.programs.catalog.docs import Docs, name_key, one_line
from text2sql_dspy.programs.errors import SchemaFileError

logger = logging.getLogger(__name__)

BIRD_FOLDER = "database_description"
DBT_SUFFIXES = (".yml", ".yaml")
SKIPPED_DIRS = frozenset({"target", "dbt_packages", "node_modules", "logs"})  # dbt's build output and vendored code


@dataclass(frozen=True)
class DocsApplied:
    """What :func:`apply_docs` did: the described catalog, how many descriptions it took, and what matched nothing."""

    catalog: Catalog
    filled: int
    unmatched: tuple[str, ...]

    @property
    def note(self) -> str:
        shown = ", ".join(self.unmatched[:5]) + (", ..." if len(self.unmatched) > 5 else "")
        extra = f"; {len(self.unmatched)} described name(s) not in the database ignored: {shown}" \
            if self.unmatched else ""
        return f"docs: {self.filled} description(s) applied to {self.catalog.db_id}{extra}"


def load_docs(path: Path | str) -> Docs:
    """Docs from a BIRD ``database_description`` folder (or its parent), a dbt ``schema.yml``, or a folder of
    dbt ``.yml`` files. Anything else raises :class:`SchemaFileError` naming what is accepted."""
    target = Path(path).expanduser()
    if target.is_file() and target.suffix.lower() in DBT_SUFFIXES:
        return docs_dbt.read_dbt_files([target], origin=str(target))
    if target.is_dir():
        if (target / BIRD_FOLDER).is_dir():
            return docs_bird.read_bird_folder(target / BIRD_FOLDER)
        if any(p.suffix.lower() == ".csv" for p in target.iterdir()):
            return docs_bird.read_bird_folder(target)
        yml = _yml_files(target)
        if yml:
            return docs_dbt.read_dbt_files(yml, origin=str(target))
    what = "not found" if not target.exists() else "not documentation this tool reads"
    raise SchemaFileError(
        f"--docs {target}: {what}. Pass a BIRD database_description/ folder of <table>.csv files (or the folder "
        "holding it), a dbt schema.yml, or a folder of dbt .yml files."
    )


def docs_beside(db_path: Path | str) -> Path | None:
    """A BIRD download's ``database_description/`` folder beside the SQLite file ``db_path``, if there is one."""
    folder = Path(db_path).parent / BIRD_FOLDER
    return folder if folder.is_dir() else None


def with_docs(catalog: Catalog, docs: Docs) -> Catalog:
    """``catalog`` with ``docs``' descriptions filled in (:func:`apply_docs`); names it lacks are logged, not raised."""
    applied = apply_docs(catalog, docs)
    logger.info(applied.note)
    return applied.catalog


def apply_docs(catalog: Catalog, docs: Docs) -> DocsApplied:
    """Fill descriptions from ``docs``: an empty one takes the docs' text; a different one keeps its own and adds the
    docs'."""
    filled = 0
    tables = []
    for table in catalog.tables:
        columns = []
        for column in table.columns:
            text = combined(column.description, docs.column(table.name, column.name))
            filled += text != column.description
            columns.append(column if text == column.description else column.model_copy(update={"description": text}))
        description = combined(table.description, docs.table(table.name))
        filled += description != table.description
        tables.append(table.model_copy(update={"description": description, "columns": columns}))
    described_catalog = catalog.model_copy(update={"tables": tables})
    return DocsApplied(described_catalog, filled, unmatched(catalog, docs))


def combined(own: str, documented: str) -> str:
    """``own`` description and the ``documented`` one: either alone, or both when the docs say something new."""
    if not documented or one_line(documented, 10_000).lower() in one_line(own, 10_000).lower():
        return own
    if not own.strip():
        return documented
    return f"{own.rstrip()} {documented}" if own.rstrip()[-1:] in ".;:!?" else f"{own.rstrip()}; {documented}"


def unmatched(catalog: Catalog, docs: Docs) -> tuple[str, ...]:
    """Described tables and ``table.column`` names that ``catalog`` lacks, sorted."""
    known_tables = {name_key(t.name): t for t in catalog.tables}
    missing = {t for t in docs.tables if t not in known_tables}
    for table, column in docs.columns:
        real: Table | None = known_tables.get(table)
        col: Column | None = None if real is None else real.column(column)
        if col is None:
            missing.add(f"{table}.{column}")
    return tuple(sorted(missing))


def _yml_files(folder: Path) -> list[Path]:
    """``.yml``/``.yaml`` files under ``folder``, leaving out hidden folders and dbt's build output."""
    found = []
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts[:-1]
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in parts):
            continue
        if path.is_file() and path.suffix.lower() in DBT_SUFFIXES:
            found.append(path)
    return found
