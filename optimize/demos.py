"""Few-shot demos small enough for a small model's context.

A bootstrapped drafting demo carries every table the retriever returned (~1,500 tokens on the
bundled database). :func:`compact_demos` keeps only the tables its own SQL uses, and drops the
demos of the ReAct loop's predictors, whose trajectories would fill the context on their own, and
of the judge: a bootstrapped judge demo is the judge's own verdict on a trace the metric accepted,
not the truth, so a compiled judge's demos lean one way and pull every score that way (see
docs/benchmarks.md, "Bundled test, four programs").
:func:`with_gold_draft` turns a training example into a labeled drafting demo (its gold SQL over
the tables that SQL reads), for optimizers' ``max_labeled_demos``. :func:`compact_reflections` does
for GEPA's reflective examples what :func:`compact_demos` does for demos.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dspy
import sqlglot
from sqlglot import exp

from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.query.tables_read import tables_read

NO_DEMO_PREDICTORS = ("repair.react", "repair.extract", "judge")  # and the predictors inside them


def compact_demos(program: dspy.Module) -> dict[str, int]:
    """Shrink ``program``'s demos in place; returns the number of demos left per predictor."""
    counts = {}
    for name, predictor in program.named_predictors():
        if any(name == kept or name.startswith(f"{kept}.") for kept in NO_DEMO_PREDICTORS):
            predictor.demos = []
        else:
            # a labeled demo meant for another predictor has none of this one's outputs: never shown, so not kept
            outputs = predictor.signature.output_fields.keys()
            predictor.demos = [_compact(demo) for demo in predictor.demos if outputs & demo.keys()]
        counts[name] = len(predictor.demos)
    return counts


def with_gold_draft(example: dspy.Example) -> dspy.Example:
    """``example`` plus the drafting step's fields, from its gold SQL: ``sql`` and the schemas it reads.

    DSPy shows such a demo with the fields it lacks (explanation, confidence) marked as not
    supplied. Examples whose gold SQL reads no known table are returned unchanged.
    """
    source = open_source(example.db_path)
    used = tables_read(example.gold_sql)
    tables = [name for name in source.catalog.table_names if name.lower() in used]
    if not tables:
        return example
    return example.copy(sql=example.gold_sql, hints="", facts="", table_schemas=source.with_header(source.catalog.render(tables)))


def _compact(demo: Any) -> Any:
    schemas, sql = demo.get("table_schemas"), demo.get("sql") or demo.get("sql_query")
    if not isinstance(schemas, str) or not isinstance(sql, str):
        return demo
    used = tables_read(sql)
    if not used:
        return demo
    return demo.copy(table_schemas=keep_tables(schemas, used))


def compact_reflections(dataset: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """GEPA's reflective examples, each input ``table_schemas`` cut to the tables its generated SQL reads.

    A reflective example is ``{"Inputs": {...}, "Generated Outputs": {...} or an error text, "Feedback": ...}``;
    three whole schemas of a large database would not fit a small reflection model's context.
    """
    return {name: [_compact_reflection(example) for example in examples] for name, examples in dataset.items()}


def _compact_reflection(example: Mapping[str, Any]) -> dict[str, Any]:
    inputs, outputs = example.get("Inputs"), example.get("Generated Outputs")
    schemas = inputs.get("table_schemas") if isinstance(inputs, Mapping) else None
    if not isinstance(schemas, str):
        return dict(example)
    sql = outputs.get("sql") if isinstance(outputs, Mapping) else None
    used = tables_read(sql) if isinstance(sql, str) else set()
    return {**example, "Inputs": {**inputs, "table_schemas": keep_tables(schemas, used)}}


def keep_tables(rendered: str, names: Iterable[str]) -> str:
    """Rendered schemas (blocks separated by blank lines) without the ``CREATE TABLE`` blocks of other tables.

    Blocks that create no table (the database header) are kept.
    """
    wanted = {n.lower() for n in names}
    blocks = rendered.split("\n\n")
    kept = [b for b in blocks if (name := _created_table(b)) is None or name in wanted]
    return "\n\n".join(kept)


def _created_table(block: str) -> str | None:
    try:
        tree = sqlglot.parse_one(block, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    if isinstance(tree, exp.Create) and (table := tree.find(exp.Table)) is not None:
        return table.name.lower()
    return None
