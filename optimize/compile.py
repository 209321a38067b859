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

This module holds the configuration, the compile itself and the saving of the compiled file and its sidecar; the
choice of questions is :mod:`.compile_questions`'s, the optimizer runs and their response cache :mod:`.compile_runs`'s.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy

from text2sql_dspy.optimize.compile_questions import (
    DEV_DATABASES,
    DatabaseSplit,
    Questions,
    check_unseen,
    choose_questions,
    database_count,
    draw_databases,
    learn_databases,
    questions_per_database,
    split_by_database,
)
from text2sql_dspy.optimize.compile_runs import (
    CompactProposer,
    _reflection_lm,
    program_lms,
    response_cache,
    run_optimizer,
    score_on,
)
from text2sql_dspy.optimize.demos import compact_demos, keep_right_drafts, varied_drafts, varied_first, with_gold_draft
from text2sql_dspy.optimize.metrics import make_metric
from text2sql_dspy.optimize.trace_audit import TraceAudit
from text2sql_dspy.programs.agents.registry import make_program, metadata_path
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.selector import DEFAULT_K
from text2sql_dspy.programs.examples.store import ExampleStore

# The names other modules and tests import from here. compile_program looks _reflection_lm up in this module, where a
# test replaces it.
__all__ = [
    "CACHE_SUFFIX", "DEV_DATABASES", "OPTIMIZERS", "Budget", "CompactProposer", "CompileConfig", "DatabaseSplit",
    "Questions", "check_unseen", "choose_questions", "compile_program", "database_count", "draw_databases",
    "learn_databases", "program_lms", "questions_per_database", "response_cache", "run_optimizer", "score_on",
    "split_by_database",
]

OPTIMIZERS = ("none", "bootstrap", "mipro", "gepa")
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
            "added": learned.added, "already_stored": learned.merged + learned.unchanged,
            "refused": len(learned.refused),
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


def _model_name(model: str | None, role: str) -> str:
    from text2sql_dspy.programs.llm.factory import resolve_model_name

    return resolve_model_name(model, role=role)  # type: ignore[arg-type]
