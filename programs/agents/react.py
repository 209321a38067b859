"""The agents. V1 checks structure; V2 is V1 with a judge on its own LM that reads each query's result.

One question's path, top to bottom in :meth:`ReActAgent.answer`:

1. **draft** the query; V2, when the draft's own token confidence is low, samples more candidates, stopping
   once the majority result is settled;
2. **check** each distinct draft with the validator's rules; if none is valid, redraft once from the findings;
3. **run** the valid ones read-only and **group** them by result;
4. V2: **judge** one query per group and **choose** by the judge's probability and the drafts' agreement; a
   chosen query that errs, returns nothing (or only NULLs) or shows a symptom is redrafted once from those facts;
5. the chosen query becomes the :class:`~..answer.Answer`.

Where no drafted query validated, the repair loop (:mod:`.repair`, a stock ``dspy.ReAct``) takes over, where the
model takes repair steps. A malformed reply never crashes a call: the answer says what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy

from text2sql_dspy.programs.agents.answering import no_answer, submitted
from text2sql_dspy.programs.agents.base import Text2SQLProgram, built_lm
from text2sql_dspy.programs.agents.candidates import (
    SYMPTOMS,
    UNSURE_MARGIN,
    Candidate,
    choice_score,
    close_readings,
    group_by_result,
    judged_score,
    majority_settled,
    preference,
    repair_hints,
    returns_nothing,
    settles,
    stops,
)
from text2sql_dspy.programs.agents.drafting import Draft, draft_sql
from text2sql_dspy.programs.agents.ensemble import FIRST, FOLLOW_UP, Ensemble, load_ensemble
from text2sql_dspy.programs.agents.generators import Ask, generators_of
from text2sql_dspy.programs.agents.judge import judge_sql
from text2sql_dspy.programs.agents.made import mended, regrouped
from text2sql_dspy.programs.agents.record import Judge, Limits, Record
from text2sql_dspy.programs.answer import Answer
from text2sql_dspy.programs.conversation import History
from text2sql_dspy.programs.query.drop_filter import literal_of, without_filter
from text2sql_dspy.programs.query.findings import LINTS, Kind
from text2sql_dspy.programs.retrieval.schema_view import SchemaView
from text2sql_dspy.programs.source import DataSource
from text2sql_dspy.signatures import ColumnsFirstSQL, DraftSQL, EditSQL, JudgeSQL

if TYPE_CHECKING:
    from text2sql_dspy.programs.examples.carried_pairs import CarriedPairs

__all__ = ["ReActAgent", "ReActAgentV2"]

DEFAULT_REPAIR_STEPS = 3  # ReAct steps on a served or hosted model (see ReActAgent.max_repair_steps)
REDRAFT_ON = (*SYMPTOMS, *LINTS)  # findings that, on a doubtful answer, are worth one redraft
WARM_PREVIOUS = "SELECT 1"  # the query warming's edit changes: any query shares the edit prompt's prefix before it

class ReActAgent(Text2SQLProgram):
    """Draft, check, run, choose; with ``judge=True`` (or as :class:`ReActAgentV2`), also judge results.

    Sub-predictors, for optimizers: ``draft``, ``edit``, ``columns`` (where the ensemble runs that generator),
    ``judge`` (with a judge) and ``repair`` (the repair loop's ``react`` and ``extract``), the last only where the loop
    takes steps (:attr:`max_repair_steps`): a program for the embedded model neither builds nor saves it. V2 drafts
    with the generators of its ``ensemble`` (:mod:`.generators`, :mod:`.ensemble`: the one shipped, by default);
    ``generator_models`` (name -> a model name or an LM) adds another model's draft as a further generator.
    """

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        judge: bool = False,
        judge_model_id: str | None = None,
        judge_lm: dspy.LM | None = None,
        max_judge_calls: int = 3,
        candidates: int | None = None,
        sample_below: float = 0.9,
        max_iterations: int = 10,
        max_retrieval_calls: int = 3,
        max_validation_attempts: int = 4,
        max_repair_steps: int | None = None,
        ensemble: Ensemble | bool = True,
        generator_models: dict[str, str | dspy.BaseLM] | None = None,
        **kwargs: Any,
    ):
        super().__init__(db_path, **kwargs)
        self.limits = Limits(max_iterations, max_retrieval_calls, max_validation_attempts,
                             max_judge_calls if judge else 0)
        self.ensemble = (load_ensemble() if ensemble is True else ensemble or Ensemble()) if judge else Ensemble()
        self.candidates = max(1, candidates if candidates is not None else (self.ensemble.budget if judge else 1))
        self.sample_below = sample_below
        self.judge_model_id = judge_model_id
        self._judge_lm = judge_lm
        self._max_repair_steps = max_repair_steps
        self.draft = dspy.Predict(DraftSQL)
        self.edit = dspy.Predict(EditSQL)  # a follow-up: the query before it, changed
        self.columns = dspy.Predict(ColumnsFirstSQL) if "columns" in self.ensemble.order else None  # where it runs
        self.generators = generators_of(self.draft, self.edit, self.columns, generator_models)
        if generator_models:  # further generators: after the ensemble's, one draft each, within a larger budget
            self.ensemble = replace(self.ensemble, order=(*self.ensemble.order, *generator_models),
                                    budget=self.ensemble.budget + len(generator_models))
            self.candidates = max(self.candidates, self.ensemble.budget)
        self.judge = dspy.Predict(JudgeSQL) if judge else None
        self.repair = self._repair_agent() if repairs(self.model_id, self._lm, max_repair_steps) else None

    @property
    def settle_at(self) -> float:
        """The early model's probability at which one draft is enough: the ensemble's, else the verifier's."""
        return self.ensemble.settle if self.ensemble.settle is not None else self.verifier.early_sure

    def carried_for(self, *, follow_up: bool) -> CarriedPairs | None:
        """The pool of solved pairs given for the kind of question, else the ensemble's (:meth:`Ensemble.pool`)."""
        given = super().carried_for(follow_up=follow_up)
        return given if given is not None else self.ensemble.pool(FOLLOW_UP if follow_up else FIRST)

    def warmed(self) -> list[tuple[dspy.Predict, dict[str, str]]]:
        """The first question's draft and a follow-up's edit, whose instructions follow the schema in its prompt: read
        ahead, a conversation's first follow-up reads only its own question."""
        return [*super().warmed(), (self.edit, {"previous_sql": WARM_PREVIOUS})]

    @property
    def judge_lm(self) -> dspy.LM:
        """The judge's LM: the one given, else ``judge_model_id`` or the judge's environment variables,
        else the agent's own LM (one shared model when both are local)."""
        if self._judge_lm is not None:
            return self._judge_lm
        from text2sql_dspy.programs.llm.factory import judge_model_from_env, resolve_model_name

        judge_name = self.judge_model_id or judge_model_from_env()  # None: the agent's model, whatever named it
        if judge_name is None or (self.judge_model_id is None and judge_name == resolve_model_name(self.model_id)):
            return self.lm
        return built_lm(judge_name, role="judge")

    @property
    def max_repair_steps(self) -> int:
        """ReAct steps after the drafts found no valid query: as given, else 0 on the embedded model, 3 on others."""
        if self._max_repair_steps is not None:
            return self._max_repair_steps
        from text2sql_dspy.programs.llm.factory import is_embedded_model

        return 0 if is_embedded_model(self.lm) else DEFAULT_REPAIR_STEPS

    def answer(self, question: str, source: DataSource, hint: str = "", history: History = History()) -> Answer:
        judge = self._judge(hint, history.text)  # a misconfigured judge fails before any work
        view = self.schema(source, question, hint, history.text)
        record = Record(question, source, self.limits, judge, tables=list(view.tables), previous=history.previous,
                        hint=hint)
        pool, drafts = self._drafts(record, view, hint, history)
        valid = [c for c in pool.values() if c.valid]
        if pool and not valid:
            valid = regrouped(record, pool)
        if pool and not valid:
            valid = mended(record, pool)
        if pool and not valid:
            redraft = self._redraft(record, view, next(iter(pool.values())), pool)
            valid = [redraft] if redraft is not None else []
        if not valid:
            return self._repaired(record, view, drafts)
        if record.judge is None and all(c.symptoms for c in valid):  # V2 redrafts after judging, with the facts
            redraft = self._redraft(record, view, valid[0], pool)
            if redraft is not None and not redraft.symptoms:
                valid.append(redraft)
        groups = group_by_result(record.run, valid)
        total = sum(c.votes for c in valid)  # drafts behind the valid queries: a vote share's denominator
        if self.verifier is not None:
            best, alternatives = self._verified_choice(record, view, groups, drafts, pool)
            return submitted(record, best, drafts, self.verifier, alternatives, agreement=best.votes / total if
                                   self.judge is not None else None)
        if record.judge is None:
            return submitted(record, groups[0], drafts, self.verifier)
        best, alternatives = self._judged_choice(record, view, groups, total, pool)
        return submitted(record, best, drafts, self.verifier, alternatives, agreement=best.votes / total)

    def _judge(self, hint: str, history: str) -> Judge | None:
        """The judge as the question's record calls it; reading the question as the drafts did, with its
        conversation and hint. A misconfigured judge (bad model string, missing key) fails here, not later."""
        if self.judge is None:
            return None
        judge = partial(judge_sql, self.judge, self.judge_lm, explain=False)  # the verdict alone
        return partial(_in_context, judge, history, hint) if hint or history else judge

    def _draft(self, record: Record, view: SchemaView, kind: str = "draft", **options: Any) -> Draft:
        """A draft of the question's query; a follow-up's as the change of the query before it (``EditSQL``)."""
        predictor = self.edit if record.previous else self.draft
        if record.previous:
            options["previous_sql"] = record.previous
        draft = draft_sql(predictor, self.lm, source=record.source, question=record.question,
                          table_schemas=view.text, facts=view.facts, shown=view.renamed, **options)
        draft = replace(draft, generator=kind)
        record.wrote(draft, kind)
        if draft.sql:
            record.draft_confidence = draft.confidence
        return draft

    def _drafts(self, record: Record, view: SchemaView, hint: str = "", history: History = History()
                ) -> tuple[dict[str, Candidate], int]:
        """The first draft and, when it is unsure (V2), the ensemble's next generators, one draft each, until its
        budget is spent or the choice is settled (:meth:`_settled`): the distinct queries, each checked once and
        carrying its drafts' votes and generators; and how many drafts were written."""
        ask = Ask(record.question, record.source, view, self, self.lm, hint, history,
                  trace=lambda kind, note: record.step(kind, note=note))
        pool: dict[str, Candidate] = {}
        drafts, weighed = 0, False
        for name in self.ensemble.order if self.candidates > 1 else self.ensemble.order[:1]:
            generator = self.generators.get(name)
            if generator is None or drafts >= self.candidates or not generator.applies(ask):
                continue
            if pool and not weighed:  # the first query drafted (a draft that gave none is drafted past)
                weighed = True
                if not self._unsure(record, next(iter(pool.values()))):
                    break  # sure enough alone
            if drafts and self._settled(record, pool, drafts, remaining=self.candidates - drafts):
                break
            draft = generator(ask, seed=drafts)
            if draft is None:
                continue  # nothing to add: the next generator takes its turn
            drafts += 1
            record.wrote(draft, "draft" if drafts == 1 else name if name != "draft" else "sample")
            if drafts == 1 and draft.sql:
                record.draft_confidence = draft.confidence
            if not draft.sql:
                continue
            record.votes[draft.sql] = record.votes.get(draft.sql, 0) + 1
            if draft.sql in pool:
                pool[draft.sql].votes += 1
                pool[draft.sql].generators = list(record.written[draft.sql])
            else:
                pool[draft.sql] = Candidate(draft, record.check(draft.sql), generators=list(record.written[draft.sql]))
        return pool, drafts

    def _settled(self, record: Record, pool: dict[str, Candidate], drafts: int, remaining: int) -> bool:
        """Whether no further draft is worth its call: with the ensemble's ``stop``, once a second generator has
        drafted and the reading V2 would choose now has the verifier's full-model probability at or above it (the
        first draft alone is the early model's to settle); without one, once the most drafted result leads the next
        by more than ``remaining`` drafts could close (adaptive consistency)."""
        stop = self.ensemble.stop
        if stop is None:
            return majority_settled(record.run, list(pool.values()), remaining=remaining)
        valid = [c for c in pool.values() if c.valid]
        if self.verifier is None or not valid or drafts < 2:
            return False
        groups = group_by_result(record.run, valid)
        for group in groups:
            group.p = self._probability(record, group, drafts, len(groups))
        best = min(groups, key=self._preference(record))
        return stops(best.p, stop, blocked=best.blocked, nothing=returns_nothing(record.facts(best.sql)),
                     symptom=bool(best.symptoms))

    def _unsure(self, record: Record, first: Candidate) -> bool:
        """Whether the first draft leaves room for doubt: by the verifier's early model where there is one (the draft
        checked and run; sure at :attr:`settle_at`), else by the draft's own token confidence."""
        if self.verifier is None:
            return first.draft.confidence < self.sample_below
        if not first.valid:
            return True
        record.run(first.sql)
        first.p = self.verifier.probability(record.reading(first.sql), record.question, early=True,
                                            previous=record.previous)
        record.step("verify", first.sql, f"P(right) {first.p:.2f} from the first draft alone")
        return not settles(first.p, self.settle_at, blocked=first.blocked,
                           nothing=returns_nothing(record.facts(first.sql)))

    def _verified_choice(self, record: Record, view: SchemaView, groups: list[Candidate], drafts: int,
                         pool: dict[str, Candidate]) -> tuple[Candidate, list[str]]:
        """The result group V2 prefers (:func:`~.candidates.preference`: no blocking finding, rows returned, no
        symptom, then the verifier's probability, the judge consulted where it adds to the verifier or is not the
        embedded model), both of two too close to call; the preferred query less a filter the question does not ask
        for, where that returns rows; and one redraft from the facts where the result is empty, only NULLs, blocked
        or showing a symptom (:data:`~.candidates.SYMPTOMS`; whatever its probability), or doubtful and showing what
        is wrong."""
        sure_alone = len(groups) == 1 and groups[0].p is not None and groups[0].p >= self.settle_at
        if not sure_alone:
            if record.judge is not None and self._judging():
                for group in groups[: max(1, self.limits.max_judge_calls - 1)]:
                    group.judgment = record.judged(group.sql)
            for group in groups:
                group.p = self._probability(record, group, drafts, len(groups))
        key = self._preference(record)
        ranked = sorted(groups, key=key)
        best, alternatives = ranked[0], []
        record.votes.update({g.sql: g.votes for g in groups})
        record.written.update({g.sql: list(g.generators) for g in groups if g.generators})
        if (len(ranked) >= 2 and best.p < self.verifier.sure and best.p - ranked[1].p < UNSURE_MARGIN
                and key(best)[:-1] == key(ranked[1])[:-1]):
            alternatives = [best.sql, ranked[1].sql]
        if best.found(Kind.UNASKED_FILTER):
            loosened = self._loosened(record, best, drafts, len(groups))
            if loosened is not None and key(loosened) < key(best):
                best, alternatives = loosened, []
        facts = record.facts(best.sql)
        failing = returns_nothing(facts) or best.blocked or bool(best.symptoms)  # redrafted whatever its probability
        if failing or (best.p < self.verifier.doubtful and best.found(*REDRAFT_ON)):
            redraft = self._redraft(record, view, best, pool, facts=True)
            if redraft is not None:
                if record.judge is not None and self._judging():
                    redraft.judgment = record.judged(redraft.sql)
                redraft.p = self._probability(record, redraft, drafts + 1, len(groups) + 1)
                if key(redraft) < key(best):
                    best, alternatives = redraft, []
        record.step("choose", best.sql, f"{best.votes} of {drafts} drafts; P(right) {best.p:.2f}")
        best.early = (sure_alone and best is groups[0]) or self.candidates == 1
        return best, alternatives

    @staticmethod
    def _preference(record: Record) -> Callable[[Candidate], tuple[bool, bool, bool, float]]:
        """How V2 ranks verified readings (:func:`~.candidates.preference`), reading each one's result once."""
        return lambda candidate: preference(candidate, record.facts(candidate.sql))

    def _loosened(self, record: Record, best: Candidate, drafts: int, groups: int) -> Candidate | None:
        """``best`` without the first filter the question does not ask for (:data:`Kind.UNASKED_FILTER`), where that
        query checks and returns rows: a reading of its own, verified as ``best``'s draft."""
        for where in best.found_where(Kind.UNASKED_FILTER):
            sql = without_filter(best.sql, literal_of(where), record.source.dialect)
            if sql is None or (check := record.check(sql, made=True)) is None or not check.valid:
                continue
            if returns_nothing(record.facts(sql)):
                continue
            record.drafts.setdefault(sql, replace(best.draft, sql=sql))
            loosened = Candidate(record.drafts[sql], check, votes=best.votes)
            loosened.p = self._probability(record, loosened, drafts, groups + 1)
            record.step("loosen", sql, f"without the unasked filter {where}; P(right) {loosened.p:.2f}")
            return loosened
        return None

    def _probability(self, record: Record, candidate: Candidate, drafts: int, groups: int) -> float:
        """The verifier's P(right) of ``candidate`` by its full model; a program that drafts once (V1) is read by the
        early model, the one fitted on a first draft alone (the full one weighs several drafts)."""
        record.run(candidate.sql)
        reading = record.reading(candidate.sql, votes=candidate.votes, generators=candidate.generators or None)
        return self.verifier.probability(reading, record.question, drafts=drafts, groups=groups,
                                         previous=record.previous, ran=record.ran, early=self.candidates == 1)

    def _judging(self) -> bool:
        """Whether V2 asks its judge: where the verifier's full model reads the verdict, or the judge is not the
        embedded model (a served model or Claude, the design card's judge on its own LM)."""
        from text2sql_dspy.programs.llm.factory import is_embedded_model

        return self.verifier.judge_helps or not is_embedded_model(self.judge_lm)

    def _redraft(self, record: Record, view: SchemaView, rejected: Candidate, pool: dict[str, Candidate], *,
                 facts: bool = False) -> Candidate | None:
        """One redraft from what was wrong with ``rejected`` (with ``facts``: also what it returned); the new query
        if it is new and valid."""
        record.redrafts += 1
        hints = repair_hints(rejected, record.facts(rejected.sql) if facts and rejected.valid else None)
        redraft = Candidate(self._draft(record, view, "redraft", hints=hints))
        if not redraft.sql or redraft.sql in pool:
            return None
        redraft.validation = record.check(redraft.sql)
        return redraft if redraft.valid else None

    def _judged_choice(self, record: Record, view: SchemaView, groups: list[Candidate], total: int,
                       pool: dict[str, Candidate]) -> tuple[Candidate, list[str]]:
        """V2: the judge's verdict on each group (one judge call stays for a redraft), the best supported group and,
        when two are too close to call, both; a chosen query whose result shows something wrong is redrafted once."""
        for group in groups[: max(1, self.limits.max_judge_calls - 1)]:
            group.judgment = record.judged(group.sql)
        best = max(groups, key=lambda g: choice_score(g, total))
        record.votes.update({g.sql: g.votes for g in groups})  # a group's votes go to the query shown for it
        alternatives = [c.sql for c in close_readings(groups, total)]
        facts = record.facts(best.sql)
        if (not facts.ok or facts.empty or facts.all_null or best.symptoms) and record.judge_available:
            redraft = self._redraft(record, view, best, pool, facts=True)
            if redraft is not None:
                redraft.judgment = record.judged(redraft.sql)
                if judged_score(redraft) > judged_score(best):  # asked for because best showed a symptom
                    best, alternatives = redraft, []
        record.step("choose", best.sql, f"{best.votes} of {total} drafts; judge {judged_score(best):.2f}")
        return best, alternatives

    def _repaired(self, record: Record, view: SchemaView, drafts: int) -> Answer:
        """No drafted query validated: the repair loop's query where it takes steps and finds a valid one; else no
        query, and why."""
        from text2sql_dspy.programs.agents.repair import repair  # only where nothing validated

        steps = self.max_repair_steps
        reason = ""  # the loop is off: the findings say why
        if steps > 0:
            agent = self.repair or self._repair_agent()  # an LM configured after the program was built takes steps
            sql, reason = repair(agent, record, view, steps, retrieval_type=self.retrieval_type)
            check = None
            if sql:
                check = record.check(sql) or record.source.validator.validate(sql, question=record.question)
            if check is not None and check.valid:
                record.run(sql)  # the answer's rows, for its reading
                repaired = Candidate(Draft(sql, record.draft_confidence), check)
                if self.verifier is not None:  # worded by the verifier as any submitted answer is
                    repaired.p = self._probability(record, repaired, drafts, 1)
                return submitted(record, repaired, drafts, self.verifier)
            reason = reason or "the repair loop's query did not pass the validator"
        return no_answer(record, reason, drafts, self.verifier)

    def _repair_agent(self) -> dspy.ReAct:
        from text2sql_dspy.programs.agents.repair import repair_agent

        return repair_agent(self.judge is not None, self.limits.max_iterations)

    def load_state(self, state: dict[str, Any], **kwargs: Any) -> None:
        """Load a saved program. One saved where the repair loop takes steps carries its predictors (built here if
        this program has none yet); one saved for the embedded model does not, and this program keeps its own.
        Files saved before the loop was named ``repair`` name it ``agent``. A ``columns`` predictor is kept the same
        way: this program's own where the file has none."""
        state = {("repair." + k.removeprefix("agent.")) if k.startswith("agent.") else k: v for k, v in state.items()}
        saved = any(name.startswith("repair.") for name in state)
        if saved and self.repair is None:
            self.repair = self._repair_agent()
        elif not saved and self.repair is not None:
            state = {**state, **{k: v for k, v in self.dump_state().items() if k.startswith("repair.")}}
        if self.columns is not None and "columns" not in state:
            state = {**state, "columns": self.columns.dump_state()}
        super().load_state(state, **kwargs)


class ReActAgentV2(ReActAgent):
    """V2: :class:`ReActAgent` with the judge on (``judge=True``) and three candidates when unsure.

    Confidence is ``0.4 * agent + 0.6 * judge``, held to the V2 card's bands; a judge LM that
    fails makes the agent carry on as V1, and the answer says so.
    """

    def __init__(self, db_path: Path | str | None = None, **kwargs: Any):
        super().__init__(db_path, judge=True, **kwargs)


def repairs(model_id: str | None, lm: Any, max_repair_steps: int | None) -> bool:
    """Whether a program built with these takes repair steps, as far as is known before its LM is built: the steps
    given, else whether the LM given (or configured in DSPy, or named) is not the embedded model."""
    from text2sql_dspy.programs.llm.factory import is_embedded_model, is_local_model, resolve_model_name

    if max_repair_steps is not None:
        return max_repair_steps > 0
    if lm is None and model_id is None:
        lm = dspy.settings.lm
    if lm is not None:
        return not is_embedded_model(lm)
    return not is_local_model(resolve_model_name(model_id))


def _in_context(judge: Any, history: str, hint: str, *, question: str, **inputs: Any) -> Any:
    text = "\n".join(part for part in (history, f"Now: {question}" if history else question,
                                       f"Hint: {hint}" if hint else "") if part)
    return judge(question=text, **inputs)
