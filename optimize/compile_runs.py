"""A compile's optimizer runs: the LMs it calls, whose replies a response cache beside the compiled file keeps (so a
stopped compile rerun replays them), the optimizer itself (BootstrapFewShot, MIPROv2, GEPA) and the scoring before
and after."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy
from dspy.teleprompt.gepa.instruction_proposal import InstructionProposer

from text2sql_dspy.optimize.demos import compact_reflections
from text2sql_dspy.optimize.metrics import Metric, compare_execution, predicted_sql

if TYPE_CHECKING:  # pragma: no cover - typing only
    from text2sql_dspy.optimize.compile import CompileConfig


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

    def __call__(self, candidate: dict[str, str], reflective_dataset: Any,
                 components_to_update: list[str]) -> dict[str, str]:
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


def _reflection_lm(config: CompileConfig, student: Any) -> Any:
    """The LM that proposes instructions (MIPROv2's prompt model, GEPA's reflection LM)."""
    if config.reflection_model is None:
        return student.lm
    from text2sql_dspy.programs.llm.factory import build_lm

    return build_lm(config.reflection_model)
