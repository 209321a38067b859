"""Recall of the table retrievers against the tables each gold query reads.

For every question of the local Spider sample (``dev.json``, ``train.json``) and, when present,
of the bundled SaaS database (``data/{train,dev,test}.json``), the gold query's tables are taken
from its parse (:func:`~text2sql_dspy.programs.query.tables_read.tables_read`) and compared with what each
retriever returns for the question. Printed per dataset, retriever and k:

* ``recall``  — mean share of the gold tables retrieved;
* ``all``     — share of questions whose gold tables were all retrieved;
* ``tables``  — mean number of tables returned;
* ``hard``    — ``all`` over the questions whose database has more than k tables (the rest
  are returned whole, so they say nothing about ranking), with their count;

each for the ``top_k`` direct hits ("raw") and after foreign-key expansion ("+fk"), plus the
mean and median latency of ``search(question, top_k=5)`` over the first ``--latency-n``
questions (ms/query, after the one-off index build; CPU, so it depends on what else the
machine is running). The recall pass embeds each distinct question once (cached) to keep the
run short; the timed pass uses the real model.

Usage::

    python benchmarks/bench_retrieval.py [--spider DIR] [--limit N] [--weights 0.3,0.5] [--only saas]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from text2sql_dspy.programs.catalog.catalog import Catalog, load_schema_dir, load_spider_tables  # noqa: E402
from text2sql_dspy.programs.catalog.samples import sampled  # noqa: E402
from text2sql_dspy.programs.db.opening import open_database  # noqa: E402
from text2sql_dspy.programs.query.tables_read import tables_read  # noqa: E402
from text2sql_dspy.programs.retrieval.embedder import load_embedder  # noqa: E402
from text2sql_dspy.programs.retrieval.retriever import (  # noqa: E402
    DEFAULT_KEYWORD_WEIGHT,
    KeywordRetriever,
    SemanticRetriever,
    TableRetriever,
)
from text2sql_dspy.programs.source import open_source  # noqa: E402

DEFAULT_SPIDER = Path("/work/shared/benchmarks/spider-public")
KS = (3, 5)


def with_samples_if_present(catalog: Catalog, db_path: Path) -> Catalog:
    return sampled(catalog, open_database(db_path)) if db_path.is_file() else catalog


def spider_sets(folder: Path, limit: int | None) -> list[tuple[str, list[dict], dict[str, Catalog]]]:
    tables_json = folder / "tables.json"
    out = []
    for split in ("dev", "train"):
        file = folder / f"{split}.json"
        if not file.is_file():
            continue
        records = json.loads(file.read_text(encoding="utf-8"))[:limit]
        catalogs = {}
        for db_id in sorted({r["db_id"] for r in records}):
            db_path = folder / "database" / db_id / f"{db_id}.sqlite"
            if tables_json.is_file():
                catalogs[db_id] = with_samples_if_present(load_spider_tables(tables_json, db_id), db_path)
            else:  # no tables.json (benchmarks/merge_schemas.py's output): the catalog the program reads
                catalogs[db_id] = open_source(db_path).catalog
        out.append((f"spider-{split}", records, catalogs))
    return out


def bundled_sets(limit: int | None) -> list[tuple[str, list[dict], dict[str, Catalog]]]:
    schema_dir = REPO / "schemas" / "saas"
    files = [REPO / "data" / f"{s}.json" for s in ("train", "dev", "test")]
    files = [f for f in files if f.is_file()]
    if not schema_dir.is_dir() or not files:
        return []
    catalog = with_samples_if_present(
        load_schema_dir(schema_dir, "saas"), REPO / "data" / "database" / "saas" / "saas.sqlite"
    )
    records = []
    for f in files:
        records += [r for r in json.loads(f.read_text(encoding="utf-8")) if r.get("db_id", "saas") == "saas"]
    return [("saas", records[:limit], {"saas": catalog})]


class CachingEncoder:
    """Stands in for the model during the recall pass: each distinct text is embedded once,
    whichever retriever or k asks. Latency is measured separately, with the real model."""

    def __init__(self, model: Any):
        self.model = model
        self.cache: dict[tuple[str, ...], Any] = {}

    def encode(self, texts: list[str], **kwargs: Any) -> Any:
        key = tuple(texts)
        if key not in self.cache:
            self.cache[key] = self.model.encode(texts, **kwargs)
        return self.cache[key]


Builder = Callable[[Catalog, Any], TableRetriever]


def evaluate(
    name: str,
    records: list[dict],
    catalogs: dict[str, Catalog],
    builders: dict[str, Builder],
    model: Any,
    latency_n: int,
) -> list[dict]:
    cached = CachingEncoder(model)
    rows = []
    golds = []
    for r in records:
        catalog = catalogs[r["db_id"]]
        known = {t.lower() for t in catalog.table_names}
        gold = tables_read(r["query"])
        if gold:
            gold &= known
        golds.append(gold or None)
    usable = [(r, g) for r, g in zip(records, golds) if g]
    for label, build in builders.items():
        retrievers = {db_id: build(c, cached) for db_id, c in catalogs.items()}
        stats: dict[tuple[int, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for record, gold in usable:
            retriever = retrievers[record["db_id"]]
            size = len(catalogs[record["db_id"]].tables)
            for k in KS:
                hits = retriever.search(record["question"], top_k=k)
                for mode, chosen in (("raw", [h for h in hits if h.via is None]), ("+fk", hits)):
                    got = {h.name.lower() for h in chosen}
                    s = stats[(k, mode)]
                    s["recall"].append(len(gold & got) / len(gold))
                    s["all"].append(float(gold <= got))
                    s["tables"].append(len(got))
                    if size > k:
                        s["hard"].append(float(gold <= got))
        latencies = []
        timed = {db_id: build(c, model) for db_id, c in catalogs.items()}
        for record, _ in usable[:latency_n]:
            start = time.perf_counter()
            timed[record["db_id"]].search(record["question"], top_k=max(KS))
            latencies.append(time.perf_counter() - start)
        for (k, mode), s in sorted(stats.items()):
            rows.append(
                {
                    "dataset": name,
                    "retriever": label,
                    "k": k,
                    "mode": mode,
                    "n": len(usable),
                    "recall": statistics.fmean(s["recall"]),
                    "all": statistics.fmean(s["all"]),
                    "tables": statistics.fmean(s["tables"]),
                    "hard": statistics.fmean(s["hard"]) if s["hard"] else float("nan"),
                    "hard_n": len(s["hard"]),
                    "ms": 1000 * statistics.fmean(latencies),
                    "ms_p50": 1000 * statistics.median(latencies),
                }
            )
    skipped = len(records) - len(usable)
    if skipped:
        print(f"  ({name}: {skipped} gold queries unparsable or naming no known table, skipped)")
    return rows


def print_table(rows: list[dict]) -> None:
    header = (f"{'dataset':<13}{'retriever':<23}{'k':>2} {'mode':<4}{'n':>5}{'recall':>8}{'all':>7}{'tables':>7}"
              f"{'hard':>7}{'hard_n':>7}{'ms/q':>7}{'p50':>6}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['dataset']:<13}{r['retriever']:<23}{r['k']:>2} {r['mode']:<4}{r['n']:>5}{r['recall']:>8.3f}"
            f"{r['all']:>7.3f}{r['tables']:>7.2f}{r['hard']:>7.3f}{r['hard_n']:>7}{r['ms']:>7.1f}{r['ms_p50']:>6.1f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spider", type=Path, default=DEFAULT_SPIDER,
                        help="Spider-format folder (dev/train/tables.json)")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each file")
    parser.add_argument("--weights", default="0.3,0.5",
                        help="keyword weights of the hybrid retrievers, comma-separated")
    parser.add_argument("--only", default="",
                        help="comma-separated dataset names to run (spider-dev, spider-train, saas)")
    parser.add_argument("--latency-n", type=int, default=100, help="questions per dataset timed with the real model")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    model = load_embedder()
    print(f"embedding model loaded in {time.perf_counter() - start:.1f}s")
    builders: dict[str, Builder] = {
        "keyword": lambda c, m: KeywordRetriever(c),
        "semantic": lambda c, m: SemanticRetriever(c, m, keyword_weight=0.0),
    }
    for w in (float(x) for x in args.weights.split(",") if x.strip()):
        label = f"hybrid w={w:g}" + (" (default)" if w == DEFAULT_KEYWORD_WEIGHT else "")
        builders[label] = lambda c, m, w=w: SemanticRetriever(c, m, keyword_weight=w)
    # the default blend with the bare MiniLM cosine, as before the shipped question adapter
    builders["default, no adapter"] = lambda c, m: SemanticRetriever(c, m, adapter=None)

    datasets = (spider_sets(args.spider, args.limit) if args.spider.is_dir() else []) + bundled_sets(args.limit)
    if args.only:
        wanted = {x.strip() for x in args.only.split(",")}
        datasets = [d for d in datasets if d[0] in wanted]
    if not datasets:
        sys.exit("no datasets found")
    rows = []
    for name, records, catalogs in datasets:
        sizes = sorted({len(c.tables) for c in catalogs.values()})
        print(f"\n{name}: {len(records)} questions, {len(catalogs)} databases of {sizes} tables", flush=True)
        new_rows = evaluate(name, records, catalogs, builders, model, args.latency_n)
        print_table(new_rows)
        sys.stdout.flush()
        rows += new_rows
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
