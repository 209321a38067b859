#!/usr/bin/env python
"""Two schema-linker designs out of fold on spider-train, over merged schemas of about 150 tables each.

    python benchmarks/fit_linker.py --train ../shared/benchmarks/spider-train [--folds 5] [--top-k 5]
        [--merged DIR/database/merged/merged.sqlite --merged-questions DIR/dev.json]

spider-train's 138 databases are dealt into ``--folds`` groups by name. Each group's databases are merged into one
catalog in memory, every table renamed ``<db>__<table>`` and its foreign keys pointed at the new names, as
``merge_schemas.py`` does on disk. Each question is ranked against its group's catalog, so its database's tables
compete with those of about 27 others.

- **A, today's retriever**: ``SemanticRetriever``'s blend, 0.5 MiniLM cosine and 0.5 BM25.
- **B, a fitted linker**: a logistic model over per-table signals. The signals are the two scores and their ranks,
  question words in the table's name and its columns' names, and whether the table is the blend's top hit or in
  the part of the schema that declared keys link to it. It is fitted on the other groups' questions, so each
  fold's databases are ones it never saw.

- **C, the blend within one part**: today's blend, keeping only the tables in the part of the schema that declared
  keys link to its top hit, and the tables no declared key links.
- **F, the blend within the part its top N vote for** (``--part-depths N ...``): as C, the part being the one whose
  tables among the blend's top N score most in sum.
- **P, the blend within the part that covers the question** (``--cover-depths N ...``): as C, the part being the
  one, among those of the blend's top N tables, whose table and column names hold the most of the question's
  words (stemmed); between equals, the part of the higher-ranked table.
- **V, C with the tables a value names** (``--value-bonus B ...``): the blend plus B for each table that stores a
  value one phrase of the question names exactly (``named_tables`` over the merged database's value index, as
  ``question_facts`` looks values up), then as C.

Each takes the top ``--top-k`` and the tables that join them (``expand_with_foreign_keys``). Printed for each: the
share of questions whose gold tables were all shown, the mean recall of gold tables, the mean number shown and how
many of them belong to another database than the question's (at ``--top-k`` and at 3).
With ``--merged``, both are also scored on a merged database's questions (B fitted on all of spider-train).
Nothing here changes the program.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from text2sql_dspy.programs.catalog.catalog import Catalog, Table, introspect_sqlite  # noqa: E402
from text2sql_dspy.programs.catalog.values import (  # noqa: E402
    ColumnValues,
    ValueIndex,
    ValueMatch,
    normalise,
    schema_words,
    value_index,
)
from text2sql_dspy.programs.catalog.words import stem  # noqa: E402
from text2sql_dspy.programs.query.tables_read import tables_read  # noqa: E402
from text2sql_dspy.programs.retrieval.retriever import (  # noqa: E402
    RetrievedTable,
    SemanticRetriever,
    expand_with_foreign_keys,
    tokenize,
)

SIGNALS = ("cosine", "keyword", "cosine rank", "keyword rank", "blend rank", "name words", "column words",
           "top hit", "top hit's part")


def renamed(db: str, table: Table) -> Table:
    columns = [c.model_copy(update={"references": f"{db}__{c.references}" if c.references else None})
               for c in table.columns]
    return table.model_copy(update={"name": f"{db}__{table.name}", "columns": columns})


def merged(root: Path, dbs: list[str]) -> Catalog:
    tables = [renamed(db, t) for db in dbs
              for t in introspect_sqlite(root / "database" / db / f"{db}.sqlite").tables]
    return Catalog(db_id="merged", tables=tables)


def merged_values(root: Path, dbs: list[str]) -> ValueIndex:
    """One value index over ``dbs`` merged, its tables renamed as :func:`merged` renames them."""
    from text2sql_dspy.programs.source import open_source

    columns = []
    for db in dbs:
        index = value_index(open_source(root / "database" / db / f"{db}.sqlite"), progress=False)
        columns += [ColumnValues(f"{db}__{c.table}", c.column, c.values, c.complete) for c in index.columns]
    return ValueIndex(columns)


def named_tables(matches: list[ValueMatch]) -> set[str]:
    """The tables of ``matches`` that store a value one phrase of the question names exactly ("Kyle", 'Kyle')."""
    return {m.table for m in matches if m.phrase and any(normalise(v) == m.phrase for v in m.shown)}


def words(text: str) -> set[str]:
    return {stem(w) for w in tokenize(text)}


def signals(retriever: SemanticRetriever, catalog: Catalog, question: str) -> dict[str, dict[str, float]]:
    """Each table's signals for ``question``."""
    cosine, keyword = retriever.cosine_scores(question), retriever.keyword.scores(question)
    blend = {n: 0.5 * cosine[n] + 0.5 * keyword.get(n, 0.0) for n in cosine}
    ranks = {name: {t: i for i, t in enumerate(sorted(scores, key=lambda t: -scores[t]))}
             for name, scores in (("cosine", cosine), ("keyword", keyword), ("blend", blend))}
    top = min(blend, key=lambda t: ranks["blend"][t])
    parts = catalog.parts()
    top_part = parts.get(top.lower())
    asked = words(question)
    found = {}
    for table in catalog.tables:
        name = table.name
        own = name.split("__", 1)[-1]
        column_words = set().union(*(words(c.name) for c in table.columns)) if table.columns else set()
        found[name] = {
            "cosine": cosine[name], "keyword": keyword.get(name, 0.0),
            "cosine rank": float(np.log1p(ranks["cosine"][name])),
            "keyword rank": float(np.log1p(ranks["keyword"][name])),
            "blend rank": float(np.log1p(ranks["blend"][name])),
            "name words": float(bool(words(own) & asked)),
            "column words": len(column_words & asked) / max(1, len(asked)),
            "top hit": float(name == top),
            "top hit's part": float(top_part is not None and parts.get(name.lower()) == top_part),
        }
    return found


def shown(catalog: Catalog, scores: dict[str, float], top_k: int) -> set[str]:
    ordered = sorted(scores, key=lambda t: -scores[t])
    hits = [RetrievedTable(n, max(0.0, min(1.0, scores[n]))) for n in ordered[:top_k]]
    return {h.name.lower() for h in expand_with_foreign_keys(catalog, hits, top_k, scores=scores)}


def questions_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def rows_of(catalog: Catalog, questions: list[dict], prefix: bool, values: ValueIndex | None = None) -> list[dict]:
    """Per question: its database, gold tables (merged names), each table's signals and (with ``values``) the
    tables that store a value it names."""
    retriever = SemanticRetriever(catalog, adapter=None)  # design A: the bare cosine
    names = {t.name.lower() for t in catalog.tables}
    schema = schema_words(catalog) if values is not None else frozenset()
    out = []
    for q in questions:
        gold = {f"{q['db_id']}__{t}".lower() if prefix else t.lower() for t in tables_read(q["query"])}
        if not gold or not gold <= names:
            continue
        named = named_tables(values.lookup(q["question"], names=schema)) if values is not None else set()
        out.append({"db": q["db_id"], "question": q["question"], "gold": gold, "named": named,
                    "signals": signals(retriever, catalog, q["question"]), "catalog": catalog})
    return out


def fit(rows: list[dict]):  # noqa: ANN201 - a scikit-learn model
    from sklearn.linear_model import LogisticRegression

    x = [[s[n] for n in SIGNALS] for r in rows for s in r["signals"].values()]
    y = [t.lower() in r["gold"] for r in rows for t in r["signals"]]
    return LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced").fit(np.array(x), np.array(y))


def blend(row: dict) -> dict[str, float]:
    """Design A: today's 0.5 cosine and 0.5 keyword score of each table."""
    return {t: 0.5 * s["cosine"] + 0.5 * s["keyword"] for t, s in row["signals"].items()}


def valued(bonus: float):  # noqa: ANN201 - a scorer
    """Design V: the blend, plus ``bonus`` for each table that stores a value the question names."""
    def score(row: dict) -> dict[str, float]:
        return {t: v + bonus * (t in row["named"]) for t, v in blend(row).items()}
    return score


def logistic(model):  # noqa: ANN001, ANN201 - a scikit-learn model in, a scorer out
    """Design B: ``model``'s probability that each table is needed."""
    def score(row: dict) -> dict[str, float]:
        tables = list(row["signals"])
        p = model.predict_proba(np.array([[row["signals"][t][n] for n in SIGNALS] for t in tables]))[:, 1]
        return dict(zip(tables, map(float, p), strict=True))
    return score


def chosen_part(scores: dict[str, float], parts: dict[str, int], depth: int) -> int | None:
    """The part of the schema (``Catalog.parts``) whose tables among the top ``depth`` score most in sum; None
    where none of them has a part. ``depth=1`` is the top hit's part."""
    tally: dict[int, float] = defaultdict(float)
    for table in sorted(scores, key=lambda t: -scores[t])[:depth]:
        if (part := parts.get(table.lower())) is not None:
            tally[part] += scores[table]
    return max(tally, key=lambda p: tally[p]) if tally else None


def covering_part(row: dict, scores: dict[str, float], parts: dict[str, int], depth: int) -> int | None:
    """Design P: among the parts of the top ``depth`` tables, the one whose names hold the most of the question's
    words; between equals, the part of the higher-ranked table. None where none of them has a part."""
    asked = words(row["question"])
    names = row.setdefault("names", {t.name.lower(): words(t.name.split("__", 1)[-1]).union(
        *(words(c.name) for c in t.columns)) for t in row["catalog"].tables})
    held: dict[int, set[str]] = defaultdict(set)
    for table, part in parts.items():
        held[part] |= names.get(table, set()) & asked
    order = [parts[t.lower()] for t in sorted(scores, key=lambda t: -scores[t])[:depth] if t.lower() in parts]
    return max(dict.fromkeys(order), key=lambda p: (len(held[p]), -order.index(p))) if order else None


def linked(row: dict, top_k: int, score=blend, one_part: int = 0, cover: int = 0) -> set[str]:  # noqa: ANN001
    """The tables shown for ``row`` by ``score`` (a row to each table's score); ``one_part`` > 0: only the tables of
    the part :func:`chosen_part` chooses among the top ``one_part``, and those no declared key links; ``cover`` > 0:
    the same with the part :func:`covering_part` chooses among the top ``cover``."""
    scores = score(row)
    if one_part or cover:
        parts = row.setdefault("parts", row["catalog"].parts())
        top = covering_part(row, scores, parts, cover) if cover else chosen_part(scores, parts, one_part)
        if top is not None:
            scores = {t: v for t, v in scores.items() if parts.get(t.lower(), top) == top}
    return shown(row["catalog"], scores, top_k)


def scored(rows: list[dict], top_k: int, score=blend, *, one_part: int = 0,  # noqa: ANN001 - a scorer
           cover: int = 0) -> dict[str, float]:
    """Figures of the tables :func:`linked` shows."""
    every, recall, sizes, foreign = [], [], [], []
    for r in rows:
        got = linked(r, top_k, score, one_part, cover)
        every.append(r["gold"] <= got)
        recall.append(len(r["gold"] & got) / len(r["gold"]))
        sizes.append(len(got))
        foreign.append(sum(not t.startswith(f"{r['db'].lower()}__") for t in got))
    return {"questions": len(rows), "all gold shown": statistics.mean(every), "recall": statistics.mean(recall),
            "tables shown": statistics.mean(sizes), "of other databases": statistics.mean(foreign)}


def view(top_k: int, score=blend, *, one_part: int = 0, cover: int = 0):  # noqa: ANN001, ANN201 - scorer in, view out
    """A view: a row to the tables :func:`linked` shows for it with these settings."""
    return lambda row: linked(row, top_k, score, one_part, cover)


def against(rows: list[dict], reference, other) -> str:  # noqa: ANN001 - views (:func:`view`)
    """Questions whose gold tables ``other`` shows all of where ``reference`` does not, the reverse, and the sign
    test on them."""
    from text2sql_dspy.optimize.report import paired_comparison

    def each(shows) -> list[dict]:  # noqa: ANN001
        return [{"index": i, "correct": r["gold"] <= shows(r)} for i, r in enumerate(rows)]

    paired = paired_comparison(each(reference), each(other))
    return f"{paired['gained']} gained, {paired['lost']} lost, sign test p = {paired['sign_test_p']:.3f}"


def report(label: str, figures: dict[str, float]) -> None:
    print(f"  {label:34s} all gold shown {figures['all gold shown']:.3f}  recall {figures['recall']:.3f}  "
          f"tables shown {figures['tables shown']:.1f}, of other databases {figures['of other databases']:.1f}  "
          f"({figures['questions']} questions)")


def fold_rows(train: Path, folds: int, limit: int | None, values: bool = False) -> list[list[dict]]:
    """spider-train's databases dealt into ``folds`` groups by name, each group merged into one catalog: per group,
    the rows (:func:`rows_of`) of the first ``limit`` questions of each of its databases."""
    questions = questions_of(train / "train.json")
    dbs = sorted({q["db_id"] for q in questions})
    by_db: dict[str, list[dict]] = defaultdict(list)
    for q in questions:
        if limit is None or len(by_db[q["db_id"]]) < limit:
            by_db[q["db_id"]].append(q)
    out = []
    for f in range(folds):
        members = dbs[f::folds]
        catalog = merged(train, members)
        index = merged_values(train, members) if values else None
        out.append(rows_of(catalog, [q for db in members for q in by_db[db]], prefix=True, values=index))
        print(f"fold {f}: {len(members)} databases, {len(catalog.tables)} tables, {len(out[-1])} questions",
              flush=True)
    return out


def merged_rows(database: Path, questions: Path, values: bool = False) -> list[dict]:
    """The rows of a merged database's questions (``merge_schemas.py``'s dev.json, with own.json beside it naming
    each question's own database, in order)."""
    catalog = introspect_sqlite(database)
    asked = questions_of(questions)
    own = questions.with_name("own.json")
    if own.is_file():
        asked = [{**q, "db_id": o["db_id"]} for q, o in zip(asked, questions_of(own), strict=True)]
    index = None
    if values:
        from text2sql_dspy.programs.source import open_source

        index = value_index(open_source(database), progress=False)
    return rows_of(catalog, asked, prefix=False, values=index)


def pooled(figures: list[dict[str, float]]) -> dict[str, float]:
    """Per-fold figures averaged over all their questions."""
    total = sum(f["questions"] for f in figures)
    return {key: sum(f[key] * f["questions"] for f in figures) / total if key != "questions" else total
            for key in figures[0]}


def arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--train", type=Path, required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, help="only the first N questions of each database")
    parser.add_argument("--merged", type=Path, help="a merged SQLite database (merge_schemas.py) to score on too")
    parser.add_argument("--part-depths", type=int, nargs="*", default=[], help="design F: keep to the part of the "
                        "schema that the top N tables vote for, by their summed scores (one figure per N)")
    parser.add_argument("--cover-depths", type=int, nargs="*", default=[], help="design P: keep to the part, among "
                        "those of the top N tables, whose names hold most of the question's words (one figure per N)")
    parser.add_argument("--value-bonus", type=float, nargs="*", default=[], help="design V: C with this added to "
                        "the score of each table that stores a value the question names (one figure per bonus)")
    parser.add_argument("--merged-questions", type=Path, help="its questions (merge_schemas.py's dev.json, with "
                        "own.json beside it naming each question's own database)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__.split("\n\n")[0]).parse_args(argv)
    folds = fold_rows(args.train, args.folds, args.limit, values=bool(args.value_bonus))
    every = [r for rows in folds for r in rows]
    held_out = [(rows, fit([r for g, other in enumerate(folds) if g != f for r in other]))
                for f, rows in enumerate(folds)]
    for k in sorted({3, args.top_k}):
        print(f"\nout of fold, top {k} and the tables that join them:")
        report("A: today's blend", scored(every, k))
        report("B: fitted linker", pooled([scored(rows, k, logistic(model)) for rows, model in held_out]))
        report("C: the blend, top hit's part only", scored(every, k, one_part=1))
        for depth in args.part_depths:
            report(f"F: the part the top {depth} vote for", scored(every, k, one_part=depth))
        for depth in args.cover_depths:
            report(f"P: the part covering the top {depth}", scored(every, k, cover=depth))
            print(f"    against C: {against(every, view(k, one_part=1), view(k, cover=depth))}")
        for bonus in args.value_bonus:
            report(f"V: C, named values +{bonus:g}", scored(every, k, valued(bonus), one_part=1))
            print(f"    against C: {against(every, view(k, one_part=1), view(k, valued(bonus), one_part=1))}")
    model = fit(every)
    print("\nB's weights, fitted on every fold (signals as given, not standardised):")
    for name, weight in zip(SIGNALS, model.coef_[0], strict=True):
        print(f"  {name:16s} {weight:+.3f}")
    if args.merged is not None and args.merged_questions is not None:
        rows = merged_rows(args.merged, args.merged_questions, values=bool(args.value_bonus))
        print(f"\n{args.merged} ({len(rows[0]['catalog'].tables) if rows else 0} tables):")
        for k in sorted({3, args.top_k}):
            print(f"  top {k}:")
            report("A: today's blend", scored(rows, k))
            report("B: fitted on spider-train", scored(rows, k, logistic(model)))
            report("C: the blend, top hit's part only", scored(rows, k, one_part=1))
            for depth in args.part_depths:
                report(f"F: the part the top {depth} vote for", scored(rows, k, one_part=depth))
            for depth in args.cover_depths:
                report(f"P: the part covering the top {depth}", scored(rows, k, cover=depth))
                print(f"      against C: {against(rows, view(k, one_part=1), view(k, cover=depth))}")
            for bonus in args.value_bonus:
                report(f"V: C, named values +{bonus:g}", scored(rows, k, valued(bonus), one_part=1))
                print(f"      against C: {against(rows, view(k, one_part=1), view(k, valued(bonus), one_part=1))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
