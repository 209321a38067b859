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

from text2sql_dspy.optimize.metrics import compare_execution
from text2sql_dspy.programs.agents.carried import carry
from text2sql_dspy.programs.query.tables_read import tables_read
from text2sql_dspy.programs.source import open_source

NO_DEMO_PREDICTORS = ("repair.react", "repair.extract", "judge")  # and the predictors inside them


def compact_demos(program: dspy.Module, *, carried: bool = False) -> dict[str, int]:
    """Shrink ``program``'s demos in place; returns the number of demos left per predictor. ``carried``: the demos
    left are marked as worked examples over another database (:func:`~..agents.carried.carry`), to be shown on
    databases the compile never saw."""
    counts = {}
    for name, predictor in program.named_predictors():
        if any(name == kept or name.startswith(f"{kept}.") for kept in NO_DEMO_PREDICTORS):
            predictor.demos = []
        else:
            # a labeled demo meant for another predictor has none of this one's outputs: never shown, so not kept
            outputs = predictor.signature.output_fields.keys()
            fields = predictor.signature.fields.keys()
            kept = [_compact(_only(demo, fields)) for demo in predictor.demos if outputs & demo.keys()]
            predictor.demos = [carry(demo) for demo in kept] if carried else kept
        counts[name] = len(predictor.demos)
    return counts


def _only(demo: Any, fields: Iterable[str]) -> Any:
    """``demo`` with only the signature's ``fields`` (and DSPy's ``augmented`` flag): a trace's demo also holds the
    reply's token log-probabilities, which no prompt shows."""
    keep = {*fields, "augmented"}
    return dspy.Example(**{k: v for k, v in demo.items() if k in keep}) if isinstance(demo, dspy.Example) else demo


def varied_drafts(program: dspy.Module, keep: int) -> None:
    """Keep, of each SQL-writing predictor's demos, the ``keep`` whose queries differ most in shape: one at a time,
    the demo whose query adds the most shapes (:func:`sql_shapes`) not yet shown, the earlier on a tie."""
    for predictor in _sql_predictors(program):
        if len(predictor.demos) <= keep:
            continue
        pool = [(demo, sql_shapes(str(demo.get("sql") or ""))) for demo in predictor.demos]
        chosen, seen = [], set()
        while pool and len(chosen) < keep:
            best = max(pool, key=lambda pair: len(pair[1] - seen))
            pool.remove(best)
            chosen.append(best[0])
            seen |= best[1]
        predictor.demos = chosen


def _sql_predictors(program: dspy.Module) -> list[dspy.Predict]:
    """``program``'s predictors that write SQL (an ``sql`` output): the draft and the edit."""
    return [p for _, p in program.named_predictors() if "sql" in p.signature.output_fields]


SHAPES: dict[str, type[exp.Expression]] = {
    "join": exp.Join, "filter": exp.Where, "group": exp.Group, "having": exp.Having, "order": exp.Order,
    "limit": exp.Limit, "distinct": exp.Distinct, "nested": exp.Subquery, "set operation": exp.SetOperation,
    "count": exp.Count, "sum": exp.Sum, "average": exp.Avg, "max": exp.Max, "min": exp.Min, "case": exp.Case,
    "like": exp.Like, "negation": exp.Not,
}


def varied_first(examples: Sequence[dspy.Example]) -> list[dspy.Example]:
    """``examples`` with those whose gold SQL shows the most :data:`SHAPES` first (stable), so that a bootstrap,
    which keeps the first questions it answers right, learns from more than lookups."""
    return sorted(examples, key=lambda ex: -len(sql_shapes(str(ex.get("gold_sql") or ""))))


def sql_shapes(sql: str) -> set[str]:
    """The names of :data:`SHAPES` whose node ``sql`` holds (none where it does not parse)."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return set()
    return {name for name, node in SHAPES.items() if tree.find(node) is not None}


def keep_right_drafts(program: dspy.Module, examples: Sequence[dspy.Example]) -> int:
    """Drop the drafting demos whose SQL does not give its question's gold result; returns how many were dropped.

    A bootstrapped program answered its question right, but its trace can hold a sample drawn on the way, wrong
    itself, as the demo. A demo carried to other databases must be a right worked example, so each is run against
    the gold SQL of the training question it answers (``examples``: those with a ``gold_sql``, by question). A demo
    whose question is not among them is kept.
    """
    gold = {ex.question: ex for ex in examples if ex.get("gold_sql")}
    dropped = 0
    for predictor in _sql_predictors(program):
        kept = [demo for demo in predictor.demos if _gives_gold(demo, gold.get(demo.get("question")))]
        dropped += len(predictor.demos) - len(kept)
        predictor.demos = kept
    return dropped


def _gives_gold(demo: Any, example: dspy.Example | None) -> bool:
    if example is None:
        return True
    return compare_execution(str(demo.get("sql") or ""), example.gold_sql, example.db_path).match


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
    return example.copy(sql=example.gold_sql, hints="", facts="",
                        table_schemas=source.with_header(source.catalog.render(tables)))


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
