"""Compile V2's ensemble over many training databases: ``text2sql compile --program v2 --ensemble``.

    text2sql compile --program v2 --optimizer none --ensemble --data ../shared/benchmarks/spider-train \\
        --conversations ../shared/benchmarks/cosql-train --per-database 3 --seed 0 \\
        --order draft,pairs,columns,sample,sample --out compiled/v2-ensemble.json

What it writes beside ``--out`` (``<stem>`` is its name less ``.json``), each step skipped where its file is there:

1. ``<stem>.pools/first.npz`` and ``follow-up.npz``: the pools of solved pairs the ``pairs`` generator shows (the
   training split of ``--data``, and the follow-ups of ``--conversations``), embedded once
   (:meth:`~text2sql_dspy.programs.examples.carried_pairs.CarriedPairs.save`);
2. ``<stem>.collected/<set>.jsonl.gz``: V2's answers to ``--per-database`` questions (conversations) of every training
   database, each drafted by every generator of the orders (:mod:`.collect`; resumable: rerun to go on), or the
   files given as ``--collected``;
3. ``<stem>.verifier.json`` and ``<stem>.ensemble.json``: the full model, the order, the budget and the stopping
   rule fitted on those answers (:mod:`.ensemble_fit`);
4. ``<stem>.json`` (the program's state) and ``<stem>.meta.json``, which name the files above: ``--program
   <stem>.json`` answers with them.

``ship`` copies a compiled ensemble into the package, where V2 reads it by default (``verifier.json``,
``ensemble.json`` and ``pools/`` beside ``programs/agents/ensemble.py``).
Training sets only: the held-out sets are refused (:func:`~.collected.refuse_held_out`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from text2sql_dspy.optimize.collected import refuse_held_out
from text2sql_dspy.programs.agents.ensemble import FIRST, FOLLOW_UP, PACKAGE, Ensemble
from text2sql_dspy.programs.errors import ConfigurationError

__all__ = ["EnsembleConfig", "compile_ensemble", "ship"]

DEFAULT_ORDERS = (("draft", "pairs", "columns", "linked", "sample", "sample"),
                  ("draft", "standalone", "pairs", "sample", "sample"))


@dataclass(frozen=True)
class EnsembleConfig:
    data: str
    out: str
    conversations: str | None = None
    databases: str | None = None  # where --conversations holds no databases: the folder that does
    per_database: int = 3
    conversations_per_database: int = 1
    orders: tuple[tuple[str, ...], ...] = DEFAULT_ORDERS
    collected: tuple[str, ...] = ()
    base_verifier: str | None = None
    max_cost: float = 2.0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _stem(out: Path) -> Path:
    if out.suffix != ".json":
        raise ConfigurationError(f"--out must name a .json file, got {out}.")
    return out.with_suffix("")


def pools(config: EnsembleConfig, folder: Path) -> dict[str, Path]:
    """The pools of solved pairs, written once into ``folder``: first questions from ``--data``'s training split, and
    follow-ups from ``--conversations`` where given."""
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

    folder.mkdir(parents=True, exist_ok=True)
    found = {FIRST: folder / "first.npz"}
    if config.conversations:
        found[FOLLOW_UP] = folder / "follow-up.npz"
    for kind, path in found.items():
        if path.is_file():
            continue
        if kind == FIRST:
            pool = CarriedPairs.from_split(config.data)
        else:
            tables = None if (Path(config.conversations) / "tables.json").is_file() else \
                Path(config.databases or config.data) / "tables.json"
            pool = CarriedPairs.from_split(config.conversations, tables=tables)
        print(f"pool of {kind} questions: {len(pool)} pairs, embedding them once")
        pool.save(path)
    return found


def collections(config: EnsembleConfig, folder: Path, found_pools: dict[str, Path]) -> list[Path]:
    """V2's answers with every generator of the orders, on every training database (resumable), or those given."""
    if config.collected:
        return [Path(p) for p in config.collected]
    from text2sql_dspy.optimize import collect
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

    generators = tuple(g for g in _union(config.orders))
    folder.mkdir(parents=True, exist_ok=True)
    first = CarriedPairs.load(found_pools[FIRST])
    turns = CarriedPairs.load(found_pools[FOLLOW_UP]) if FOLLOW_UP in found_pools else None
    program = collect.build_program(generators=generators, carried=first, carried_turns=turns)
    sets = [(config.data, None, config.per_database)]
    if config.conversations:
        sets.append((config.conversations, config.databases or config.data, config.conversations_per_database))
    files = []
    for data, databases, per_database in sets:
        out = folder / f"{Path(data).name}.jsonl.gz"
        status = collect.main(["--data", data, "--per-database", str(per_database), "--shuffled", "--out", str(out),
                               *(["--databases", databases] if databases else [])], program=program)
        if status != 0:
            raise SystemExit(status)
        files.append(out)
    return files


def _union(orders: Sequence[Sequence[str]]) -> list[str]:
    """Every generator of ``orders``, as often as the order that uses it most, draft first."""
    counts: dict[str, int] = {}
    for order in orders:
        for g in set(order):
            counts[g] = max(counts.get(g, 0), order.count(g))
    return ["draft", *[g for g in counts for _ in range(counts[g]) if g != "draft"]]


def compile_ensemble(config: EnsembleConfig) -> dict[str, Any]:
    """Compile as the module docstring says; return the sidecar's content."""
    from text2sql_dspy.optimize import ensemble_fit
    from text2sql_dspy.programs.agents.registry import make_program, metadata_path

    refuse_held_out([config.data, *([config.conversations] if config.conversations else []), *config.collected])
    out = Path(config.out)
    stem = _stem(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    found_pools = pools(config, Path(f"{stem}.pools"))
    files = collections(config, Path(f"{stem}.collected"), found_pools)
    verifier_file, ensemble_file = Path(f"{stem}.verifier.json"), Path(f"{stem}.ensemble.json")
    base = config.base_verifier or str(_package_file("verifier.json"))
    ensemble_fit.main([*map(str, files), "--base", base, *[a for o in config.orders for a in ("--order", ",".join(o))],
                       "--max-cost", str(config.max_cost), "--out-verifier", str(verifier_file),
                       "--out-ensemble", str(ensemble_file),
                       *[a for kind, path in found_pools.items()
                         for a in ("--pool", f"{kind}={path.relative_to(out.parent)}")]])
    ensemble = Ensemble.read(ensemble_file)
    program = make_program("v2", ensemble=ensemble, verifier=False)
    program.save(str(out))
    meta = {"program": "v2", "optimizer": "none", "ensemble": ensemble_file.name, "verifier": verifier_file.name,
            "pools": {k: str(p.relative_to(out.parent)) for k, p in found_pools.items()},
            "collected": [str(f) for f in files], "order": list(ensemble.order), "budget": ensemble.budget,
            "stop": ensemble.stop, "fitted_on": dict(ensemble.fitted_on), "seed": config.seed,
            "per_database": config.per_database, "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    metadata_path(out).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _package_file(name: str) -> Path:
    from importlib import resources

    return Path(str(resources.files(PACKAGE).joinpath(name)))


def ship(compiled: Path | str, package: Path | str | None = None) -> list[Path]:
    """Copy a compiled ensemble into the package folder (default: the installed ``programs/agents``): its verifier
    and ensemble, and its pools under ``pools/``, which the ensemble then names."""
    compiled = Path(compiled)
    meta = json.loads(compiled.with_suffix(".meta.json").read_text(encoding="utf-8"))
    folder = Path(package) if package is not None else _package_file("ensemble.py").parent
    (folder / "pools").mkdir(exist_ok=True)
    written = []
    data = json.loads((compiled.parent / meta["ensemble"]).read_text(encoding="utf-8"))
    for kind, path in data.get("pools", {}).items():
        target = folder / "pools" / Path(path).name
        shutil.copyfile(compiled.parent / path, target)
        data["pools"][kind] = f"pools/{target.name}"
        written.append(target)
    (folder / "ensemble.json").write_text(json.dumps(data, indent=1) + "\n")
    shutil.copyfile(compiled.parent / meta["verifier"], folder / "verifier.json")
    return [*written, folder / "ensemble.json", folder / "verifier.json"]


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["ship"] and len(sys.argv) in (3, 4):
        print("\n".join(map(str, ship(*sys.argv[2:]))))
    else:
        raise SystemExit("usage: python -m text2sql_dspy.optimize.compile_ensemble ship COMPILED.json [PACKAGE_FOLDER]")
