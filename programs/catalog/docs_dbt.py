"""dbt's ``schema.yml``: descriptions of models, seeds, snapshots and sources' tables, and their columns.

::

    models:
      - name: reactors
        description: One row per reactor.
        columns:
          - name: reactor_type
            description: The reactor's design.
            data_tests:
              - accepted_values: {values: ['PWR', 'BWR']}

A column's ``accepted_values`` test lists its values. A source table is named by its ``identifier`` when it
has one (the table's name in the database). A file of this project's own table format (``name``,
``description``, ``columns``) is read the same way. Other YAML (``dbt_project.yml``) adds nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from text2sql_dspy.programs.catalog.docs import Docs, described, name_key
from text2sql_dspy.programs.errors import SchemaFileError

NODE_KEYS = ("models", "seeds", "snapshots")


def read_dbt_files(files: list[Path], origin: str) -> Docs:
    """The docs in every file; a later file's text wins over an earlier one's. No docs at all is an error."""
    docs = Docs(origin=origin)
    for file in files:
        docs = dbt_docs(_read_yaml(file)).merged(docs)
    if not docs:
        raise SchemaFileError(
            f"{origin}: no described models, sources or tables. A dbt schema.yml lists "
            "'models: - name: T, description: ..., columns: - name: c, description: ...'."
        )
    return Docs(docs.tables, docs.columns, origin)


def dbt_docs(document: Any) -> Docs:
    """The docs in one parsed YAML document."""
    tables: dict[str, str] = {}
    columns: dict[tuple[str, str], str] = {}
    for node in dbt_nodes(document):
        table = name_key(str(node.get("identifier") or node["name"]))
        if node.get("description"):
            tables[table] = described(str(node["description"]))
        for column in _mappings(node.get("columns")):
            if column.get("name") is None:
                continue
            text = described(str(column.get("description") or ""), accepted_values(column))
            if text:
                columns[(table, name_key(str(column["name"])))] = text
    return Docs(tables, columns)


def dbt_nodes(document: Any) -> list[dict[str, Any]]:
    """The table-like entries of a document: models, seeds, snapshots, sources' tables, or one table file."""
    if not isinstance(document, dict):
        return []
    if "name" in document and isinstance(document.get("columns"), list):
        return [document]  # this project's own table file
    nodes = [n for key in NODE_KEYS for n in _mappings(document.get(key))]
    for source in _mappings(document.get("sources")):
        nodes.extend(_mappings(source.get("tables")))
    return [n for n in nodes if n.get("name") is not None]


def accepted_values(column: dict[str, Any]) -> str:
    """The values an ``accepted_values`` test allows, quoted, or ""."""
    for test in [*_listed(column.get("data_tests")), *_listed(column.get("tests"))]:
        if isinstance(test, dict) and isinstance(test.get("accepted_values"), dict):
            values = test["accepted_values"].get("values") or []
            return ", ".join(f"'{v}'" for v in values)
    return ""


def _read_yaml(file: Path) -> Any:
    try:
        return yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SchemaFileError(f"{file}: cannot parse ({' '.join(str(exc).split())}). Fix the file's syntax.") from exc


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mappings(value: Any) -> list[dict[str, Any]]:
    return [v for v in _listed(value) if isinstance(v, dict)]
