#!/usr/bin/env python
"""Designs for the verifier's text signal, each a linear model of the (question, query) pair stacked onto the full
model, against the full model alone; out of fold with whole databases held out. ``--design hashed`` (the default):
hashed (question word, query token) pairs. ``--design embedded``: the bundled MiniLM's embeddings of the question
and of the query, as their elementwise product (a learned, weighted cosine) and their cosine.

    python benchmarks/results/verifier-pair-2026-11-29/pair_model.py COLLECTED.jsonl.gz [...] --data-root DIR
        [--design hashed|embedded]

The pair model's score for a training row is itself out of fold (inner folds by database), so the stacked model
never sees a score fitted on its own row. Prints the ROC AUC of all full rows, of follow-up rows, and of each
question's likeliest reading (the answer V2 gives), for both designs.
"""

from __future__ import annotations

import argparse
import re
import sys
import zlib
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from fit_verifier import auc, examples, shown  # noqa: E402
from sqlglot.tokens import Tokenizer  # noqa: E402

from text2sql_dspy.programs.agents.verifier import FULL, fit_model  # noqa: E402

BITS = 14
WORD = re.compile(r"[a-z]+|\d+")
STOP = frozenset("the a an of in on for to and or is are was were what which who how me show list give find all "
                 "with by from that those these their its it be as at do does did there".split())


def tokens_of(sql: str) -> list[str]:
    """The query's tokens: keywords as they are, names lower-cased, literals as their kind."""
    try:
        found = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - an unreadable query has no tokens
        return []
    out = []
    for t in found:
        kind = t.token_type.name
        out.append(kind if kind in ("STRING", "NUMBER") else t.text.lower() if kind == "VAR" else kind)
    return out


def hashed(question: str, sql: str, previous: str) -> dict[int, float]:
    """Hashed features: each query token, each (question word, query token) pair, and for a follow-up each token
    the query adds to the one before it or drops from it."""
    words = [w for w in WORD.findall(question.lower()) if w not in STOP]
    sql_tokens = set(tokens_of(sql))
    feats = [f"s:{t}" for t in sql_tokens] + [f"p:{w}|{t}" for w in set(words) for t in sql_tokens]
    if previous:
        before = set(tokens_of(previous))
        feats += [f"+:{t}" for t in sql_tokens - before] + [f"-:{t}" for t in before - sql_tokens]
    out: dict[int, float] = {}
    for f in feats:
        h = zlib.crc32(f.encode()) & ((1 << BITS) - 1)
        out[h] = 1.0
    return out


def matrix(texts: list[tuple[str, str, str]]) -> csr_matrix:
    rows, cols, vals = [], [], []
    for i, text in enumerate(texts):
        for j, v in hashed(*text).items():
            rows.append(i), cols.append(j), vals.append(v)
    return csr_matrix((vals, (rows, cols)), shape=(len(texts), 1 << BITS))


def embedded(texts: list[tuple[str, str, str]]) -> np.ndarray:
    """Each pair as the elementwise product of its question's and its query's unit MiniLM embeddings, and their
    cosine."""
    from text2sql_dspy.programs.retrieval.embedder import encode_texts

    questions = encode_texts([q for q, _, _ in texts])
    queries = encode_texts([sql for _, sql, _ in texts])
    product = questions * queries
    return np.hstack([product, product.sum(axis=1, keepdims=True)])


def pair_scores(x: csr_matrix, y: np.ndarray, dbs: list[str], train: np.ndarray, test: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The pair model's scores: out of fold (inner folds by database) on ``train``, and fitted on all of ``train``
    for ``test``."""
    inner = np.zeros(len(train))
    groups = [dbs[i] for i in train]
    for a, b in GroupKFold(min(5, len(set(groups)))).split(train, y[train], groups):
        model = LogisticRegression(C=0.1, max_iter=2000).fit(x[train[a]], y[train[a]])
        inner[b] = model.decision_function(x[train[b]])
    model = LogisticRegression(C=0.1, max_iter=2000).fit(x[train], y[train])
    return inner, model.decision_function(x[test])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--data-root", action="append", type=Path, default=[])
    parser.add_argument("--design", choices=("hashed", "embedded"), default="hashed")
    args = parser.parse_args()
    questions = list(examples(args.files, args.data_root))
    rows, right, dbs, texts, asked = [], [], [], [], []
    for i, q in enumerate(questions):
        for (row, y), text in zip(q["full"], q["texts"], strict=True):
            rows.append(row), right.append(y), dbs.append(q["db"]), texts.append(text), asked.append(i)
    y = np.array(right, dtype=bool)
    x = matrix(texts) if args.design == "hashed" else embedded(texts)
    names = tuple(n for n in FULL if n not in ("judge", "judged"))
    base, stacked = np.zeros(len(rows)), np.zeros(len(rows))
    for train, test in GroupKFold(5).split(rows, y, dbs):
        model = fit_model([rows[i] for i in train], y[train], names)
        base[test] = [model.probability(rows[i]) for i in test]
        inner, outer = pair_scores(x, y, dbs, train, test)
        with_pair = fit_model([{**rows[i], "pair": s} for i, s in zip(train, inner, strict=True)], y[train],
                              (*names, "pair"))
        stacked[test] = [with_pair.probability({**rows[i], "pair": s}) for i, s in zip(test, outer, strict=True)]
    follow = [i for i, t in enumerate(texts) if t[2]]
    print(f"{len(questions)} questions, {len(rows)} full rows ({int(y.sum())} right), {len(follow)} follow-up rows")
    for label, scores in (("full model", base), (f"full model + {'' if args.design == 'hashed' else 'embedded '}pair score", stacked)):
        final: dict[int, tuple[float, bool]] = {}
        for i, (p, r) in enumerate(zip(scores, right, strict=True)):
            if asked[i] not in final or p > final[asked[i]][0]:
                final[asked[i]] = (float(p), r)
        print(f"{label:26s} all rows AUC {shown(auc(list(scores), right))}; follow-up rows "
              f"{shown(auc([scores[i] for i in follow], [right[i] for i in follow]))}; answers "
              f"{shown(auc([p for p, _ in final.values()], [r for _, r in final.values()]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
