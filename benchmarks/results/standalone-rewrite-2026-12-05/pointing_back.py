#!/usr/bin/env python
"""Follow-ups whose stand-alone rewrite points back at the conversation, rewritten and drafted again with today's
instruction for ``StandAloneQuestion`` and with one that forbids pointing back: on CoSQL training turns only.

    python benchmarks/results/standalone-rewrite-2026-12-05/pointing_back.py ARM OUT.jsonl [--per-kind N]

ARM is ``today``, ``alone`` (an instruction that forbids pointing back) or ``joined`` (no rewrite: the
conversation's questions joined, ``joined_question``, on the turns whose rewrite points back only). The turns are the follow-ups of ``../verifier-data-2026-12-05/cosql-train.jsonl.gz``
whose collected rewrite names the conversation, an earlier query or what was listed, mentioned or returned (the word
list below; its hits read by hand on a sample), and as many others drawn at random (seed 0). Each is rewritten with
the turns the collector showed (the program's own earlier answers) and drafted as V2 drafts its stand-alone reading
(``ReActAgentV2._standalone``), then run against gold. Resumable: a turn already in OUT is skipped.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from pathlib import Path

import dspy

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from collect_candidates import build_program, is_right  # noqa: E402

from text2sql_dspy.programs.agents.drafting import draft_sql  # noqa: E402
from text2sql_dspy.programs.answer import Answer  # noqa: E402
from text2sql_dspy.programs.conversation import Turn, joined_question, standalone_question  # noqa: E402
from text2sql_dspy.programs.dataset import load_split, scoring_of  # noqa: E402
from text2sql_dspy.programs.llm.stable_prefix_adapter import StablePrefixAdapter  # noqa: E402
from text2sql_dspy.signatures import conversation  # noqa: E402

COLLECTED = Path(__file__).resolve().parents[1] / "verifier-data-2026-12-05" / "cosql-train.jsonl.gz"
B = Path("../shared/benchmarks")
POINTS_BACK = re.compile(r"\b(previous|earlier|prior|conversation|listed (in|by|above)|returned by|the sql|"
                         r"the quer(y|ies) (returned|listed|above)|mentioned)\b", re.I)
ALONE = """Rewrite the follow-up as one question that is understood without the conversation: it is read alone, by
someone who never saw the earlier questions, their SQL or what they returned.

Carry over every condition of the earlier turns that the follow-up keeps, and name what its words such as "they",
"those", "only" or "and" refer to by the conditions that picked them out, never as "the previous query", "listed
above" or a list of values. Keep the user's own terms. Give the question only."""


def chosen(records: list[dict], per_kind: int) -> list[tuple[dict, bool]]:
    follow_ups = [r for r in records if r.get("turn") and any(s["kind"] == "rewrite" for s in r["answer"]["steps"])]
    rewrite = {r["index"]: next(s["note"] for s in r["answer"]["steps"] if s["kind"] == "rewrite") for r in follow_ups}
    back = [r for r in follow_ups if POINTS_BACK.search(rewrite[r["index"]])]
    others = [r for r in follow_ups if not POINTS_BACK.search(rewrite[r["index"]])]
    return [(r, True) for r in back[:per_kind]] + [(r, False) for r in random.Random(0).sample(others, per_kind)]


def history(records: list[dict], record: dict) -> list[Turn]:
    """The turns the collector showed: the program's own earlier answers in the conversation, those with a query."""
    earlier = sorted((r for r in records if r.get("interaction") == record["interaction"]
                      and r["db_id"] == record["db_id"] and r["turn"] < record["turn"]), key=lambda r: r["turn"])
    return [Turn.of(Answer.model_validate(r["answer"])) for r in earlier if (r.get("answer") or {}).get("sql")]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("arm", choices=("today", "alone", "joined"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-kind", type=int, default=56)
    args = parser.parse_args()
    if args.arm == "alone":
        conversation.StandAloneQuestion = conversation.StandAloneQuestion.with_instructions(ALONE)
    records = [json.loads(line) for line in gzip.open(COLLECTED, "rt") if line.strip()]
    examples = load_split(B / "cosql-train", "train", databases=B / "spider-train")
    scoring = scoring_of(B / "cosql-train", "train")
    done = {json.loads(line)["index"] for line in args.out.open()} if args.out.exists() else set()
    program = build_program()
    for record, back in chosen(records, args.per_kind):
        if record["index"] in done or (args.arm == "joined" and not back):
            continue
        example = examples[record["index"]]
        assert example.question == record["question"], record["index"]
        with dspy.context(lm=program.lm, adapter=StablePrefixAdapter()):
            turns = history(records, record)
            question = (joined_question(example.question, turns) if args.arm == "joined"
                        else standalone_question(example.question, turns, program.lm))
            source = program.source(example.db_path)
            view = program.schema(source, question)
            draft = draft_sql(program.draft, program.lm, source=source, question=question, table_schemas=view.text,
                              facts=view.facts)
        recorded = next(s for s in record["answer"]["steps"] if s["kind"] == "rewrite")["note"]
        line = {"index": record["index"], "points_back": back, "rewrite": question, "recorded": recorded,
                "points_back_now": bool(POINTS_BACK.search(question)), "sql": draft.sql,
                "right": is_right(draft.sql, example, scoring)}
        with args.out.open("a") as fh:
            fh.write(json.dumps(line) + "\n")
        print(f"{record['index']} {'back' if back else 'other'} right={line['right']} {question[:90]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
