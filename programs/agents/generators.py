"""Generators: the ways V2 drafts a question's query, each from a different input.

A generator is a DSPy module: one question in (an :class:`Ask`: the question, its data source, the schema view and
facts the first draft was shown, its conversation), one :class:`~.drafting.Draft` out, named by the generator
(``Draft.generator``), or None where it has nothing to add. Samples of one prompt repeat its mistakes; a generator
that shows or asks the model something else (other databases' solved questions, the columns named first, fewer
tables) makes
different ones, so that the verifier has a right reading to choose more often.

- ``draft``: the question over the schema view, greedy (a follow-up: the query before it, changed: ``EditSQL``);
- ``sample``: the same prompt at temperature :data:`SAMPLE_TEMPERATURE`, one seed a call;
- ``standalone``: a follow-up rewritten to stand alone, drafted as a first question (None where the rewrite still
  points back at the conversation);
- ``pairs``: the nearest solved pairs of other databases shown with the question
  (:mod:`~..examples.carried_pairs`; a follow-up: the nearest follow-ups of other conversations);
- ``columns``: the tables and columns the answer needs, named before the query (``ColumnsFirstSQL``, schema
  linking as a first step; first questions);
- ``linked``: only the tables the retriever links to the question (None where that is the view already shown);
- another model (a served model, Claude), configured as a further generator under a name of its own
  (``generator_models=``): the draft's prompt on that model (:class:`OtherModel`).

Which run, in which order, and when V2 stops is the agent's (:class:`~.ensemble.Ensemble`); every generator's
predictor is an attribute of the agent or of the generator, so optimizers find it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import dspy

from text2sql_dspy.programs.agents.drafting import DRAFT_MAX_TOKENS, Draft, draft_sql
from text2sql_dspy.programs.agents.ensemble import PROGRAM_MADE
from text2sql_dspy.programs.conversation import History, points_back, standalone_question
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.retrieval.schema_view import SchemaView
from text2sql_dspy.programs.source import DataSource

if TYPE_CHECKING:
    from text2sql_dspy.programs.agents.base import Text2SQLProgram

__all__ = ["GENERATORS", "COLUMNS_MAX_TOKENS", "SAMPLE_TEMPERATURE", "Ask", "Drafted", "Generator", "OtherModel",
           "LinkedTables", "ColumnsFirst", "Sampled", "Standalone", "WithPairs", "generators_of"]

SAMPLE_TEMPERATURE = 0.7
COLUMNS_MAX_TOKENS = 96  # the columns named first, on top of the SQL's own cap


@dataclass(frozen=True)
class Ask:
    """One question as every generator reads it: the question, its data source, the view and facts the first draft
    was shown, the user's hint, the conversation, the LM, and the program (for other views of the schema)."""

    question: str
    source: DataSource
    view: SchemaView
    program: Text2SQLProgram
    lm: Any
    hint: str = ""
    history: History = History()
    trace: Callable[[str, str], None] = lambda kind, note: None  # a step of the answer's trace: its kind, its note

    @property
    def previous(self) -> str:
        """The query of the turn a follow-up follows ("" for a first question)."""
        return self.history.previous


class Generator(dspy.Module):
    """Question in, a draft named by :attr:`name` out (None: nothing to add)."""

    name: ClassVar[str] = ""

    def applies(self, ask: Ask) -> bool:
        """Whether this generator has anything to draft for ``ask``."""
        return True

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        raise NotImplementedError

    def drafted(self, predictor: dspy.Predict, ask: Ask, view: SchemaView, **options: Any) -> Draft:
        """``predictor``'s draft of ``ask`` over ``view`` (its text and facts), named by this generator."""
        if "previous_sql" in predictor.signature.input_fields:
            options["previous_sql"] = ask.previous
        draft = draft_sql(predictor, ask.lm, source=ask.source, question=options.pop("question", ask.question),
                          table_schemas=view.text, facts=view.facts, shown=view.renamed, **options)
        return replace(draft, generator=self.name)


class Drafted(Generator):
    """The question over the schema view, greedy; a follow-up as the change of the query before it."""

    name = "draft"

    def __init__(self, draft: dspy.Predict, edit: dspy.Predict):
        super().__init__()
        self.draft, self.edit = draft, edit

    def predictor(self, ask: Ask) -> dspy.Predict:
        return self.edit if ask.previous else self.draft

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        return self.drafted(self.predictor(ask), ask, ask.view)


class Sampled(Drafted):
    """The draft's prompt at :data:`SAMPLE_TEMPERATURE`, told apart by ``seed``."""

    name = "sample"

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        return self.drafted(self.predictor(ask), ask, ask.view, temperature=SAMPLE_TEMPERATURE, seed=seed)


class Standalone(Generator):
    """A follow-up rewritten to stand alone (one short call), drafted as a first question; None where the rewrite
    still points back at the conversation, which cannot be read alone."""

    name = "standalone"

    def __init__(self, draft: dspy.Predict):
        super().__init__()
        self.draft = draft

    def applies(self, ask: Ask) -> bool:
        return bool(ask.history.turns)

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        question = standalone_question(ask.question, list(ask.history.turns), ask.lm)
        ask.trace("rewrite", question)
        if points_back(question):
            return None
        view = ask.program.schema(ask.source, question, ask.hint)
        return self.drafted(self.draft, ask, view, question=question)


class WithPairs(Drafted):
    """The draft's prompt with the nearest solved pairs of other databases in its facts (a follow-up: of other
    conversations' follow-ups); needs the program's pool for the question's kind."""

    name = "pairs"

    def applies(self, ask: Ask) -> bool:
        return ask.program.carried_for(follow_up=bool(ask.previous)) is not None

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        pool = ask.program.carried_for(follow_up=bool(ask.previous))
        view = ask.program.schema(ask.source, ask.question, ask.hint, ask.history.text, carried=pool)
        if view.facts == ask.view.facts:
            return None  # no pair fits the facts' budget
        return self.drafted(self.predictor(ask), ask, view)


class ColumnsFirst(Generator):
    """The tables and columns the answer needs, named before the query: the agent's ``columns`` predictor (over
    ``ColumnsFirstSQL``), first questions only."""

    name = "columns"

    def __init__(self, columns: dspy.Predict):
        super().__init__()
        self.columns = columns

    def applies(self, ask: Ask) -> bool:
        return not ask.previous

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        return self.drafted(self.columns, ask, ask.view, max_tokens=DRAFT_MAX_TOKENS + COLUMNS_MAX_TOKENS)


class LinkedTables(Drafted):
    """The draft's prompt over only the tables the retriever ranks first
    (:data:`~..retrieval.schema_view.LINKED_TOP_K`) and those their keys join; None where that is the view the first
    draft was shown."""

    name = "linked"

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        view = ask.program.schema(ask.source, ask.question, ask.hint, ask.history.text, linked=True)
        if {t.lower() for t in view.tables} == {t.lower() for t in ask.view.tables}:
            return None
        return self.drafted(self.predictor(ask), ask, view)


class OtherModel(Drafted):
    """The draft's prompt on another model (a served model, Claude), under the name it was configured with: its LM,
    or a model name built once per process (:func:`~.base.built_lm`)."""

    def __init__(self, name: str, draft: dspy.Predict, edit: dspy.Predict, model: str | dspy.BaseLM):
        super().__init__(draft, edit)
        self.name, self.model = name, model

    def forward(self, ask: Ask, seed: int = 0) -> Draft | None:
        from text2sql_dspy.programs.agents.base import built_lm

        lm = self.model if isinstance(self.model, dspy.BaseLM) else built_lm(self.model)
        return self.drafted(self.predictor(ask), replace(ask, lm=lm), ask.view)


GENERATORS: tuple[type[Generator], ...] = (Drafted, Sampled, Standalone, WithPairs, ColumnsFirst, LinkedTables)


def generators_of(draft: dspy.Predict, edit: dspy.Predict, columns: dspy.Predict | None = None,
                  models: dict[str, str | dspy.BaseLM] | None = None) -> dict[str, Generator]:
    """Every generator by name, sharing the agent's predictors: ``draft`` and ``edit``, and ``columns``
    (``ColumnsFirstSQL``) where the agent has one (without it, no ``columns`` generator); and one for each of
    ``models`` (name -> a model name or an LM: :class:`OtherModel`)."""
    found: dict[str, Generator] = {
        "draft": Drafted(draft, edit), "sample": Sampled(draft, edit), "standalone": Standalone(draft),
        "pairs": WithPairs(draft, edit), "linked": LinkedTables(draft, edit)}
    if columns is not None:
        found["columns"] = ColumnsFirst(columns)
    for name, model in (models or {}).items():
        if name in found or name in PROGRAM_MADE:
            raise ConfigurationError(f"a generator model cannot be named {name!r}: the name is taken. Name it after "
                                     "the model, e.g. 'claude'.")
        found[name] = OtherModel(name, draft, edit, model)
    return found
