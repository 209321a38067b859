"""Compiling on many databases: the split by whole databases, the counts printed, the sidecar, and resuming a compile
from its LM response cache, with scripted LMs over a Spider-format folder of four tiny databases."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import dspy
import pytest

from tests.fakes import logprob_lm, scripted_draft
from tests.tiny_db import write_spider_folder
from text2sql_dspy.optimize.compile import Budget, CompileConfig, choose_questions, split_by_database
from text2sql_dspy.optimize.compile_command import main as compile_main
from text2sql_dspy.programs.agents.registry import metadata_path
from text2sql_dspy.programs.dataset import load_split
from text2sql_dspy.programs.errors import ConfigurationError

# --------------------------------------------------------------------------- the split, on its own


def questions(sizes: dict[str, int]) -> list[dspy.Example]:
    """``sizes[db]`` questions for each database, in file order, numbered per database."""
    return [dspy.Example(db_id=db, question=f"{db} question {i}") for db, n in sizes.items() for i in range(n)]


TEN = {f"db{i}": 2 + i for i in range(10)}  # ten databases of 2..11 questions


@pytest.mark.parametrize(("options", "train_dbs", "dev_dbs", "train_n", "dev_n"), [
    ({"train_databases": 4, "dev_databases": 2}, 4, 2, None, None),
    ({"train_databases": 4, "dev_databases": 2, "per_database": 1}, 4, 2, 4, 2),
    ({"train_databases": 0.5, "dev_databases": 0.2, "per_database": 3}, 5, 2, None, None),
    ({"dev_databases": 0.2}, 8, 2, None, None),  # training: every database validation leaves
    ({"dev_databases": 0}, 10, 0, None, 0),  # no validation side
    ({"train_databases": 8, "dev_databases": 2, "per_database": 2, "train_limit": 5, "dev_limit": 3}, 8, 2, 5, 3),
    ({"train_databases": 2, "dev_databases": 1, "per_database": 2, "train_limit": 3}, 2, 1, 3, 2),
])  # fmt: skip
def test_a_split_by_database_never_shares_a_database_and_honours_its_caps(
    options: dict[str, Any], train_dbs: int, dev_dbs: int, train_n: int | None, dev_n: int | None
) -> None:
    split = split_by_database(questions(TEN), seed=7, **options)
    assert len(split.train_ids) == train_dbs and len(split.dev_ids) == dev_dbs
    assert not set(split.train_ids) & set(split.dev_ids), "a database on both sides"
    assert {ex.db_id for ex in split.train} <= set(split.train_ids)
    assert {ex.db_id for ex in split.dev} <= set(split.dev_ids)
    cap = options.get("per_database")
    for side, ids, limit in ((split.train, split.train_ids, options.get("train_limit")),
                             (split.dev, split.dev_ids, options.get("dev_limit"))):
        per = {db: sum(ex.db_id == db for ex in side) for db in ids}
        expected = {db: min(TEN[db], cap or TEN[db]) for db in ids}
        if limit is None:
            assert per == expected, "every drawn question of every drawn database, up to the per-database cap"
        else:
            assert len(side) == min(limit, sum(expected.values())) and all(per[db] <= expected[db] for db in ids)
            assert max(per.values()) - min(per.values()) <= 1, "a limit takes one question from each database in turn"
        assert len({ex.question for ex in side}) == len(side), "no question twice"
    if train_n is not None:
        assert len(split.train) == train_n
    if dev_n is not None:
        assert len(split.dev) == dev_n


def test_a_split_by_database_is_the_same_under_a_seed_and_another_under_another() -> None:
    def drawn(seed: int) -> tuple[list[str], list[str], list[str]]:
        split = split_by_database(questions(TEN), train_databases=3, dev_databases=2, per_database=2, seed=seed)
        return split.train_ids, split.dev_ids, [ex.question for ex in split.train + split.dev]

    assert drawn(0) == drawn(0)
    assert drawn(0) != drawn(1)
    again = split_by_database(questions(TEN), train_databases=6, dev_databases=2, seed=0)
    assert again.dev_ids == drawn(0)[1], "more training databases leave the validation databases as they were"


@pytest.mark.parametrize(("sizes", "options", "message"), [
    ({"only": 5}, {"dev_databases": 1}, "at least 2 databases.*--dev-split.*--dev-databases 0"),
    (TEN, {"train_databases": 8, "dev_databases": 4}, "need 12 databases.*come from 10: lower one of them"),
    (TEN, {"dev_databases": 10}, "no database is left for training.*Lower --dev-databases"),
    (TEN, {"dev_databases": 1.5}, "--dev-databases must be a whole number of databases or a fraction"),
    (TEN, {"train_databases": -1}, "--train-databases must be 0 or more"),
])  # fmt: skip
def test_too_few_databases_is_an_error_naming_the_fix(
    sizes: dict[str, int], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        split_by_database(questions(sizes), **options)


# --------------------------------------------------------------------------- through the command

DATABASES = ("alpha", "beta", "gamma", "delta")
SQL = ("SELECT count(*) FROM users WHERE status = 'suspended'", "SELECT count(*) FROM organizations",
       "SELECT email FROM users")


def pairs_of(db: str) -> list[tuple[str, str]]:
    """Three questions of ``db``, each naming it (so a scripted reply knows its question), with their gold SQL."""
    asked = ("How many users are suspended in {}?", "How many organizations does {} have?",
             "List the emails of {} users.")
    return [(q.format(db), sql) for q, sql in zip(asked, SQL)]


def many_databases(folder: Path, tiny_db: Path, *, dev: bool = False) -> Path:
    """A Spider-format folder: the tiny database four times, under four db_ids, with a ``train.json`` of three
    questions each and, when ``dev``, a ``dev.json`` of the last database's questions."""
    (folder / "database").mkdir(parents=True)
    records = []
    for db in DATABASES:
        (folder / "database" / db).mkdir()
        shutil.copy(tiny_db, folder / "database" / db / f"{db}.sqlite")
        records += [{"db_id": db, "question": q, "query": sql} for q, sql in pairs_of(db)]
    (folder / "train.json").write_text(json.dumps(records))
    if dev:
        (folder / "dev.json").write_text(json.dumps([r for r in records if r["db_id"] == DATABASES[-1]]))
    return folder


def scripted() -> dspy.LM:
    """Every drafting prompt answered with its question's gold SQL, token probability 0.9 (``.engine.requests``)."""
    return logprob_lm({q: scripted_draft(sql, 0.9) for db in DATABASES for q, sql in pairs_of(db)})


BUDGET = ["--train-databases", "2", "--dev-databases", "1", "--per-database", "2", "--train-limit", "3",
          "--dev-limit", "2", "--seed", "3"]


def compile_argv(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--program", "baseline", "--optimizer", "none", "--metric", "execution", "--data", str(data),
            "--out", str(out), "--retrieval", "keyword", *extra]


def test_compile_by_database_records_both_sides_and_resumes_from_its_cache(
    tmp_path: Path, tiny_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = many_databases(tmp_path / "spider", tiny_db), tmp_path / "compiled" / "many.json"
    lm, dspy_cache = scripted(), vars(dspy).get("cache")
    with dspy.context(lm=lm):
        assert compile_main(compile_argv(data, out, *BUDGET)) == 0
    printed = capsys.readouterr().out
    assert "no 'dev' split" in printed and "split by database (seed 3)" in printed
    assert "training:   3 questions from 2 databases (of 2 drawn)" in printed
    assert "validation: 2 questions from 1 database (of 1 drawn)" in printed

    meta = json.loads(metadata_path(out).read_text())
    assert meta["by_database"] is True and meta["data"] == str(data) and meta["seed"] == 3 and meta["dev_split"] is None
    assert meta["budget"] == {**meta["budget"], "train_databases": 2, "dev_databases": 1, "per_database": 2,
                              "train_limit": 3, "dev_limit": 2}
    train, dev = meta["train_databases"], meta["dev_databases"]
    assert len(train) == 2 and sorted(train.values()) == [1, 2] and meta["train_size"] == 3
    assert len(dev) == 1 and list(dev.values()) == [2] and meta["dev_size"] == 2
    assert not set(train) & set(dev) and set(train) | set(dev) < set(DATABASES)
    assert meta["learned_databases"] == sorted(train) and meta["learned"]["added"] == 6, \
        "the store learns every pair of the training databases, none of a validation database"
    assert meta["dev_before"] == {"metric": 1.0, "execution_accuracy": 1.0, "n": 2}
    assert meta["response_cache"] == "many.lm-cache" and out.with_suffix(".lm-cache").is_dir()
    assert len(lm.engine.requests) == 2, "one draft per validation question"
    assert lm.cache is False and vars(dspy).get("cache") is dspy_cache, "the LM and DSPy's cache are left as they were"

    rerun = scripted()  # a stopped compile, rerun with the same --out: its calls come back from the cache
    with dspy.context(lm=rerun):
        assert compile_main(compile_argv(data, out, *BUDGET)) == 0
    assert rerun.engine.requests == [], "no call the first run made is made again"
    assert json.loads(metadata_path(out).read_text())["dev_before"] == meta["dev_before"]

    elsewhere = scripted()  # another --out has a cache of its own
    with dspy.context(lm=elsewhere):
        assert compile_main(compile_argv(data, tmp_path / "other.json", *BUDGET)) == 0
    assert len(elsewhere.engine.requests) == 2


def test_another_seed_onto_the_same_store_is_refused_where_a_validation_database_was_learned(
    tmp_path: Path, tiny_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, out = many_databases(tmp_path / "spider", tiny_db), tmp_path / "many.json"
    argv = compile_argv(data, out, "--train-databases", "3", "--dev-databases", "1", "--dev-limit", "1")
    with dspy.context(lm=scripted()):
        assert compile_main([*argv, "--seed", "0"]) == 0
        learned = json.loads(metadata_path(out).read_text())["learned_databases"]
        seed = next(s for s in range(1, 50) if _dev_database(data, s) in learned)
        assert compile_main([*argv, "--seed", str(seed)]) == 2
    assert f"validation database {_dev_database(data, seed)!r} already has 3 examples" in capsys.readouterr().err


def _dev_database(data: Path, seed: int) -> str:
    config = CompileConfig(program="baseline", optimizer="none", metric="execution", data=str(data), out="x.json",
                           seed=seed, budget=Budget(train_databases=3, dev_databases=1, dev_limit=1))
    return choose_questions(config).dev[0].db_id


def test_a_folder_with_a_dev_split_is_used_as_before_unless_told_to_split_by_database(
    tmp_path: Path, tiny_db: Path
) -> None:
    data = many_databases(tmp_path / "spider", tiny_db, dev=True)
    config = CompileConfig(program="baseline", optimizer="none", metric="execution", data=str(data), out="x.json",
                           budget=Budget(train_limit=5, dev_limit=2))
    as_given = choose_questions(config)
    assert not as_given.by_database and [ex.question for ex in as_given.dev] == [q for q, _ in pairs_of("delta")[:2]]
    sampled = random.Random(0).sample(load_split(data, "train"), 5)  # as compile has always drawn them
    assert [ex.question for ex in as_given.train] == [ex.question for ex in sampled]
    config.by_database = True
    split = choose_questions(config)
    assert split.by_database and not {ex.db_id for ex in split.train} & {ex.db_id for ex in split.dev}


def test_the_split_flags_on_one_database_exit_with_the_fix(
    tmp_path: Path, tiny_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_spider_folder(tmp_path / "one", tiny_db, {"train": pairs_of("tiny"), "dev": pairs_of("tiny")})
    assert compile_main(compile_argv(data, tmp_path / "x.json", "--per-database", "2")) == 2
    err = capsys.readouterr().err
    assert "at least 2 databases" in err and "--dev-split" in err
    with pytest.raises(SystemExit) as refused:  # argparse refuses it before anything runs
        compile_main(compile_argv(data, tmp_path / "x.json", "--dev-databases", "1.5"))
    assert refused.value.code == 2 and "fraction between 0 and 1, got 1.5" in capsys.readouterr().err
