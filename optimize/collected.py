"""Collected training answers, read back as what several generators drafted for each question.

``python -m text2sql_dspy.optimize.collect --generators ...`` answers training questions with every generator of a list
and writes one JSON line a question: the answer (its readings, and its steps, each drafting step naming its generator),
which readings are right, and each reading's result group (:func:`~.collect.result_groups`). Here each
line becomes a :class:`Collected`: the drafts in the order written, and the readings they gave. Its
:meth:`Collected.groups` are the result groups that any subset of those generators would have given V2 to choose
among, each as the verifier reads it (:func:`~text2sql_dspy.programs.agents.verifier.features`); so what a set of
generators, an order or a stopping rule would have done is replayed without a model call.

Only training splits are read (:data:`REFUSED` names the sets that never are).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from text2sql_dspy.programs.agents.candidates import SYMPTOMS, rank
from text2sql_dspy.programs.agents.ensemble import PROGRAM_MADE
from text2sql_dspy.programs.agents.verifier import features
from text2sql_dspy.programs.answer import Answer, Reading
from text2sql_dspy.programs.errors import ConfigurationError
from text2sql_dspy.programs.query.findings import BLOCKING, LINTS

__all__ = ["REFUSED", "Collected", "Group", "blocked", "collected", "lines", "refuse_held_out", "returns_nothing",
           "symptomatic"]

# The sets the product is measured on, and any test split: never fitted or chosen on.
REFUSED = ("spider-public", "sparc-public", "bird-public", "dev", "test")


def refuse_held_out(paths: Iterable[Path | str]) -> None:
    """Raise :class:`ConfigurationError` where a path names a held-out set (:data:`REFUSED`): what is fitted or chosen
    here must be on training data only."""
    for path in paths:
        parts = {p.lower() for p in Path(path).parts} | {Path(path).name.split(".")[0].lower()}
        named = [r for r in REFUSED if r in parts or any(p.startswith(f"{r}-") or p.endswith(f"-{r}") for p in parts)]
        if named:
            raise ConfigurationError(f"{path} is a held-out set ({named[0]}); fit and choose on training data only "
                                     "(spider-train, cosql-train).")


def lines(file: Path) -> list[str]:
    """The lines of a collected file: JSONL, gzip-compressed where its name ends with ``.gz``; blank lines left out."""
    with (gzip.open(file, "rt", encoding="utf-8") if file.suffix == ".gz" else file.open(encoding="utf-8")) as fh:
        return [line for line in fh.read().splitlines() if line.strip()]


@dataclass(frozen=True)
class Group:
    """One result group among the readings of some drafts: its representative reading (the cleanest, then the first
    drafted), as the verifier reads it, whether it is right, and what V2's choice reads besides the probability."""

    reading: Reading  # with the group's votes and generators
    right: bool
    blocked: bool  # a blocking finding
    nothing: bool  # returns no rows, or only NULLs
    symptom: bool  # shows a symptom (:data:`~..candidates.SYMPTOMS`)
    noted: bool  # carries a warning (never "likely right")
    drafts: int  # drafts written
    groups: int  # result groups among them
    ran: tuple[str, ...]  # the generators that drafted

    @property
    def passed(self) -> bool:
        """Clear of blocking findings, and returns rows."""
        return not self.blocked and not self.nothing

    def rank(self, p: float) -> tuple[bool, bool, bool, float]:
        """V2's rank of this group at probability ``p`` (:func:`~text2sql_dspy.programs.agents.candidates.rank`)."""
        return rank(blocked=self.blocked, nothing=self.nothing, symptom=self.symptom, p=p)

    def features(self, question: str, previous: str = "") -> dict[str, float]:
        return features(self.reading, question, drafts=self.drafts, groups=self.groups, previous=previous, ran=self.ran)


@dataclass(frozen=True)
class Collected:
    """One training question: its database, file and turn, the query of the turn before (a follow-up's), the drafts in
    the order written (generator, query: "" for none), each generator's seconds a draft, and each reading by query
    with whether it is right and its result group."""

    key: tuple
    db: str
    file: Path
    turn: int | None
    question: str
    previous: str
    drafts: tuple[tuple[str, str], ...]
    seconds: dict[str, float]
    readings: dict[str, Reading]
    right: dict[str, bool]
    group: dict[str, int | None]

    @property
    def generators(self) -> tuple[str, ...]:
        """The generators in the order they drafted (a generator twice: twice)."""
        return tuple(g for g, _ in self.drafts)

    def subset(self, chosen: Sequence[str]) -> list[tuple[str, str]]:
        """The drafts of ``chosen`` generators (a name twice: its first two drafts), in the order written."""
        left = Counter(chosen)
        picked = []
        for generator, sql in self.drafts:
            if left[generator] > 0:
                left[generator] -= 1
                picked.append((generator, sql))
        return picked

    def any_right(self, chosen: Sequence[str]) -> bool:
        """Whether a valid reading of ``chosen`` generators' drafts is right."""
        return any(self._usable(sql) and self.right.get(sql, False) for _, sql in self.subset(chosen))

    def cost(self, chosen: Sequence[str]) -> float:
        """The model seconds ``chosen`` generators' drafts took."""
        return sum(self.seconds.get(g, 0.0) for g, _ in self.subset(chosen))

    def groups(self, chosen: Sequence[str]) -> list[Group]:
        """The result groups V2 would choose among after the drafts of ``chosen`` generators, first drafted first."""
        drafts = self.subset(chosen)
        ran = tuple(dict.fromkeys(g for g, _ in drafts))
        members: dict[object, list[tuple[str, str]]] = {}
        for generator, sql in drafts:
            if self._usable(sql):
                group = self.group.get(sql)
                members.setdefault(sql if group is None else group, []).append((generator, sql))
        found = []
        for mine in members.values():
            queries = list(dict.fromkeys(sql for _, sql in mine))
            best = min(queries, key=lambda q: (blocked(self.readings[q]), _lints(self.readings[q]), queries.index(q)))
            behind = list(dict.fromkeys(g for g, _ in mine))
            reading = self.readings[best].model_copy(update={"votes": len(mine), "generators": behind})
            found.append(Group(reading, self.right.get(best, False), blocked(reading), returns_nothing(reading),
                               symptomatic(reading), bool(reading.warnings),
                               len(drafts), len(members), ran))
        return found

    def _usable(self, sql: str) -> bool:
        reading = self.readings.get(sql)
        return bool(sql) and reading is not None and reading.valid and reading.preview is not None \
            and reading.preview.error is None


def collected(files: Sequence[Path]) -> Iterator[Collected]:
    """Every question of ``files`` (each a collection with generators), a question in two files once."""
    refuse_held_out(files)
    seen: set[tuple] = set()
    for file in files:
        records = [json.loads(line) for line in lines(file)]
        answered = {(r["db_id"], r.get("interaction"), r.get("turn")): (r["answer"].get("sql") or "")
                    for r in records if r.get("turn") is not None}
        for record in records:
            key = (record["db_id"], record["index"], record.get("question"), record.get("turn"))
            if key in seen or record.get("error") or "result_groups" not in record:
                continue
            seen.add(key)
            turn = record.get("turn")
            previous = answered.get((record["db_id"], record.get("interaction"), turn - 1), "") if turn else ""
            answer = Answer.model_validate(record["answer"])
            drafts = tuple((s.generator, s.sql) for s in answer.steps
                           if s.generator and s.generator not in PROGRAM_MADE)
            spent = answer.metrics.by_generator
            seconds = {g: v["seconds"] / max(1, v["drafts"]) for g, v in spent.items()}
            yield Collected(
                key=key, db=record["db_id"], file=file, turn=turn, question=answer.question, previous=previous,
                drafts=drafts, seconds=seconds, readings={r.sql: r for r in answer.readings},
                right=dict(zip([r.sql for r in answer.readings], record["readings_correct"], strict=True)),
                group=dict(zip([r.sql for r in answer.readings], record["result_groups"], strict=True)))


def returns_nothing(reading: Reading) -> bool:
    """Whether a reading gives no answer: it did not run, failed, has no rows, or only NULLs."""
    preview = reading.preview
    return (preview is None or preview.error is not None or not preview.rows
            or all(v is None for row in preview.rows for v in row))


def blocked(reading: Reading) -> bool:
    """Whether a finding says the reading cannot be right as it stands (:data:`~..findings.BLOCKING`)."""
    return not BLOCKING.isdisjoint(f.kind for f in reading.findings)


def symptomatic(reading: Reading) -> bool:
    """Whether a finding says the result cannot be what was asked (:data:`~..candidates.SYMPTOMS`)."""
    return not SYMPTOMS.isdisjoint(f.kind for f in reading.findings)


def _lints(reading: Reading) -> int:
    return sum(f.kind in LINTS for f in reading.findings)
