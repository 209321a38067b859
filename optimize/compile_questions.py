"""Which questions a compile trains and validates on: the splits as given, or the train split divided by whole
databases (:func:`split_by_database`), so that the validation databases are never training databases; and the example
store's side of it: the training databases' pairs learned (:func:`learn_databases`), a validation database never in
the store (:func:`check_unseen`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.store import ExampleStore

if TYPE_CHECKING:  # pragma: no cover - typing only
    from text2sql_dspy.optimize.compile import CompileConfig

DEV_DATABASES = 0.2  # the validation side's share of the databases when split by database and not told


@dataclass(frozen=True)
class Questions:
    """What a compile trains and validates on. ``learn_from``: by database, every question of the databases the
    training questions come from, which the store learns (never a validation database's); else empty, and the
    store learns the whole train split."""

    train: list
    dev: list
    by_database: bool
    learn_from: list = field(default_factory=list)
    seed: int = 0
    drawn: tuple[int, int] | None = None  # by database: the databases drawn for (training, validation)

    def describe(self) -> str:
        """A heading, then one line per side: its questions, the databases they come from and, by database, how
        many databases were drawn for that side."""
        if not self.by_database:
            return "\n".join(["questions: the splits as given", f"  training:   {_counted(self.train)}",
                              f"  validation: {_counted(self.dev)}"])
        train_drawn, dev_drawn = self.drawn or (0, 0)
        return "\n".join([
            f"questions: split by database (seed {self.seed}), no database on both sides",
            f"  training:   {_counted(self.train)} (of {train_drawn} drawn)",
            f"  validation: {_counted(self.dev)} (of {dev_drawn} drawn)",
        ])


def choose_questions(config: CompileConfig) -> Questions:
    """The training and validation questions ``config`` asks for.

    By database when ``config.by_database`` or when the data has no ``<dev_split>.json``: both sides are drawn from
    the train split (:func:`split_by_database`). Otherwise as before: ``train_limit`` questions sampled with the
    seed from the train split, and the first ``dev_limit`` of the dev split.
    """
    budget = config.budget
    has_dev = (Path(config.data) / f"{config.dev_split}.json").is_file()
    if config.by_database or not has_dev:
        if not has_dev:
            print(f"no {config.dev_split!r} split in {config.data}: splitting {config.train_split!r} by database")
        examples = load_split(config.data, config.train_split)
        dev_databases = budget.dev_databases
        if dev_databases is None:
            dev_databases = DEV_DATABASES if budget.dev_limit else 0
        split = split_by_database(
            examples, train_databases=budget.train_databases, dev_databases=dev_databases,
            per_database=budget.per_database, seed=config.seed,
            train_limit=budget.train_limit, dev_limit=budget.dev_limit,
        )
        used = set(questions_per_database(split.train))
        learn_from = [ex for ex in examples if ex.db_id in used]
        drawn = (len(split.train_ids), len(split.dev_ids))
        return Questions(split.train, split.dev, True, learn_from, config.seed, drawn)
    train = _sample(load_split(config.data, config.train_split), budget.train_limit, config.seed)
    dev = load_split(config.data, config.dev_split, limit=budget.dev_limit) if budget.dev_limit else []
    return Questions(train, dev, False, [], config.seed)


@dataclass(frozen=True)
class DatabaseSplit:
    """Questions split by whole databases: ``train_ids`` and ``dev_ids`` are the databases drawn for each side
    (disjoint, in draw order); ``train`` and ``dev`` the questions taken from them."""

    train: list
    dev: list
    train_ids: list[str]
    dev_ids: list[str]


def split_by_database(
    examples: list, *, train_databases: float | None = None, dev_databases: float | None = DEV_DATABASES,
    per_database: int | None = None, seed: int = 0, train_limit: int | None = None, dev_limit: int | None = None,
) -> DatabaseSplit:
    """Split ``examples`` (each with a ``db_id``) by whole databases, deterministically for a ``seed``.

    The databases are shuffled with ``seed``; the first ``dev_databases`` form the validation side, the next
    ``train_databases`` (None: all the rest) the training side, so no database is on both. A count is a whole
    number of databases, or a fraction of them (0 < f < 1, rounded, at least one). From each database at most
    ``per_database`` questions are drawn (seeded by ``seed`` and the database, so a database's draw does not depend
    on the others'); then each side takes its databases' questions in turn, one from each, up to its limit, so a
    limit spreads over as many databases as it can. Raises :class:`ConfigurationError`, naming the fix, when the
    databases cannot fill both sides.
    """
    groups: dict[str, list] = {}
    for ex in examples:
        groups.setdefault(ex.db_id, []).append(ex)
    train_ids, dev_ids = draw_databases(sorted(groups), train_databases, dev_databases, seed)
    capped = {db: _draw_questions(groups[db], per_database, f"{seed}:{db}") for db in [*dev_ids, *train_ids]}
    return DatabaseSplit(
        train=_in_turn([capped[db] for db in train_ids], train_limit),
        dev=_in_turn([capped[db] for db in dev_ids], dev_limit),
        train_ids=train_ids, dev_ids=dev_ids,
    )


def draw_databases(
    db_ids: list[str], train: float | None, dev: float | None, seed: int
) -> tuple[list[str], list[str]]:
    """``(training ids, validation ids)``: ``db_ids`` shuffled with ``seed``, validation first (so a change to the
    training count keeps the validation databases), then training; raises :class:`ConfigurationError` naming the
    fix when there are too few databases."""
    total = len(db_ids)
    n_dev = database_count(dev, total, "--dev-databases") if dev is not None else 0
    if n_dev and total < 2:
        raise ConfigurationError(
            f"a split by database needs at least 2 databases, one for each side; the questions come from {total} "
            f"({', '.join(db_ids) or 'none'}). Give data with more databases, or a folder with its own dev split "
            "(--dev-split), or --dev-databases 0 to score no validation side."
        )
    n_train = database_count(train, total, "--train-databases") if train is not None else total - n_dev
    if n_train < 1:
        raise ConfigurationError(
            f"no database is left for training: {n_dev} of the {total} go to validation. Lower --dev-databases."
        )
    if n_train + n_dev > total:
        raise ConfigurationError(
            f"--train-databases {n_train} and --dev-databases {n_dev} need {n_train + n_dev} databases, but the "
            f"questions come from {total}: lower one of them (a fraction, e.g. --dev-databases 0.2, always fits)."
        )
    shuffled = list(db_ids)
    random.Random(seed).shuffle(shuffled)
    return shuffled[n_dev:n_dev + n_train], shuffled[:n_dev]


def database_count(count: float, total: int, flag: str) -> int:
    """How many of ``total`` databases ``count`` means: a whole number as it is, a fraction (0 < f < 1) of
    ``total`` rounded, at least one; raises :class:`ConfigurationError` for anything else."""
    if isinstance(count, float) and not count.is_integer():
        if not 0 < count < 1:
            raise ConfigurationError(
                f"{flag} must be a whole number of databases or a fraction between 0 and 1, got {count}."
            )
        return max(1, round(count * total))
    if count < 0:
        raise ConfigurationError(f"{flag} must be 0 or more, got {count}.")
    return int(count)


def _draw_questions(examples: list, cap: int | None, seed: str) -> list:
    """``examples`` in an order shuffled with ``seed``, the first ``cap`` of them (all when ``cap`` is None)."""
    drawn = list(examples)
    random.Random(seed).shuffle(drawn)
    return drawn if cap is None else drawn[:cap]


def _in_turn(groups: list[list], limit: int | None) -> list:
    """One question from each group in turn (the first of each, then the second, ...), the first ``limit``."""
    taken: list = []
    for depth in range(max(map(len, groups), default=0)):
        taken += [group[depth] for group in groups if depth < len(group)]
    return taken if limit is None else taken[:limit]


def questions_per_database(examples: list) -> dict[str, int]:
    """``{db_id: number of questions}``, sorted by ``db_id``."""
    counts: dict[str, int] = {}
    for ex in examples:
        counts[ex.db_id] = counts.get(ex.db_id, 0) + 1
    return dict(sorted(counts.items()))


def _counted(examples: list) -> str:
    counts = questions_per_database(examples)
    return f"{len(examples)} questions from {len(counts)} database{'' if len(counts) == 1 else 's'}"


def learn_databases(store: ExampleStore, examples: list) -> Any:
    """Put ``examples``' pairs into ``store``, each into its database, one database at a time; the import report."""
    from text2sql_dspy.programs.examples.imports import Entry, ImportReport, import_entries, progress_bar
    from text2sql_dspy.programs.examples.store import TRAIN
    from text2sql_dspy.programs.source import open_source

    groups: dict[str, list] = {}
    for ex in examples:
        groups.setdefault(ex.db_path, []).append(Entry("pair", ex.question, ex.gold_sql, TRAIN, "sqlite"))
    report = ImportReport()
    with progress_bar(len(examples), "checking training databases' pairs") as bar:
        for db_path, entries in groups.items():
            report.absorb(import_entries(store, open_source(db_path), entries, bar=bar))
    return report


def check_unseen(store: ExampleStore, dev: list, store_path: Path) -> None:
    """Raise :class:`ConfigurationError` when the store holds an example of a validation database: shown on it,
    that database would not be unseen."""
    from text2sql_dspy.programs.source import open_source

    for db_path in dict.fromkeys(ex.db_path for ex in dev):
        source = open_source(db_path)
        if count := store.count(source):
            raise ConfigurationError(
                f"validation database {source.db_id!r} already has {count} examples in the example store {store_path} "
                "(from an earlier compile with another --seed, or stored by hand), so it would not be unseen. "
                "Give another --out or --examples, or the earlier --seed."
            )


def _sample(examples: list, limit: int | None, seed: int) -> list:
    if limit is None or limit >= len(examples):
        return examples
    return random.Random(seed).sample(examples, limit)
