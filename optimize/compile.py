"""Compile a program: learn the training split's verified pairs, run a DSPy optimizer, save the result.

Compiling first puts the training split into an example store (kept beside the compiled file,
which names it), so the program is shown each question's nearest verified pairs; the optimizer
then tunes with that retrieval on, scoring every training question without its own pair.
Optimizer ``none`` stops after the store: retrieval alone.

Budgets are explicit, because every trial is a full agent run, seconds to a minute on the embedded
model. Seeds are fixed, so the same flags pick the same examples.

Data without a separate dev split (a Spider training file alone), or ``by_database``, is split by whole
databases (:func:`split_by_database`): the validation databases are never training databases, and the store
learns only the training databases' pairs, so the dev score is a score on databases the compile never saw.

A compile is resumable: every LM reply it gets is kept in DSPy's response cache in a folder beside ``out``
(:func:`response_cache`), so a stopped compile rerun with the same ``out`` and flags replays the calls it
already made instead of making them again.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy
from dspy.teleprompt.gepa.instruction_proposal import InstructionProposer

from text2sql_dspy.optimize.demos import (
    compact_demos,
    compact_reflections,
    keep_right_drafts,
    varied_drafts,
    varied_first,
    with_gold_draft,
)
from text2sql_dspy.optimize.metrics import Metric, compare_execution, make_metric, predicted_sql
from text2sql_dspy.optimize.trace_audit import TraceAudit
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.agents.registry import make_program, metadata_path
from text2sql_dspy.programs.examples.selector import DEFAULT_K
from text2sql_dspy.programs.examples.store import ExampleStore

OPTIMIZERS = ("none", "bootstrap", "mipro", "gepa")
DEV_DATABASES = 0.2  # the validation side's share of the databases when split by database and not told
CACHE_SUFFIX = ".lm-cache"  # the compile's LM response cache: a folder beside --out


@dataclass
class Budget:
    """How much an optimizer may spend. Defaults suit the embedded model (minutes, not hours)."""

    train_limit: int = 8  # training examples drawn (seeded) from the train split
    dev_limit: int = 5  # dev examples scored before and after
    max_demos: int = 2  # bootstrapped demos per predictor
    max_labeled_demos: int = 0  # demos in all, the bootstrapped first, then gold-SQL ones for the drafting step
    num_trials: int = 4  # MIPROv2 trials
    num_candidates: int = 2  # MIPROv2 instruction and demo-set candidates
    max_metric_calls: int = 24  # GEPA's budget of metric calls
    # split by database only: databases on each side (a whole number, or a fraction of them) and questions from each
    train_databases: float | None = None  # None: every database the validation side leaves
    dev_databases: float | None = None  # None: DEV_DATABASES of them (none when dev_limit is 0)
    per_database: int | None = None  # None: no cap
    keep_demos: int | None = None  # of the drafting demos bootstrapped, keep this many, most varied (None: all)
    varied_first: bool = False  # bootstrap from the training questions whose gold SQL is most varied first


@dataclass
class CompileConfig:
    program: str
    optimizer: str
    metric: str
    data: str
    out: str
    train_split: str = "train"
    dev_split: str = "dev"
    budget: Budget = field(default_factory=Budget)
    seed: int = 0
    threshold: float = 0.7
    model: str | None = None
    judge_model: str | None = None
    reflection_model: str | None = None
    retrieval: str = "semantic"
    top_k: int = 5
    schema_budget: int | None = None  # tokens up to which the whole schema is shown (None: the program's default)
    threads: int = 1
    examples: str | None = None  # the example store (default: beside ``out``)
    learn: bool = True  # put the training split into the store first
    k_examples: int = DEFAULT_K
    by_database: bool = False  # split the train split by database even where a dev split exists
    carry_demos: bool = False  # mark the demos as another database's worked examples, shown on every database


def compile_program(config: CompileConfig) -> dict[str, Any]:
    """Compile as ``config`` says; write ``config.out`` and its sidecar; return the sidecar's content.

    Every LM reply goes through the response cache beside ``out`` (:func:`response_cache`), so a rerun with the
    same ``out`` and flags makes no call the stopped run had made.
    """
    if config.optimizer not in OPTIMIZERS:
        raise ConfigurationError(f"unknown optimizer {config.optimizer!r}: use one of {', '.join(OPTIMIZERS)}.")
    if Path(config.program).suffix == ".json":
        raise ConfigurationError("compile starts from a program name (baseline, v1 or v2), not a compiled file.")
    out = Path(config.out)
    if out.suffix != ".json":
        raise ConfigurationError(f"--out must name a .json file, got {out}.")
    started = time.perf_counter()
    questions = choose_questions(config)
    print(questions.describe())
    store_path = Path(config.examples) if config.examples else out.with_suffix(".examples.sqlite")
    store = ExampleStore(store_path)
    if questions.by_database:
        check_unseen(store, questions.dev, store_path)
    learned = None
    if config.learn:
        learned = learn_databases(store, questions.learn_from) if questions.by_database else \
            store.import_split(config.data, config.train_split)
        print(f"example store {store_path}: {learned.added} pairs added, {learned.merged + learned.unchanged} already "
              f"there, {len(learned.refused)} refused")
    student = make_program(
        config.program, model_id=config.model, judge_model_id=config.judge_model,
        retrieval_type=config.retrieval, top_k=config.top_k, examples=store, k_examples=config.k_examples,
        **({"schema_budget": config.schema_budget} if config.schema_budget is not None else {}),
    )
    student.selector.exclude_same_question = True  # a training question is never shown its own pair
    metric = make_metric(config.metric, judge_model=config.judge_model, threshold=config.threshold)
    train, dev = questions.train, questions.dev
    if config.budget.varied_first:
        train = varied_first(train)
    if config.budget.max_labeled_demos:
        train = [with_gold_draft(ex) for ex in train]

    prompt_lm = _reflection_lm(config, student) if config.optimizer in ("mipro", "gepa") else None
    audit = TraceAudit(config.threshold)  # the optimizer's metric verdicts against execution on the gold SQL
    cache_dir = out.with_suffix(CACHE_SUFFIX)
    with response_cache(cache_dir, program_lms(student, metric, prompt_lm)):
        before = score_on(student, dev, metric, config.threads, "dev, before")
        compiled = run_optimizer(config, student, audit.watch(metric), train, dev, prompt_lm=prompt_lm)
        wrong_demos = keep_right_drafts(compiled, train) if config.carry_demos else 0
        if config.budget.keep_demos is not None:
            varied_drafts(compiled, config.budget.keep_demos)
        demos = compact_demos(compiled, carried=config.carry_demos)
        after = score_on(compiled, dev, metric, config.threads, "dev, after") if config.optimizer != "none" else before

    out.parent.mkdir(parents=True, exist_ok=True)
    compiled.save(str(out))
    export = out.with_suffix(".examples.json")  # the store as text, to keep with the JSON (in git, say)
    store.dump(export)
    meta = {
        "program": config.program,
        "optimizer": config.optimizer,
        "metric": config.metric,
        "threshold": config.threshold,
        "model": _model_name(config.model, "agent"),
        "judge_model": _model_name(config.judge_model, "judge"),
        "reflection_model": _model_name(config.reflection_model or config.model, "agent")
        if config.optimizer in ("mipro", "gepa") else None,
        "data": config.data,
        "train_split": config.train_split,
        "dev_split": None if questions.by_database else config.dev_split,
        "by_database": questions.by_database,
        "train_size": len(train),
        "dev_size": len(dev),
        "train_databases": questions_per_database(train),
        "dev_databases": questions_per_database(dev),
        "budget": asdict(config.budget),
        "seed": config.seed,
        "response_cache": os.path.relpath(cache_dir.resolve(), out.parent.resolve()),
        "examples": os.path.relpath(store_path.resolve(), out.parent.resolve()),
        "examples_export": export.name,
        "learned": None if learned is None else {
            "added": learned.added, "already_stored": learned.merged + learned.unchanged, "refused": len(learned.refused),
        },
        "learned_databases": None if learned is None else sorted(learned.keys),
        "k_examples": config.k_examples,
        "view": {"retrieval": config.retrieval, "top_k": config.top_k, "schema_budget": config.schema_budget},
        "demos": demos,
        "carried_demos": config.carry_demos,
        "wrong_demos_dropped": wrong_demos,
        "dev_before": before,
        "dev_after": after,
        "trace_audit": audit.summary(),
        "traces": audit.rows,
        "seconds": round(time.perf_counter() - started, 1),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "dspy_version": dspy.__version__,
    }
    metadata_path(out).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


# --------------------------------------------------------------------------- which questions


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


# --------------------------------------------------------------------------- resuming


@contextmanager
def response_cache(folder: Path, lms: Iterable[Any]) -> Iterator[None]:
    """Within the block, every reply of ``lms`` is cached on disk in ``folder`` (DSPy's response cache) and replayed
    for a request seen before; after it, DSPy's cache and each LM's ``cache`` flag are as they were.

    DSPy keys a reply by the model's name, the whole prompt and every sampling option (temperature, seed, token
    limit, log-probabilities, rollout id), but not by a server's address. An LM that does not cache by design
    (DSPy's ``DummyLM``) stays uncached.
    """
    from dspy.clients import DISK_CACHE_LIMIT
    from dspy.clients.cache import Cache

    flags = {id(lm): (lm, lm.cache) for lm in lms if lm is not None and hasattr(lm, "cache")}
    cache = Cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(folder),
                  disk_size_limit_bytes=DISK_CACHE_LIMIT)
    with dspy._cache_lock:
        previous = vars(dspy).get("cache")  # read without building DSPy's default cache in the user's home
        dspy.cache = cache
    for lm, _ in flags.values():
        lm.cache = True
    try:
        yield
    finally:
        for lm, was in flags.values():
            lm.cache = was
        with dspy._cache_lock:
            if previous is None:
                vars(dspy).pop("cache", None)
            else:
                dspy.cache = previous
        cache.disk_cache.close()


def program_lms(student: Any, metric: Metric, prompt_lm: Any = None) -> list[Any]:
    """Every LM a compile calls: the agent's, its judge's (V2), the metric's judge and the prompt model."""
    lms = [student.lm, getattr(student, "judge_lm", None), prompt_lm]
    return lms + [getattr(scorer, "lm", None) for scorer in metric.scorers]


def run_optimizer(
    config: CompileConfig, student: dspy.Module, metric: Metric, train: list, dev: list, *, prompt_lm: Any = None
) -> dspy.Module:
    """The optimized copy of ``student``. ``prompt_lm``: MIPROv2's prompt model, GEPA's reflection LM (None: the
    one ``config`` names, else the agent's)."""
    budget = config.budget
    if config.optimizer == "none":
        return student  # retrieval of the stored pairs alone
    if config.optimizer == "bootstrap":
        optimizer = dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=budget.max_demos,
            max_labeled_demos=budget.max_labeled_demos, max_rounds=1,
        )
        return optimizer.compile(student, trainset=train)
    prompt_lm = _reflection_lm(config, student) if prompt_lm is None else prompt_lm
    if config.optimizer == "mipro":
        optimizer = dspy.MIPROv2(
            metric=metric, prompt_model=prompt_lm, task_model=student.lm, auto=None,
            num_candidates=budget.num_candidates, max_bootstrapped_demos=budget.max_demos,
            max_labeled_demos=budget.max_labeled_demos,
            num_threads=config.threads, seed=config.seed, verbose=False,
        )
        return optimizer.compile(
            student, trainset=train, valset=dev or None, num_trials=budget.num_trials,
            minibatch=False, seed=config.seed, program_aware_proposer=False, data_aware_proposer=False,
            fewshot_aware_proposer=False,  # a drafting demo carries a whole schema: a few overflow the prompt model
        )
    optimizer = dspy.GEPA(
        metric=metric.for_gepa(), reflection_lm=prompt_lm, max_metric_calls=budget.max_metric_calls,
        num_threads=config.threads, seed=config.seed, track_stats=False, instruction_proposer=CompactProposer(),
    )
    return optimizer.compile(student, trainset=train, valset=dev or None)


class CompactProposer(InstructionProposer):
    """GEPA's default instruction proposer, shown each reflective example's schema cut to the tables its SQL reads."""

    def __call__(self, candidate: dict[str, str], reflective_dataset: Any, components_to_update: list[str]) -> dict[str, str]:
        return super().__call__(candidate, compact_reflections(reflective_dataset), components_to_update)


def score_on(program: dspy.Module, examples: list, metric: Metric, threads: int, label: str) -> dict[str, Any]:
    """``metric``'s mean on ``examples`` and, where gold SQL is known, the execution accuracy."""
    if not examples:
        return {"metric": None, "execution_accuracy": None, "n": 0}
    print(f"scoring on {label} ({len(examples)} questions)")
    evaluator = dspy.Evaluate(devset=examples, metric=metric, num_threads=threads, display_progress=True)
    result = evaluator(program)
    graded = [(ex, pred) for ex, pred, _ in result.results if ex.get("gold_sql")]
    correct = [
        pred is not None and compare_execution(predicted_sql(pred), ex.gold_sql, ex.db_path).match
        for ex, pred in graded
    ]
    return {
        "metric": round(result.score / 100, 4),
        "execution_accuracy": round(sum(correct) / len(correct), 4) if correct else None,
        "n": len(examples),
    }


def _sample(examples: list, limit: int | None, seed: int) -> list:
    if limit is None or limit >= len(examples):
        return examples
    return random.Random(seed).sample(examples, limit)


def _reflection_lm(config: CompileConfig, student: Any) -> Any:
    """The LM that proposes instructions (MIPROv2's prompt model, GEPA's reflection LM)."""
    if config.reflection_model is None:
        return student.lm
    from text2sql_dspy.programs.llm.factory import build_lm

    return build_lm(config.reflection_model)


def _model_name(model: str | None, role: str) -> str:
    from text2sql_dspy.programs.llm.factory import resolve_model_name

    return resolve_model_name(model, role=role)  # type: ignore[arg-type]
