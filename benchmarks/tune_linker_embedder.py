#!/usr/bin/env python
"""Two learned designs of the table ranking's embedding half, out of fold on spider-train, beside today's blend.

    python benchmarks/tune_linker_embedder.py --train ../shared/benchmarks/spider-train --limit 15 \
        [--train-limit N] [--designs DE] [--folds 5] [--top-k 5] [--epochs 1]
        [--merged DIR/database/merged/merged.sqlite --merged-questions DIR/dev.json]
        [--write programs/retrieval/question_adapter.json]

The folds, catalogs and figures are ``fit_linker.py``'s: spider-train's databases dealt into groups, each group
merged into one catalog of about 150 tables, and each question ranked against its group's tables. Each design below
replaces the blend's MiniLM cosine and keeps its keyword half (0.5 each), so it differs from design A in what the
embedding learned and in nothing else. Each is fitted on the other groups' questions (all of them, not only the first
``--limit``, or the first ``--train-limit``), so each fold's databases are ones it never saw.

- **D, an adapter on the bundled MiniLM**: the embeddings stay as they are; a question's embedding ``q`` is moved to
  ``q + qW`` before its cosine to each table. ``W`` (384 x 384, from zero) is fitted so that, over its whole group's
  tables, a question's gold tables get the probability (a softmax of the cosines); its size is held down by a
  penalty on ``|W|^2``.
- **E, MiniLM fine-tuned**: the model's own weights are trained on (question, gold table) pairs, with the other
  pairs of the batch and one table of the same catalog that stock MiniLM ranks high but the gold query never reads
  as negatives (the usual in-batch contrastive loss).

With ``--merged``, both are also fitted on all of spider-train and scored on a merged database's questions. With
``--write``, D fitted on all of spider-train is written where the package ships it (``programs/retrieval/adapter.py``
reads it); nothing else here changes the program.
"""

from __future__ import annotations

import copy
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from fit_linker import against, arguments, blend, fold_rows, merged_rows, report, scored, view  # noqa: E402

from text2sql_dspy.programs.retrieval.adapter import QuestionAdapter  # noqa: E402
from text2sql_dspy.programs.retrieval.embedder import load_embedder  # noqa: E402
from text2sql_dspy.programs.retrieval.retriever import table_document  # noqa: E402

SCALE = 20.0  # cosines times this are the logits of both losses
_documents: dict[int, tuple[list[str], list[str]]] = {}


def documents(catalog) -> tuple[list[str], list[str]]:  # noqa: ANN001 - a Catalog
    """The catalog's table names (lower-cased) and the texts the retriever embeds for them."""
    if id(catalog) not in _documents:
        _documents[id(catalog)] = ([t.name.lower() for t in catalog.tables],
                                   [table_document(t) for t in catalog.tables])
    return _documents[id(catalog)]


def stock_model():  # noqa: ANN201 - a SentenceTransformer
    """The program's MiniLM, on every CPU this process may use (the program keeps it to one)."""
    import torch

    model = load_embedder()
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    return model


def encode(model, texts: list[str]) -> np.ndarray:  # noqa: ANN001
    return model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                        show_progress_bar=False)


def by_catalog(rows: list[dict]) -> dict[int, list[dict]]:
    groups: dict[int, list[dict]] = {}
    for r in rows:
        groups.setdefault(id(r["catalog"]), []).append(r)
    return groups


def embedded(model, rows: list[dict]) -> list[tuple[np.ndarray, np.ndarray, list[dict]]]:  # noqa: ANN001
    """Per catalog: its tables' embeddings, its rows' question embeddings, and the rows."""
    out = []
    for group in by_catalog(rows).values():
        _, texts = documents(group[0]["catalog"])
        out.append((encode(model, texts), encode(model, [r["question"] for r in group]), group))
    return out


def with_cosines(cosines: dict[int, dict[str, float]]):  # noqa: ANN201 - a scorer
    """A scorer that blends each row's new cosines (by ``id(row)``) 0.5/0.5 with its keyword score."""
    def score(row: dict) -> dict[str, float]:
        new = cosines[id(row)]
        return {t: 0.5 * new[t.lower()] + 0.5 * s["keyword"] for t, s in row["signals"].items()}
    return score


def cosines_of(tables: np.ndarray, questions: np.ndarray, group: list[dict], names: list[str]) -> dict:
    sims = np.clip(questions @ tables.T, 0.0, 1.0)
    return {id(r): dict(zip(names, map(float, sims[i]), strict=True)) for i, r in enumerate(group)}


# --------------------------------------------------------------------------- D: an adapter on frozen embeddings


def fit_adapter(model, rows: list[dict], *, steps: int = 300, penalty: float = 1e-3):  # noqa: ANN001, ANN201
    """``W`` fitted on ``rows`` with the bundled MiniLM's embeddings frozen (full batch, Adam), rounded to the
    float16 it ships as."""
    import torch

    torch.manual_seed(0)
    batches = []
    for tables, questions, group in embedded(model, rows):
        names, _ = documents(group[0]["catalog"])
        gold = torch.tensor([[n in r["gold"] for n in names] for r in group])
        batches.append((torch.from_numpy(tables), torch.from_numpy(questions), gold))
    weight = torch.zeros(tables.shape[1], tables.shape[1], requires_grad=True)
    optimiser = torch.optim.Adam([weight], lr=1e-3)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = penalty * (weight ** 2).sum()
        for tables, questions, gold in batches:
            moved = torch.nn.functional.normalize(questions + questions @ weight, dim=1)
            logits = SCALE * moved @ tables.T
            loss = loss + (torch.logsumexp(logits, 1)
                           - torch.logsumexp(logits.masked_fill(~gold, -1e9), 1)).sum() / len(rows)
        loss.backward()
        optimiser.step()
    shipped = QuestionAdapter(weight.detach().numpy())
    return QuestionAdapter.from_json(shipped.to_json()).weight


def adapter_cosines(model, weight: np.ndarray, rows: list[dict]) -> dict[int, dict[str, float]]:  # noqa: ANN001
    out = {}
    for tables, questions, group in embedded(model, rows):
        moved = QuestionAdapter(weight).move(questions)
        out.update(cosines_of(tables, moved, group, documents(group[0]["catalog"])[0]))
    return out


# --------------------------------------------------------------------------- E: MiniLM fine-tuned


def pairs(model, rows: list[dict], seed: int = 0) -> list[tuple[str, str, str, set[str]]]:  # noqa: ANN001
    """(question, a gold table's text, a hard negative's text, the gold tables' texts) per row and gold table.

    The hard negative is drawn from the five tables of the row's catalog that stock MiniLM ranks highest among those
    its gold query does not read."""
    rng = random.Random(seed)
    out = []
    for tables, questions, group in embedded(model, rows):
        names, texts = documents(group[0]["catalog"])
        for i, r in enumerate(group):
            order = np.argsort(-(tables @ questions[i]))
            hard = [j for j in order if names[j] not in r["gold"]][:5]
            gold = {texts[j] for j, n in enumerate(names) if n in r["gold"]}
            out.extend((r["question"], texts[j], texts[rng.choice(hard)], gold)
                       for j, n in enumerate(names) if n in r["gold"])
    rng.shuffle(out)
    return out


def fine_tuned(model, rows: list[dict], *, epochs: int = 1, batch: int = 32, lr: float = 2e-5):  # noqa: ANN001, ANN201
    """A copy of ``model`` trained on ``rows``' pairs with in-batch and hard negatives."""
    import torch

    torch.manual_seed(0)
    tuned = copy.deepcopy(model)
    tuned.max_seq_length = 128
    tuned.train()
    optimiser = torch.optim.AdamW(tuned.parameters(), lr=lr)
    examples = pairs(model, rows)
    steps, started = 0, time.monotonic()
    for epoch in range(epochs):
        for at in range(0, len(examples), batch):
            chunk = examples[at:at + batch]
            texts = [c[1] for c in chunk] + [c[2] for c in chunk]
            q = embed_grad(tuned, [c[0] for c in chunk])
            d = embed_grad(tuned, texts)
            logits = SCALE * q @ d.T
            # a table that is gold for this question is no negative, wherever it stands in the batch
            same = torch.tensor([[t in c[3] and j != i for j, t in enumerate(texts)] for i, c in enumerate(chunk)])
            loss = torch.nn.functional.cross_entropy(logits.masked_fill(same, -1e9), torch.arange(len(chunk)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            steps += 1
            if steps % 20 == 0:
                print(f"    epoch {epoch + 1}, step {steps}: loss {loss.item():.3f}, "
                      f"{(time.monotonic() - started) / steps:.2f} s a step", flush=True)
    tuned.eval()
    tuned.max_seq_length = model.max_seq_length
    return tuned


def embed_grad(model, texts: list[str]):  # noqa: ANN001, ANN201 - a torch tensor
    import torch

    features = model.preprocess(texts) if hasattr(model, "preprocess") else model.tokenize(texts)
    return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=1)


def tuned_cosines(tuned, rows: list[dict]) -> dict[int, dict[str, float]]:  # noqa: ANN001
    out = {}
    for tables, questions, group in embedded(tuned, rows):
        out.update(cosines_of(tables, questions, group, documents(group[0]["catalog"])[0]))
    return out


# --------------------------------------------------------------------------- the comparison


def first(rows: list[dict], limit: int | None) -> list[dict]:
    """The first ``limit`` rows of each database, in order (all of them for None)."""
    seen: dict[str, int] = {}
    kept = []
    for r in rows:
        seen[r["db"]] = seen.get(r["db"], 0) + 1
        if limit is None or seen[r["db"]] <= limit:
            kept.append(r)
    return kept


def compare(title: str, rows: list[dict], designs: dict[str, dict], top_k: int) -> None:
    """A and each design (its cosines by row) on ``rows``, at 3 and ``top_k``, each against A."""
    for k in sorted({3, top_k}):
        print(f"\n{title}: top {k} and the tables that join them")
        report("A: today's blend", scored(rows, k, blend))
        for label, cosines in designs.items():
            report(label, scored(rows, k, with_cosines(cosines)))
            print(f"  {'':34s} all gold shown, against A: {against(rows, view(k), view(k, with_cosines(cosines)))}")


def cosines_by_design(model, training: list[dict], rows: list[dict], args) -> dict[str, dict]:  # noqa: ANN001
    out = {}
    if "D" in args.designs:
        started = time.monotonic()
        out["D: adapter on MiniLM, blended"] = adapter_cosines(model, fit_adapter(model, training), rows)
        print(f"  D fitted on {len(training)} questions in {time.monotonic() - started:.0f} s", flush=True)
    if "E" in args.designs:
        started = time.monotonic()
        out["E: MiniLM fine-tuned, blended"] = tuned_cosines(fine_tuned(model, training, epochs=args.epochs), rows)
        print(f"  E fitted on {len(training)} questions in {time.monotonic() - started:.0f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=1, help="design E's passes over its training pairs")
    parser.add_argument("--train-limit", type=int, help="fit on only the first N questions of each database")
    parser.add_argument("--designs", default="DE", help="which designs to fit: D, E or DE (default)")
    parser.add_argument("--write", type=Path, help="fit D on every fold's questions and write it here, as the "
                        "package ships it (programs/retrieval/question_adapter.json)")
    args = parser.parse_args(argv)
    model = stock_model()
    wanted = None if args.limit is None or args.train_limit is None else max(args.limit, args.train_limit)
    every_fold = fold_rows(args.train, args.folds, wanted)
    held = [first(rows, args.limit) for rows in every_fold]
    found: dict[str, dict] = {}
    for f, rows in enumerate(held):
        print(f"fold {f}:", flush=True)
        training = first([r for g, other in enumerate(every_fold) if g != f for r in other], args.train_limit)
        for label, cosines in cosines_by_design(model, training, rows, args).items():
            found.setdefault(label, {}).update(cosines)
    compare(f"out of fold, {len(held)} groups", [r for rows in held for r in rows], found, args.top_k)
    training = first([r for rows in every_fold for r in rows], args.train_limit)
    if args.merged is not None and args.merged_questions is not None:
        rows = merged_rows(args.merged, args.merged_questions)
        print(f"\nfitted on all of spider-train ({len(training)} questions), for {args.merged}:", flush=True)
        compare(f"{args.merged} ({len(rows[0]['catalog'].tables) if rows else 0} tables)", rows,
                cosines_by_design(model, training, rows, args), args.top_k)
    if args.write is not None:
        QuestionAdapter(fit_adapter(model, training), {
            "sets": [args.train.name], "questions": len(training), "databases": len({r["db"] for r in training}),
            "command": "python benchmarks/tune_linker_embedder.py " + " ".join(argv or sys.argv[1:]),
        }).save(args.write)
        print(f"\nwrote {args.write} (D fitted on {len(training)} questions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
