#!/usr/bin/env python
"""Fit the verifier (``programs/agents/verifier.py``) on collected training answers and write ``verifier.json``.

    python -m text2sql_dspy.optimize.fit_verifier COLLECTED.jsonl [MORE.jsonl ...] --data-root DIR \
        [--data-root DIR ...] \
        [--cut-offs-on COLLECTED.jsonl ...] --out programs/agents/verifier.json

Each input is what ``optimize/collect.py`` wrote for a training split (never a dev or test set). Every
reading is checked again by today's validator with its question, so the lints are today's. Cross-validation holds
out whole databases (scikit-learn's ``GroupKFold``), so its figures say how the verifier does on a database it was
not fitted on. Prints each signal's ROC AUC alone and the models', with and without the judge, the
question-against-query features (``asked.py``) and the follow-up features; each is kept only where it adds to the
ROC AUC of the questions' final answers out of fold. "One draft is enough" (``early_sure``) is where settling on the
first draft costs next to no answer that sampling gets (:func:`one_draft_enough`, V2's choice replayed out of
fold); the words' cut-offs are apart from it, chosen on the
answers that carry no warning (an answer with one never reads "likely right", so the promise is of the others). The
file's ``fitted_on`` names the training sets (each input's name), how many questions, turns and databases, and a
digest of the collected answers, so that a refit on the same files writes the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from text2sql_dspy.optimize.collected import blocked, lines, refuse_held_out, returns_nothing, symptomatic
from text2sql_dspy.programs.agents.candidates import rank, settles
from text2sql_dspy.programs.agents.verifier import (
    ASKED,
    EARLY,
    FOLLOW_UP,
    FULL,
    Verifier,
    features,
    fit_model,
    kind_of,
)
from text2sql_dspy.programs.answer import Answer, Reading
from text2sql_dspy.programs.calibration import doubtful_threshold, sure_threshold
from text2sql_dspy.programs.source import open_source
from text2sql_dspy.programs.verdict import Verdict, verdict_of

GAIN = 0.01  # a model keeps the judge, the question-against-query features or the follow-up features only where they
# add this much to the ROC AUC of the questions' final answers out of fold


def database_of(db_id: str, roots: list[Path]) -> Path:
    for root in roots:
        for path in (root / "database" / db_id / f"{db_id}.sqlite", root / db_id / f"{db_id}.sqlite"):
            if path.is_file():
                return path
    if db_id == "saas":
        from text2sql_dspy.programs.bundled import ensure_bundled_database

        return Path(ensure_bundled_database())
    raise FileNotFoundError(f"no database {db_id} under {roots}")


def rechecked(reading: Reading, question: str, db: Path, previous: str = "") -> Reading:
    check = open_source(db).validator.validate(reading.sql, question=question, previous=previous)
    return reading.model_copy(update={"findings": list(check.findings), "valid": check.valid})


def previous_queries(records: list[dict]) -> dict[tuple, str]:
    """The query each turn of a conversation answered, by (database, conversation, turn): what the next turn was
    drafted after (the program's own answer, as in a conversation)."""
    return {(r["db_id"], r["interaction"], r["turn"]): r["answer"].get("sql") or "" for r in records
            if r.get("turn") is not None}


def key_of(record: dict) -> tuple:
    """A collected question's identity across files: its database, index, question and turn."""
    return record["db_id"], record["index"], record.get("question"), record.get("turn")


def examples(files: list[Path], roots: list[Path]) -> Iterator[dict]:
    """Per question: its database, the early row (the greedy draft), the full rows (each judged result group), their
    texts (question, query, the query before it), and what V2's choice reads besides the probability: whether each
    group (``passed``) and the greedy draft (``early_passed``) is clear of blocking findings and returns rows, and
    whether it carries a warning (``noted``, ``early_noted``); and the groups' readings (``readings``)."""
    seen: set[tuple] = set()  # a question collected into two files (a shuffled pick among the first) counts once
    for file in files:
        records = [json.loads(line) for line in lines(file)]
        answered = previous_queries(records)
        for record in records:
            key = key_of(record)
            if key in seen:
                continue
            seen.add(key)
            turn = record.get("turn")
            previous = answered.get((record["db_id"], record.get("interaction"), turn - 1), "") if turn else ""
            answer = Answer.model_validate(record["answer"])
            db = database_of(record["db_id"], roots)
            right = dict(zip([r.sql for r in answer.readings], record["readings_correct"], strict=True))
            readings = [rechecked(r, answer.question, db, previous) for r in answer.readings
                        if r.valid and r.preview is not None]
            greedy = next((s.sql for s in answer.steps if s.kind == "draft"), "")
            first = next((r for r in readings if r.sql == greedy), None)
            groups = [r for r in readings if r.judge_score is not None] or readings[:1]
            early = None
            if first is not None:
                early = (features(first.model_copy(update={"judge_score": None}), answer.question, previous=previous),
                         right[first.sql])
            full = [(features(r, answer.question, drafts=answer.drafts, groups=len(groups), previous=previous),
                     right[r.sql]) for r in groups]
            yield {"key": key, "db": record["db_id"], "early": early, "full": full, "turn": turn, "file": file,
                   "texts": [(answer.question, r.sql, previous) for r in groups],
                   "passed": [not blocked(r) and not returns_nothing(r) for r in groups],
                   "ranked": [(blocked(r), returns_nothing(r), symptomatic(r)) for r in groups],
                   "early_passed": first is not None and not blocked(first) and not returns_nothing(first),
                   "noted": [bool(r.warnings) for r in groups],
                   "readings": groups,
                   "early_noted": first is not None and bool(first.warnings)}


@dataclass(frozen=True)
class Choice:
    """A question's replayed answer: its probability, whether the early model gave it, whether it is right, and
    whether it carries a warning (which keeps it from reading "likely right", :func:`~..verdict.verdict_of`)."""

    p: float
    early: bool
    right: bool
    noted: bool = False

    def likely_right(self, cut: float) -> bool:
        """Whether the answer reads "likely right" at the cut-off ``cut``, by the verdict's one rule
        (:func:`~..verdict.verdict_of`: a replayed answer is a drafted query that passed validation, submitted)."""
        return verdict_of(self.p, sure=cut, doubtful=0.0, noted=self.noted) is Verdict.LIKELY_RIGHT


def choose(question: dict, early_p: float | None, full_p: Sequence[float], early_sure: float) -> Choice | None:
    """The answer V2 would give among ``question``'s readings (an :func:`examples` item), given their probabilities,
    by V2's one rule (:func:`~text2sql_dspy.programs.agents.candidates.settles`, then
    :func:`~text2sql_dspy.programs.agents.candidates.rank`); None for none. Redrafts and loosened readings are not
    collected, so it chooses among drafts."""
    if question["early"] is not None and early_p is not None and settles(
            early_p, early_sure, blocked=not question["early_passed"], nothing=not question["early_passed"]):
        return Choice(early_p, True, question["early"][1], question["early_noted"])
    if not question["full"]:
        return None
    best = min(range(len(full_p)), key=lambda i: rank(
        blocked=question["ranked"][i][0], nothing=question["ranked"][i][1], symptom=question["ranked"][i][2],
        p=full_p[i]))
    return Choice(float(full_p[best]), False, question["full"][best][1], question["noted"][best])


ENOUGH_LOSS = 0.005  # "one draft is enough" may cost at most this share of the questions' right answers
ENOUGH_CUTS = tuple(round(0.05 * i, 2) for i in range(6, 20))  # the cut-offs it is chosen among: 0.30 ... 0.95


def one_draft_enough(questions: Sequence[dict], early_p: Sequence[float | None], full_p: Sequence[Sequence[float]],
                     loss: float = ENOUGH_LOSS) -> tuple[float, dict[float, tuple[int, int]]]:
    """The early model's cut-off at and above which one draft is enough: the lowest of :data:`ENOUGH_CUTS` at which
    V2's replayed choice (:func:`choose`) is right on at most ``loss`` of the questions fewer than where
    it samples every question (1.01 where none is); and, for each cut-off, (answers one draft settles, right)."""
    def replay(cut: float) -> tuple[int, int]:
        chosen = [choose(q, e, f, cut) for q, e, f in zip(questions, early_p, full_p, strict=True)]
        return sum(c is not None and c.early for c in chosen), sum(c is not None and c.right for c in chosen)

    sampled = replay(1.01)[1]
    table = {cut: replay(cut) for cut in ENOUGH_CUTS}
    enough = next((cut for cut in ENOUGH_CUTS if table[cut][1] >= sampled - loss * len(questions)), 1.01)
    return enough, table


def auc(scores: list[float], right: list[bool]) -> float | None:
    from sklearn.metrics import roc_auc_score

    return None if len(set(right)) < 2 else float(roc_auc_score(right, scores))


def shown(value: float | None) -> str:
    """An AUC as printed: "n/a" where every row is right, or every row wrong."""
    return "n/a" if value is None else f"{value:.3f}"


def out_of_fold(rows: list[dict], right: list[bool], dbs: list[str], names: tuple[str, ...]) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    found = np.zeros(len(rows))
    folds = min(5, len(set(dbs)))
    for train, test in GroupKFold(folds).split(rows, right, dbs):
        model = fit_model([rows[i] for i in train], [right[i] for i in train], names)
        found[test] = [model.probability(rows[i]) for i in test]
    return found


def provenance(files: list[Path], questions: list[dict]) -> dict:
    """What a verifier was fitted on: the sets (each input file's name less its suffixes), the questions and
    conversation turns, the databases, and a digest of the inputs' lines."""
    digest = hashlib.sha256()
    for file in files:
        for line in lines(file):
            digest.update(line.encode("utf-8") + b"\n")
    turns = sum(q["turn"] is not None for q in questions)
    return {"sets": [f.name.split(".")[0] for f in files], "questions": len(questions) - turns, "turns": turns,
            "databases": len({q["db"] for q in questions}), "digest": digest.hexdigest()[:16]}


def likeliest(scores: Sequence[float], asked: Sequence[int] | None = None) -> dict[int, int]:
    """Each question's likeliest row, its final answer as V2 chooses (the first among equals), by question
    (``asked``: each row's question; default, a question each)."""
    best: dict[int, int] = {}
    for k, i in enumerate(range(len(scores)) if asked is None else asked):
        if i not in best or scores[k] > scores[best[i]]:
            best[i] = k
    return best


def final_auc(scores: Sequence[float], right: Sequence[bool], asked: Sequence[int] | None = None) -> float | None:
    """The ROC AUC of each question's final answer (:func:`likeliest`)."""
    rows = likeliest(scores, asked).values()
    return auc([float(scores[k]) for k in rows], [bool(right[k]) for k in rows])


def kept(rows: list, right: list[bool], dbs: list[str], names: tuple[str, ...], label: str,
         asked: Sequence[int] | None = None) -> tuple[tuple, np.ndarray]:
    """``names``, with :data:`ASKED` added where they gain :data:`GAIN` in the ROC AUC of the questions' final answers
    out of fold (:func:`final_auc`: what a user is told of, and what a refit is judged by), then :data:`FOLLOW_UP`
    where they do; and that fit's scores. The rows' own AUC, and the follow-up rows', are printed beside it."""
    scores = out_of_fold(rows, right, dbs, names)
    print(f"  {label}: AUC {shown(auc(list(scores), right))}, final answers {shown(final_auc(scores, right, asked))}")
    follow_ups = [i for i, row in enumerate(rows) if row["follow-up"]]
    for group, what in ((ASKED, "the question-against-query features"), (FOLLOW_UP, "the follow-up features")):
        more = out_of_fold(rows, right, dbs, (*names, *group))
        gain = (final_auc(more, right, asked) or 0) - (final_auc(scores, right, asked) or 0)
        on = [right[i] for i in follow_ups]
        part = (auc([more[i] for i in follow_ups], on) or 0) - (auc([scores[i] for i in follow_ups], on) or 0)
        keep = gain >= GAIN
        print(f"    with {what}: AUC {shown(auc(list(more), right))}, final answers "
              f"{shown(final_auc(more, right, asked))} (gain {gain:+.3f}; on {len(follow_ups)} follow-up rows "
              f"{part:+.3f}{', kept' if keep else ''})")
        if keep:
            names, scores = (*names, *group), more
    return names, scores


KINDS = {"single questions": lambda t: t is None, "first turns": lambda t: t == 0,
         "later turns": lambda t: t is not None and t > 0}


def by_turn(scores: np.ndarray, right: list[bool], turns: list[int | None]) -> None:
    """The out-of-fold AUC of single questions, first turns and later turns, where there are some of each."""
    for label, keep in KINDS.items():
        chosen = [i for i, t in enumerate(turns) if keep(t)]
        value = auc([float(scores[i]) for i in chosen], [right[i] for i in chosen]) if chosen else None
        if value is not None:
            print(f"  {label}: {len(chosen)} rows, AUC {value:.3f}")


def by_database(answers: Sequence[tuple[float, bool, str]]) -> dict[str, float] | None:
    """The spread over databases of the out-of-fold ROC AUC of their final answers, (probability, right, database)
    each: how many databases have both right and wrong answers, their AUCs' quartiles, and how many rank no better
    than chance (at most 0.5). None where no database has both."""
    found: dict[str, list] = {}
    for p, y, db in answers:
        found.setdefault(db, []).append((p, y))
    values = sorted(v for mine in found.values() if (v := auc([p for p, _ in mine], [y for _, y in mine])) is not None)
    if not values:
        return None
    low, median, high = np.percentile(values, [25, 50, 75])
    return {"databases": len(values), "low": float(low), "median": float(median), "high": float(high),
            "chance": sum(v <= 0.5 for v in values)}


def held_cut_off(parts: Sequence[Sequence[tuple[float, bool]]]) -> float | None:
    """The lowest "likely right" cut-off at which each of ``parts`` (answers as (probability, right)) that has
    answers holds 90% right (:func:`~text2sql_dspy.programs.calibration.sure_threshold`): the highest of their own,
    1.01 (never sure) where one never does; None where no part has answers."""
    cuts = [sure_threshold([p for p, _ in part], [y for _, y in part]) for part in parts if part]
    return max((1.01 if cut is None else cut for cut in cuts), default=None)


def cut_offs(answers: dict[int, tuple[float, bool]], turns: list[int | None], label: str,
             noted: dict[int, bool] | None = None) -> tuple[float, float | None]:
    """The cut-offs for "likely right", out of fold (:func:`held_cut_off`): a stand-alone question's, held by single
    questions and by conversations' first turns apart (a conversation opens with vaguer questions, right less often
    at the same probability, and the verdict cannot tell the two apart); and a follow-up's, on the later turns. A
    stand-alone cut-off is 1.01 where there are no answers; a follow-up's None where there are no follow-ups. Answers
    ``noted`` with a warning are left out: they never read "likely right", so the promise is not made of them."""
    parts = {kind: [answers[i] for i in sorted(answers) if keep(turns[i]) and not (noted or {}).get(i)]
             for kind, keep in KINDS.items()}
    for kind, part in parts.items():
        cut = held_cut_off([part])
        print(f"  {label}, {kind}: {len(part)} answers, cut-off {'none' if cut in (None, 1.01) else f'{cut:.3f}'}")
    alone = held_cut_off([parts["single questions"], parts["first turns"]])
    return 1.01 if alone is None else alone, held_cut_off([parts["later turns"]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cut-offs-on", action="append", type=Path, default=[],
                        help="an input whose answers choose the cut-offs (default: all): a sample as hard as the "
                             "questions users ask, where the others are a split's easy first questions")
    parser.add_argument("--enough-loss", type=float, default=ENOUGH_LOSS,
                        help="the share of the questions that settling on one draft may lose against sampling every "
                             f"one (default {ENOUGH_LOSS})")
    args = parser.parse_args(argv)
    refuse_held_out([*args.files, *args.cut_offs_on])
    judged_on = {f.resolve() for f in args.cut_offs_on or args.files}
    questions = list(examples(args.files, args.data_root))
    early = [(q["early"], q["db"]) for q in questions if q["early"] is not None]
    full = [(row, q["db"]) for q in questions for row in q["full"]]
    asked = [i for i, q in enumerate(questions) for _ in q["full"]]  # the question of each full row
    group = [j for q in questions for j, _ in enumerate(q["full"])]  # and which of its groups it is
    e_rows, e_right, e_dbs = [r for (r, _), _ in early], [y for (_, y), _ in early], [d for _, d in early]
    f_rows, f_right, f_dbs = [r for (r, _), _ in full], [y for (_, y), _ in full], [d for _, d in full]
    print(f"{len(questions)} questions from {len(set(e_dbs))} databases; early rows {len(e_rows)} "
          f"({sum(e_right)} right), full rows {len(f_rows)} ({sum(f_right)} right)")
    print("\nROC AUC of each signal alone (full rows; sign as it falls):")
    for name in (*FULL, *ASKED, *FOLLOW_UP):
        value = auc([r[name] for r in f_rows], f_right)
        if value is not None:
            print(f"  {name:32s} {max(value, 1 - value):.3f}{'' if value >= 0.5 else ' (lower is righter)'}")
    print("\nout of fold (whole databases held out):")
    early_names, early_oof = kept(e_rows, e_right, e_dbs, EARLY, "early")
    without_judge = tuple(n for n in FULL if n not in ("judge", "judged"))
    full_names, full_oof = kept(f_rows, f_right, f_dbs, FULL, "full, with the judge", asked)
    plain_names, plain_oof = kept(f_rows, f_right, f_dbs, without_judge, "full, without the judge", asked)
    gain = (final_auc(full_oof, f_right, asked) or 0) - (final_auc(plain_oof, f_right, asked) or 0)
    judge_helps = gain >= GAIN
    print(f"  the judge adds {gain:+.3f} to the final answers' AUC{': kept' if judge_helps else ''}")
    names = full_names if judge_helps else plain_names
    chosen_oof = full_oof if judge_helps else plain_oof
    by_turn(chosen_oof, f_right, [questions[i]["turn"] for i in asked])
    final_rows = likeliest(chosen_oof, asked)  # each question's answer: its likeliest group, as V2 chooses
    answers = {i: (float(chosen_oof[k]), f_right[k]) for i, k in final_rows.items()}
    noted = {i: questions[i]["noted"][group[k]] for i, k in final_rows.items()}  # whether it carries a warning
    final = sorted(answers.values())
    print(f"final answers out of fold: {len(final)}, {sum(y for _, y in final)} right, ROC AUC "
          f"{shown(auc([p for p, _ in final], [y for _, y in final]))}")
    spread = by_database([(p, y, questions[i]["db"]) for i, (p, y) in answers.items()])
    if spread is not None:
        print(f"  by database: {spread['databases']} with right and wrong answers, AUC median {spread['median']:.3f} "
              f"(quartiles {spread['low']:.3f}-{spread['high']:.3f}), {spread['chance']} at or below 0.5")
    answers = {i: a for i, a in answers.items() if questions[i]["file"].resolve() in judged_on}
    final = sorted(answers.values())
    print(f"cut-offs chosen on {len(final)} answers ({sum(y for _, y in final)} right) of "
          f"{', '.join(sorted(f.name for f in judged_on))}, less the {sum(noted[i] for i in answers)} with a warning")
    sure, follow_up_sure = cut_offs(answers, [q["turn"] for q in questions], "sure", noted)
    doubtful = doubtful_threshold([p for p, _ in final], [y for _, y in final])
    early_of = [q for q in questions if q["early"] is not None]
    early_answers = {i: (float(p), y) for i, (p, y) in enumerate(zip(early_oof, e_right, strict=True))}
    early_at = dict(zip([i for i, q in enumerate(questions) if q["early"] is not None], early_oof, strict=True))
    full_at: dict[int, list[float]] = {}
    for i, p in zip(asked, chosen_oof, strict=True):
        full_at.setdefault(i, []).append(float(p))
    early_sure, settled = one_draft_enough(questions, [early_at.get(i) for i in range(len(questions))],
                                           [full_at.get(i, []) for i in range(len(questions))], args.enough_loss)
    print(f"  one draft is enough at {early_sure:.3f} (V2's choice replayed on all {len(questions)} questions, out "
          f"of fold, losing at most {args.enough_loss:.2%} of them against sampling every one):")
    print("    " + "; ".join(f"{cut:.2f}: {n} settled, {right} right" for cut, (n, right) in settled.items()))
    early_alone, early_follow_up = cut_offs(
        {i: a for i, a in early_answers.items() if early_of[i]["file"].resolve() in judged_on},
        [q["turn"] for q in early_of], "early sure", {i: q["early_noted"] for i, q in enumerate(early_of)})
    found = {kind_of(early=False, follow_up=True): follow_up_sure, kind_of(early=True, follow_up=False): early_alone,
             kind_of(early=True, follow_up=True): early_follow_up if early_follow_up is not None else early_alone}
    sure_kept = [y for i, (p, y) in answers.items() if p >= sure and not noted[i]]
    print(f"sure at {sure:.3f} ({len(sure_kept)} answers, {sum(sure_kept)} right); "
          f"doubtful below {doubtful:.3f} ({sum(1 for p, _ in final if p < doubtful)} answers)")
    verifier = Verifier(fit_model(e_rows, e_right, early_names), fit_model(f_rows, f_right, names), sure, doubtful,
                        judge_helps, fitted_on=provenance(args.files, questions), early_sure=early_sure,
                        cut_offs={k: v for k, v in found.items() if v is not None})
    args.out.write_text(json.dumps(verifier.to_json(), indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
