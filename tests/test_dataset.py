"""Spider-format loading: the bundled data/ and any other folder load the same way."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from text2sql_dspy.programs import bundled as dataset  # the bundled database lives in programs/bundled.py
from text2sql_dspy.programs.bundled import BUNDLED_DATA, ensure_bundled_database
from text2sql_dspy.programs.dataset import database_path, load_split, tables_file
from text2sql_dspy.programs.errors import ConfigurationError, DatabaseError


def spider_folder(tmp_path: Path, tiny_db: Path, records: list[dict]) -> Path:
    folder = tmp_path / "spider"
    (folder / "database" / "tiny").mkdir(parents=True)
    shutil.copy(tiny_db, folder / "database" / "tiny" / "tiny.sqlite")
    (folder / "dev.json").write_text(json.dumps(records))
    return folder


def test_spider_folder_loads_examples_with_resolved_database(tmp_path: Path, tiny_db: Path) -> None:
    records = [{"db_id": "tiny", "question": f"q{i}", "query": "SELECT 1"} for i in range(3)]
    examples = load_split(spider_folder(tmp_path, tiny_db, records), "dev", limit=2)
    assert [e.question for e in examples] == ["q0", "q1"]
    example = examples[0]
    assert set(example.inputs().keys()) == {"question", "db_path"}  # what forward() takes; db_id rides along
    assert Path(example.db_path).is_absolute() and Path(example.db_path).is_file()
    assert example.gold_sql == "SELECT 1"


def test_bundled_test_split_loads_and_builds_its_database() -> None:
    examples = load_split(BUNDLED_DATA, "test", limit=3)
    assert len(examples) == 3 and all(e.db_id == "saas" for e in examples)
    assert Path(examples[0].db_path).name == "saas.sqlite"


def test_unknown_split_and_missing_database_are_clear_errors(tmp_path: Path, tiny_db: Path) -> None:
    folder = spider_folder(tmp_path, tiny_db, [{"db_id": "ghost", "question": "q", "query": "SELECT 1"}])
    with pytest.raises(ConfigurationError, match="Available splits: dev"):
        load_split(folder, "test")
    with pytest.raises(DatabaseError, match="ghost"):
        load_split(folder, "dev")


@pytest.fixture
def fresh_digest() -> Iterator[None]:
    """Forget the cached digest of the bundled sources before and after the test."""
    dataset._bundled_sources_digest.cache_clear()
    yield
    dataset._bundled_sources_digest.cache_clear()


def test_bundled_database_is_built_into_the_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))
    built = ensure_bundled_database()
    assert built.is_relative_to(tmp_path / "cache") and built.name == "saas.sqlite"
    assert database_path(BUNDLED_DATA, "saas") == built  # the bundled folder's database is the cached one
    with closing(sqlite3.connect(built)) as conn:
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] > 0


def test_an_edited_schema_gets_its_own_database_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     fresh_digest: None) -> None:
    before = dataset.bundled_database_file()
    schemas = tmp_path / "schemas"
    shutil.copytree(dataset.BUNDLED_SCHEMAS, schemas)
    users = schemas / "saas" / "users.yaml"
    users.write_text(users.read_text() + "\n# edited\n")
    monkeypatch.setattr(dataset, "BUNDLED_SCHEMAS", schemas)
    dataset._bundled_sources_digest.cache_clear()
    after = dataset.bundled_database_file()
    assert after != before and after.parent.parent == before.parent.parent


def test_an_unwritable_cache_dir_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TEXT2SQL_CACHE", str(blocker / "cache"))
    with pytest.raises(DatabaseError, match="set TEXT2SQL_CACHE to a writable directory"):
        ensure_bundled_database()


def bird_download(tmp_path: Path, tiny_db: Path, records: list[dict]) -> Path:
    """A BIRD download as it unpacks: dev.json (gold SQL as ``SQL``), dev_tables.json,
    dev_databases/<db>/<db>.sqlite."""
    folder = tmp_path / "bird" / "dev"
    (folder / "dev_databases" / "tiny").mkdir(parents=True)
    shutil.copy(tiny_db, folder / "dev_databases" / "tiny" / "tiny.sqlite")
    (folder / "dev.json").write_text(json.dumps(records))
    (folder / "dev_tables.json").write_text("[]")
    return folder


@pytest.mark.parametrize(
    ("record", "gold", "evidence"),
    [
        ({"question": "q", "evidence": "suspended refers to status = 'suspended'", "SQL": "SELECT 2",
          "difficulty": "simple"},
         "SELECT 2", "suspended refers to status = 'suspended'"),
        ({"question": "q", "evidence": "", "SQL": "SELECT 3"}, "SELECT 3", ""),
        ({"question": "q", "query": "SELECT 4"}, "SELECT 4", ""),  # Spider's key, no evidence
    ],
)
def test_a_bird_download_loads_as_it_is(tmp_path: Path, tiny_db: Path, record: dict, gold: str, evidence: str) -> None:
    folder = bird_download(tmp_path, tiny_db, [{"db_id": "tiny", **record}])
    (example,) = load_split(folder, "dev")
    assert example.gold_sql == gold and example.evidence == evidence
    assert set(example.inputs().keys()) == {"question", "db_path"}  # evidence rides along, as db_id does
    assert Path(example.db_path) == (folder / "dev_databases" / "tiny" / "tiny.sqlite").resolve()
    assert tables_file(folder, "dev").name == "dev_tables.json"


def test_a_bird_folder_lists_its_splits_without_its_tables_file(tmp_path: Path, tiny_db: Path) -> None:
    folder = bird_download(tmp_path, tiny_db, [])
    with pytest.raises(ConfigurationError, match=r"Available splits: dev\.$"):
        load_split(folder, "train")


def test_a_record_without_gold_sql_names_both_keys(tmp_path: Path, tiny_db: Path) -> None:
    folder = bird_download(tmp_path, tiny_db, [{"db_id": "tiny", "question": "q", "evidence": "", "SQL": ""}])
    with pytest.raises(ConfigurationError, match="'query' \\(Spider\\) or 'SQL' \\(BIRD\\)"):
        load_split(folder, "dev")


def _questions(*db_ids: str) -> list:
    import dspy

    return [dspy.Example(db_id=db, question=f"q{i}") for i, db in enumerate(db_ids)]


def _turns(*conversations: tuple[str, int]) -> list:
    import dspy

    return [dspy.Example(db_id=db, question=f"c{c}t{t}", interaction=c, turn=t)
            for c, (db, turns) in enumerate(conversations) for t in range(turns)]


@pytest.mark.parametrize(("examples", "n", "kept"), [
    (_questions("a", "a", "a", "b", "b"), 1, [0, 3]),
    (_questions("a", "a", "a", "b", "b"), 2, [0, 1, 3, 4]),
    (_questions("a", "b", "a", "b", "a"), 2, [0, 1, 2, 3]),  # the split's order, databases interleaved
    (_questions("a", "a"), 5, [0, 1]),  # a database with fewer keeps them all
    (_turns(("a", 2), ("a", 3), ("b", 1)), 1, [0, 1, 5]),  # turns: every turn of the first conversations
    (_turns(("a", 2), ("a", 3), ("b", 1)), 2, [0, 1, 2, 3, 4, 5]),
])
def test_per_database_keeps_each_databases_first(examples: list, n: int, kept: list[int]) -> None:
    from text2sql_dspy.programs.dataset import per_database

    assert per_database(examples, n) == kept


def test_per_database_shuffled_is_fixed_nested_and_not_the_splits_first() -> None:
    from text2sql_dspy.programs.dataset import per_database

    examples = _questions(*(["a"] * 20 + ["b"] * 20))
    one, three = (per_database(examples, n, shuffled=True) for n in (1, 3))
    assert [examples[i].db_id for i in three] == ["a"] * 3 + ["b"] * 3
    assert set(one) < set(three) and per_database(examples, 3, shuffled=True) == three
    assert set(three) != {0, 1, 2, 20, 21, 22}
