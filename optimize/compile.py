"""Compile a program: learn the training split's verified pairs, run a DSPy optimizer, save the result.

Compiling first puts the training split into an example store (kept beside the compiled file,
which names it), so the program is shown each question's nearest verified pairs; the optimizer
then tunes with that retrieval on, scoring every training question without its own pair.
Optimizer ``none`` stops after the store: retrieval alone.

Budgets are explicit, because every trial is a full agent run, seconds to a minute on the embedded
model. Seeds are fixed, so the same flags pick the same examples.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy
from dspy.teleprompt.gepa.instruction_proposal import InstructionProposer

from text2sql_dspy.optimize.demos import compact_demos, compact_reflections, with_gold_draft
from text2sql_dspy.optimize.metrics import Metric, compare_execution, make_metric, predicted_sql
from text2sql_dspy.optimize.trace_audit import TraceAudit
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.agents.registry import make_program, metadata_path
from text2sql_dspy.programs.examples.selector import DEFAULT_K
from text2sql_dspy.programs.examples.store import ExampleStore

OPTIMIZERS = ("none", "bootstrap", "mipro", "gepa")


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
    threads: int = 1
    examples: str | None = None  # the example store (default: beside ``out``)
    learn: bool = True  # put the training split into the store first
    k_examples: int = DEFAULT_K


def compile_program(config: CompileConfig) -> dict[str, Any]:
    """Compile as ``config`` says; write ``config.out`` and its sidecar; return the sidecar's content."""
    if config.optimizer not in OPTIMIZERS:
        raise ConfigurationError(f"unknown optimizer {config.optimizer!r}: use one of {', '.join(OPTIMIZERS)}.")
    if Path(config.program).suffix == ".json":
        raise ConfigurationError("compile starts from a program name (baseline, v1 or v2), not a compiled file.")
    out = Path(config.out)
    if out.suffix != ".json":
        raise ConfigurationError(f"--out must name a .json file, got {out}.")
    started = time.perf_counter()
    store_path = Path(config.examples) if config.examples else out.with_suffix(".examples.sqlite")
    store = ExampleStore(store_path)
    learned = store.import_split(config.data, config.train_split) if config.learn else None
    if learned is not None:
        print(f"example store {store_path}: {learned.added} pairs added, {learned.merged + learned.unchanged} already "
              f"there, {len(learned.refused)} refused")
    student = make_program(
        config.program, model_id=config.model, judge_model_id=config.judge_model,
        retrieval_type=config.retrieval, top_k=config.top_k, examples=store, k_examples=config.k_examples,
    )
    student.selector.exclude_same_question = True  # a training question is never shown its own pair
    metric = make_metric(config.metric, judge_model=config.judge_model, threshold=config.threshold)
    train = _sample(load_split(config.data, config.train_split), config.budget.train_limit, config.seed)
    dev = load_split(config.data, config.dev_split, limit=config.budget.dev_limit) if config.budget.dev_limit else []
    if config.budget.max_labeled_demos:
        train = [with_gold_draft(ex) for ex in train]

    before = score_on(student, dev, metric, config.threads, "dev, before")
    audit = TraceAudit(config.threshold)  # the optimizer's metric verdicts against execution on the gold SQL
    compiled = run_optimizer(config, student, audit.watch(metric), train, dev)
    demos = compact_demos(compiled)
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
        "dev_split": config.dev_split,
        "train_size": len(train),
        "dev_size": len(dev),
        "budget": asdict(config.budget),
        "seed": config.seed,
        "examples": os.path.relpath(store_path.resolve(), out.parent.resolve()),
        "examples_export": export.name,
        "learned": None if learned is None else {
            "added": learned.added, "already_stored": learned.merged + learned.unchanged, "refused": len(learned.refused),
        },
        "k_examples": config.k_examples,
        "demos": demos,
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


def run_optimizer(config: CompileConfig, student: dspy.Module, metric: Metric, train: list, dev: list) -> dspy.Module:
    """The optimized copy of ``student``."""
    budget = config.budget
    if config.optimizer == "none":
        return student  # retrieval of the stored pairs alone
    if config.optimizer == "bootstrap":
        optimizer = dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=budget.max_demos,
            max_labeled_demos=budget.max_labeled_demos, max_rounds=1,
        )
        return optimizer.compile(student, trainset=train)
    prompt_lm = _reflection_lm(config, student)
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
