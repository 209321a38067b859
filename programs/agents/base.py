"""What every text-to-SQL program shares: its database, its LMs, and the shape of its answer.

A program answers ``forward(question, db_path=None)`` with a ``dspy.Prediction`` whose ``answer`` is an
:class:`~text2sql_dspy.programs.answer.Answer` (usable by ``dspy.Evaluate`` and the optimizers), and
``run(question)`` with that answer. Subclasses implement :meth:`Text2SQLProgram.answer`; this class checks the
question, opens the database, sets the LM, meters calls, tokens and cost, times the call and applies the
database's calibration.

Nothing on a program changes while it answers, so one program serves many threads: its LM is the one given,
else DSPy's configured one, else built once per model name by a lock-guarded cache (:func:`built_lm`).
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy

from text2sql_dspy.programs.agents.verifier import Verifier, load_verifier
from text2sql_dspy.programs.answer import Answer, check_question
from text2sql_dspy.programs.calibration import load_calibration
from text2sql_dspy.programs.catalog.values import render_matches, schema_words, value_index
from text2sql_dspy.programs.conversation import Conversation, History
from text2sql_dspy.programs.db.address import is_url
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.examples.selector import DEFAULT_K, ExampleSelector, render_pairs, with_notes
from text2sql_dspy.programs.examples.store import ExampleStore, StoredExample, default_store_path
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter
from text2sql_dspy.programs.query.rename import without
from text2sql_dspy.programs.retrieval.schema_view import (
    DEFAULT_FACTS_BUDGET,
    DEFAULT_SCHEMA_BUDGET,
    LINKED_TOP_K,
    SchemaView,
    estimated_tokens,
    schema_view,
)
from text2sql_dspy.programs.source import DataSource, open_source
from text2sql_dspy.programs.usage import metered

if TYPE_CHECKING:
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

# what copies of a program share
SHARED_ATTRIBUTES = frozenset({"_lm", "_judge_lm", "selector", "carried", "carried_turns", "verifier"})
ESTIMATED = "estimated from public benchmarks; text2sql calibrate fits it to this database"
logger = logging.getLogger(__name__)
WARM_QUESTION = "How many rows are there?"  # what warm() drafts for: any question shares the prefix before it
WARM_SHARE = 0.9  # the share of a schema's prompt prefix a cache must hold for it to be read whole (``cold_budget``)
# How a cold view ranks tables: by keywords, whatever ``retrieval_type`` says. The embedding model's import and the
# tables' encoding cost a new process more than the shorter prompt saves it.
COLD_RETRIEVAL = "keyword"
_BUILT: dict[tuple, dspy.LM] = {}  # (model name, role, its settings) -> the LM built for it, one per process
MODEL_SETTINGS = ("TEXT2SQL_", "LLM_", "ANTHROPIC_", "OPENAI_")  # environment variables an LM is built from
_BUILDING = threading.Lock()


class Text2SQLProgram(dspy.Module):
    """Base class. ``db_path`` is the default database; ``forward`` may name another per call."""

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        schema_path: Path | str | None = None,
        retrieval_type: str = "semantic",
        top_k: int = 5,
        model_id: str | None = None,
        lm: dspy.LM | None = None,
        schema_budget: int = DEFAULT_SCHEMA_BUDGET,
        facts_budget: int = DEFAULT_FACTS_BUDGET,
        examples: ExampleStore | Path | str | bool | None = None,
        k_examples: int = DEFAULT_K,
        mask_examples: bool = False,
        lookup_values: bool = True,
        docs: Path | str | None = None,
        verifier: Verifier | bool = True,
        cold_budget: int | None = None,
        carried: CarriedPairs | Path | str | None = None,
        carried_turns: CarriedPairs | Path | str | None = None,
    ):
        """``cold_budget``: on the embedded model, a schema over this many tokens whose prompt prefix no cache holds
        yet (a database no process has read) shows the linked tables of each question, as a schema over
        ``schema_budget`` does (ranked by keywords: :data:`COLD_RETRIEVAL`), until :meth:`warm` has read it whole
        (None: the whole schema within ``schema_budget`` whatever the cache holds). ``examples``: the example store
        whose pairs and notes this program is shown (a store, its path, or True for the default store); None shows
        none. ``k_examples`` pairs per question, at most, within
        ``facts_budget`` tokens with the stored values (:func:`question_facts`). ``lookup_values``: show
        the stored values like the question's words (:mod:`~..db.values`). ``docs``: column and table
        descriptions to add (a BIRD ``database_description/`` folder, a dbt ``schema.yml``: :mod:`~..db.docs`).
        ``verifier``: what estimates the probability that an answer is right (:mod:`.verifier`): True for the one
        shipped in the package, False for none (the program's own scores decide). ``carried``: solved pairs over
        other databases, the nearest shown to a question (:mod:`~..examples.carried_pairs`; a pool, or a folder in
        Spider's layout); None shows none. ``carried_turns``: the same for follow-ups, follow-ups of other
        conversations (a pool, or a folder in SParC's or CoSQL's layout). V2's ``pairs`` generator reads them
        (:mod:`.generators`)."""
        super().__init__()
        self.verifier = load_verifier() if verifier is True else (verifier or None)
        self.lookup_values = lookup_values
        self.selector = _selector(examples, k_examples, mask_examples)
        self.carried, self.carried_turns = _pool(carried), _pool(carried_turns)
        self.schema_budget = schema_budget
        self.cold_budget = cold_budget
        self.facts_budget = facts_budget
        self.db_path = None if db_path is None else _path_or_url(db_path)
        self.schema_path = None if schema_path is None else Path(schema_path)
        self.docs_path = None if docs is None else Path(docs)
        self.retrieval_type = retrieval_type
        self.top_k = top_k
        self.model_id = model_id
        self._lm = lm
        if self.db_path is not None or self.schema_path is not None:
            self.source()  # fail at construction on a missing database or a malformed schema

    def __deepcopy__(self, memo: dict[int, Any]) -> Text2SQLProgram:
        """A copy (optimizers make many) that shares the LMs: one model per process, never duplicated."""
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            setattr(new, key, value if key in SHARED_ATTRIBUTES else copy.deepcopy(value, memo))
        return new

    @property
    def lm(self) -> dspy.LM:
        """The agent's LM: the one given, else ``dspy.settings.lm``, else built from ``model_id``/env (once)."""
        if self._lm is not None:
            return self._lm
        if self.model_id is None and dspy.settings.lm:
            return dspy.settings.lm
        return built_lm(self.model_id)

    def source(self, db_path: Path | str | None = None) -> DataSource:
        path = db_path or self.db_path
        if path is None and self.schema_path is None:
            raise ConfigurationError("no database given: pass db_path=... (or schema_path=...) to the program.")
        return open_source(path, self.schema_path, self.docs_path)

    def schema(self, source: DataSource, question: str, hint: str = "", history: str = "", *,
               cold: bool = True, carried: CarriedPairs | None = None, linked: bool = False) -> SchemaView:
        """What the prompt shows: the whole database within ``schema_budget`` tokens (with ``cold``: within
        ``cold_budget`` while no cache holds it, :meth:`is_cold`; with ``linked``: never, :data:`LINKED_TOP_K`
        tables), else the top-k tables, and with an example store the database's notes after them; with the
        question, the conversation's earlier turns, the user's ``hint``, the nearest solved pairs of other
        databases from ``carried``, the nearest verified pairs and the stored values like its words
        (:func:`question_facts`)."""
        view = schema_view(source, question, retrieval_type=self.retrieval_type,
                           top_k=LINKED_TOP_K if linked else self.top_k,
                           budget_tokens=0 if linked else self.schema_budget)
        if cold and view.whole and self.is_cold(source):
            view = schema_view(source, question, retrieval_type=COLD_RETRIEVAL, top_k=self.top_k,
                               budget_tokens=self.cold_budget)
        notes, pairs = self.selector.shown(source, question) if self.selector is not None else ([], [])
        carried = carried.pairs(source, question) if carried is not None else []
        facts = question_facts(source, question, hint, values=self.lookup_values, tables=view.tables, history=history,
                               pairs=pairs, carried=carried, budget_tokens=self.facts_budget, namespace=view.namespace)
        text = with_notes(view.text, notes, pairs=bool(pairs)) if notes or pairs else view.text
        return replace(view, text=text, facts=facts)

    def carried_for(self, *, follow_up: bool) -> CarriedPairs | None:
        """The pool of solved pairs over other databases for a question of this kind: ``carried_turns`` for a
        follow-up, else ``carried``; None for none."""
        return self.carried_turns if follow_up else self.carried

    def forward(self, question: str, db_path: str | None = None, hint: str = "",
                history: Any = None) -> dspy.Prediction:
        """``history``: the conversation's earlier turns (:class:`~..conversation.Turn` objects or dicts, or text).
        Returns ``dspy.Prediction(answer=Answer)``."""
        question = check_question(question)
        source = self.source(db_path)
        start = time.perf_counter()
        lm = self.lm
        with dspy.context(lm=lm, adapter=dspy.settings.adapter or StablePrefixAdapter()), metered() as usage:
            answer = self.answer(question, source, " ".join(str(hint or "").split()), History.of(history))
        metrics = answer.metrics.model_copy(update={
            "lm_calls": usage.calls, "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "cost_usd": usage.cost_usd, "by_model": usage.by_model_dict(), "latency_s": time.perf_counter() - start,
            "cut_replies": usage.cut_replies,
        })
        answer = answer.model_copy(update={"metrics": metrics})
        return dspy.Prediction(answer=self.calibrated(source, answer, lm))

    def calibrated(self, source: DataSource, answer: Answer, lm: Any) -> Answer:
        """With a calibration saved for this database, program and model (``text2sql calibrate``), the answer whose
        ``confidence`` is the probability that it is right (the program's own score kept as ``raw_confidence``),
        worded by the calibration's cut-offs (:meth:`~..calibration.Calibration.inputs`); else the answer as it is."""
        calibration = load_calibration(source.store_key, self.calibration_name(), lm_name(lm))
        if calibration is None:
            return answer  # V2 words the shipped verifier's probability itself; no other score has a verdict
        return answer.model_copy(update={
            "raw_confidence": answer.confidence, "confidence": calibration.probability(answer), "calibrated": True,
            "calibration": calibration.describe(), "basis": calibration.describe(),
            "verdict_inputs": calibration.inputs(answer),
        })

    def calibration_name(self) -> str:
        """What this program's calibrations are kept under: its class and a digest of the prompts every answer goes
        through (each predictor's instructions, fields and demos; the repair loop's, built only where it runs, aside),
        so a calibration fitted with a compiled program never applies to the plain one, nor the other way round; and
        the pools of carried pairs, by their size and ``k``."""
        prompts = {name: {k: v for k, v in predictor.dump_state().items() if k != "lm"}
                   for name, predictor in self.named_predictors() if not name.startswith("repair.")}
        for name, pool in (("carried pairs", self.carried), ("carried turns", self.carried_turns)):
            if pool is not None:
                prompts[name] = {"pairs": len(pool), "k": pool.k}
        digest = hashlib.sha256(json.dumps(prompts, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return f"{type(self).__name__}-{digest}"

    def run(self, question: str, db_path: Path | str | None = None, hint: str = "", history: Any = None) -> Answer:
        """Answer ``question`` (``hint``: what its terms mean, as BIRD's evidence says; ``history``: the earlier
        turns of its conversation) as an :class:`Answer`."""
        path = None if db_path is None else str(db_path)
        return self(question=question, db_path=path, hint=hint, history=history).answer

    def is_cold(self, source: DataSource) -> bool:
        """Whether a question on ``source`` would show its linked tables for want of a warm cache: a ``cold_budget``
        is set, the whole schema is over it but within ``schema_budget`` (over that, no question is shown it whole,
        warm or not), and the embedded model's caches hold less than :data:`WARM_SHARE` of the prompt prefix it
        opens (another model: never)."""
        from text2sql_dspy.programs.llm.factory import is_embedded_model
        from text2sql_dspy.programs.llm.stable_prefix_adapter import schema_lead

        size = estimated_tokens(source.whole_schema)
        if self.cold_budget is None or not self.cold_budget < size <= self.schema_budget:
            return False
        if not is_embedded_model(self.lm):
            return False
        text = self.schema(source, WARM_QUESTION, cold=False).text
        return self.lm.engine.held_share(schema_lead(text)) < WARM_SHARE

    def warm_in_background(self, db_path: Path | str | None = None) -> threading.Thread:
        """:meth:`warm` on a daemon thread, started in a copy of the caller's context (so the LM of a ``dspy.context``
        around the call is the one warmed); a failure there is logged, and the first question meets it."""
        def warm() -> None:
            try:
                self.warm(db_path)
            except Exception as exc:  # noqa: BLE001 - the question that follows reports it properly
                logger.info("warming %s failed: %s", db_path, exc)

        thread = threading.Thread(target=contextvars.copy_context().run, args=(warm,), name="text2sql-warm",
                                  daemon=True)
        thread.start()
        return thread

    def warm(self, db_path: Path | str | None = None) -> bool:
        """Pay now what a first question on ``db_path`` would: its value index, and on the embedded model the prompt
        prefix of each of :meth:`warmed` (the schema view, which does not depend on the question, and the
        signature's instructions) read into the prefix cache by one call of one token each. False where no prefix
        can be read ahead: another model, or a schema too large to show whole. ``serve`` and ``chat`` call it while
        the user is not yet waiting."""
        from text2sql_dspy.programs.agents.drafting import draft_sql
        from text2sql_dspy.programs.llm.factory import is_embedded_model

        source = self.source(db_path)
        view = self.schema(source, WARM_QUESTION, cold=False)
        if not view.whole or not is_embedded_model(self.lm):
            return False
        with dspy.context(lm=self.lm, adapter=dspy.settings.adapter or StablePrefixAdapter()):
            for predictor, inputs in self.warmed():
                draft_sql(predictor, self.lm, source=source, question=WARM_QUESTION, table_schemas=view.text,
                          facts="", max_tokens=1, **inputs)
        return True

    def warmed(self) -> list[tuple[dspy.Predict, dict[str, str]]]:
        """The drafting predictors whose prompts :meth:`warm` reads ahead, each with the inputs it needs besides the
        schema, the facts and the question: here the first question's draft."""
        return [(self.draft, {})]

    def conversation(self, db_path: Path | str | None = None) -> Conversation:
        """A thread of follow-up questions over ``db_path`` (default: the program's database)."""
        return Conversation(self, db_path)

    def answer(self, question: str, source: DataSource, hint: str = "", history: History = History()) -> Answer:
        """Subclasses: the answer (its metrics' usage and latency are filled in by :meth:`forward`); ``history`` is
        the conversation's earlier turns (:class:`~..conversation.History`)."""
        raise NotImplementedError


def built_lm(model_id: str | None, role: str = "agent") -> dspy.LM:
    """The LM for ``model_id`` (None: the environment's or the embedded default) in ``role``, built once per process
    and shared by every program and thread that asks for it."""
    from text2sql_dspy.programs.llm.factory import build_lm, resolve_model_name

    name = resolve_model_name(model_id, role=role)
    settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(MODEL_SETTINGS)))
    key = (name, role, settings)  # the environment says where a served model is, and how to reach it
    with _BUILDING:
        if key not in _BUILT:
            _BUILT[key] = build_lm(name, role=role)
        return _BUILT[key]


def lm_name(lm: Any) -> str:
    """The model an LM runs, as a calibration is keyed by it."""
    return str(getattr(lm, "model", "") or type(lm).__name__)


def _pool(pool: CarriedPairs | Path | str | None) -> CarriedPairs | None:
    """A pool of solved pairs as given; read from its folder (Spider's, SParC's or CoSQL's layout) where a path."""
    if not isinstance(pool, (str, Path)):
        return pool
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

    return CarriedPairs.from_split(pool)


def _selector(examples: ExampleStore | Path | str | bool | None, k: int, mask: bool) -> ExampleSelector | None:
    if examples is None or examples is False:
        return None
    if examples is True:
        if not default_store_path().is_file():
            return None  # nothing learned yet: reading must not create the store
        examples = default_store_path()
    store = examples if isinstance(examples, ExampleStore) else ExampleStore(examples)
    return ExampleSelector(store, k=k, mask=mask)


def _path_or_url(target: Path | str) -> Path | str:
    """A database URL stays text (``Path`` would fold its ``//``); a file becomes a :class:`Path`."""
    return target if is_url(target) else Path(target)


def question_facts(
    source: DataSource, question: str, hint: str = "", *, values: bool = True, tables: list[str] | None = None,
    history: str = "", pairs: list[StoredExample] | None = None, carried: list[StoredExample] | None = None,
    budget_tokens: int = DEFAULT_FACTS_BUDGET, namespace: str = "",
) -> str:
    """What the drafting step is told with the question: the conversation so far, the verified ``pairs`` (most
    similar first), the user's hint, then the stored values like its words (only in ``tables``, the ones the
    prompt shows, when given: a value in an unseen table only misleads; a single word the schema itself uses is
    the schema's, not a value: see :func:`~..values.schema_words`).

    The conversation and the hint are the user's and are shown whole. The stored values, then the pairs, then the
    ``carried`` pairs of other databases (under :data:`~..carried_pairs.CARRIED_HEADER`, first) share
    ``budget_tokens``: pairs are dropped, least similar first, to fit (:func:`~..selector.render_pairs`). A value's
    table is named as the prompt shows it: without the ``namespace`` the view shows its tables without.
    """
    matches = ""
    index = value_index(source) if values else None
    if index is not None:
        found = index.lookup(question, tables=tables, names=schema_words(source.catalog))
        matches = render_matches([replace(m, table=without(m.table, namespace)) for m in found])
    left = budget_tokens - (estimated_tokens(matches) if matches else 0)
    shown = render_pairs(pairs, left) if pairs else ""
    left -= estimated_tokens(shown) if shown else 0
    lent = ""
    if carried and left > 0:
        from text2sql_dspy.programs.examples.carried_pairs import CARRIED_HEADER

        lent = render_pairs(carried, left, header=CARRIED_HEADER)
    return "\n".join(part for part in (history, lent, shown, f"Hint: {hint}" if hint else "", matches) if part)
