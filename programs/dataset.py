"""Spider-format datasets as ``dspy.Example`` lists.

A Spider-format folder holds ``<split>.json`` files of ``{"db_id", "question", "query"}`` records
and ``database/<db_id>/<db_id>.sqlite``. The bundled ``data/`` folder and a Spider download load
the same way. A BIRD download loads as it is: its ``dev.json`` gives the gold SQL as ``SQL``, its
databases are in ``dev_databases/<db_id>/<db_id>.sqlite`` (each with BIRD's ``database_description/``
beside it, which :func:`~.db.source.open_source` reads) and its tables in ``dev_tables.json``.
Each example has inputs ``question`` and ``db_path`` (an absolute path, or a URL), plus ``db_id``,
``gold_sql`` and ``evidence`` (BIRD's hint for the question, "" where the record has none).

The bundled dataset ships inside the package as ``text2sql_dspy.data`` (the repository's
``data/``), with its schema files beside it in ``schemas/``. Its SQLite database is built on
first use into the user cache directory, never into the package, which may be read-only.

A folder may also hold ``databases.json``, a mapping from ``db_id`` to where that database lives::

    {"saas": "postgresql://reader@localhost/saas", "concert_singer": "duckdb:///spider/concert_singer.duckdb"}

A listed ``db_id`` is served from there (a relative file path is read from the folder); the others from
``database/``. Gold SQL stays SQLite: on another engine it is transpiled when scored.

A folder is scored as its benchmark's own evaluator scores it (:func:`scoring_of`): a BIRD layout by BIRD's
rule, rows as sets; any other (Spider, SParC, the bundled data) by Spider's test-suite rule.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import dspy

from text2sql_dspy.programs.bundled import BUNDLED_DATA, BUNDLED_DB_ID, ensure_bundled_database
from text2sql_dspy.programs.db.address import is_url
from text2sql_dspy.programs.errors import ConfigurationError, DatabaseError
from text2sql_dspy.programs.query.results import Scoring

DATABASES_FILE = "databases.json"


def database_target(data_dir: Path, db_id: str, split: str | None = None) -> str:
    """Where ``db_id`` lives: its ``databases.json`` entry (a URL or a path), else its SQLite file in the folder."""
    listed = database_map(data_dir).get(db_id)
    if listed is None:
        return str(database_path(data_dir, db_id, split))
    if is_url(listed):
        return listed
    return str((Path(data_dir) / listed).resolve())


def database_map(data_dir: Path) -> dict[str, str]:
    """The folder's ``databases.json`` (``db_id`` -> URL or path), or an empty mapping when there is none."""
    file = Path(data_dir) / DATABASES_FILE
    if not file.is_file():
        return {}
    try:
        mapping = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigurationError(f"cannot read {file}: {exc}. It must be a JSON object of db_id -> URL.") from None
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise ConfigurationError(f'{file} must be a JSON object of db_id -> URL, e.g. {{"saas": "postgresql://..."}}.')
    return mapping


def database_path(data_dir: Path, db_id: str, split: str | None = None) -> Path:
    """Where a Spider-format folder keeps ``db_id``'s SQLite file (the bundled one is built if absent):
    ``database/<db_id>/<db_id>.sqlite``, else BIRD's ``<split>_databases/<db_id>/<db_id>.sqlite``."""
    if db_id == BUNDLED_DB_ID and Path(data_dir).resolve() == BUNDLED_DATA.resolve():
        return ensure_bundled_database()
    folder = Path(data_dir)
    spider = folder / "database" / db_id / f"{db_id}.sqlite"
    bird = [folder / f"{split}_databases"] if split else []
    bird += sorted(p for p in folder.glob("*_databases") if p not in bird)
    for path in [spider, *(f / db_id / f"{db_id}.sqlite" for f in bird)]:
        if path.is_file():
            return path.resolve()
    raise DatabaseError(f"database for db_id {db_id!r} not found at {spider} "
                        "(nor in a BIRD <split>_databases/ folder).")


def tables_file(data_dir: Path, split: str) -> Path:
    """The folder's tables file: BIRD's ``<split>_tables.json`` where there is one, else Spider's ``tables.json``."""
    bird = Path(data_dir) / f"{split}_tables.json"
    return bird if bird.is_file() else Path(data_dir) / "tables.json"


_BIRD_KEYS = re.compile(r'"(?:evidence|difficulty)"\s*:')


def scoring_of(data_dir: Path | str, split: str | None = None) -> Scoring:
    """How the benchmark in ``data_dir`` is scored: :attr:`Scoring.BIRD` for a BIRD layout, else Spider's rule.

    A BIRD layout: its questions carry BIRD's ``evidence`` or ``difficulty`` (read from the head of
    ``<split>.json``), or the folder keeps its databases in ``<split>_databases/``, or a database has BIRD's
    ``database_description/`` beside it.
    """
    folder = Path(data_dir)
    file = folder / f"{split}.json" if split else None
    if file is not None and file.is_file():
        with file.open(encoding="utf-8") as fh:
            if _BIRD_KEYS.search(fh.read(4096)):
                return Scoring.BIRD
    if any(p.is_dir() for p in folder.glob("*_databases")):
        return Scoring.BIRD
    if any(p.is_dir() for p in folder.glob("*/*/database_description")):
        return Scoring.BIRD
    return Scoring.SPIDER


def _is_split_file(path: Path) -> bool:
    """Whether a ``.json`` in a data folder holds questions (not tables, not ``databases.json``)."""
    return path.stem != "tables" and not path.stem.endswith("_tables") and path.name != DATABASES_FILE


def load_split(
    data_dir: Path | str = BUNDLED_DATA, split: str = "test", *, limit: int | None = None,
    databases: Path | str | None = None,
) -> list[dspy.Example]:
    """Read ``<data_dir>/<split>.json`` (a JSON list of records, or JSON Lines); the first ``limit`` records if given.

    SParC's format (``database_id``, ``interaction: [{utterance, query}]``) gives one example per turn, with its
    ``interaction`` and ``turn`` numbers. ``databases``: the folder that holds the SQLite files when ``data_dir``
    holds only questions (SParC's dev set over Spider's databases).
    """
    folder = Path(data_dir)
    file = folder / f"{split}.json"
    if not file.is_file():
        available = sorted(p.stem for p in folder.glob("*.json") if _is_split_file(p))
        raise ConfigurationError(
            f"no split {split!r} in {folder} (expected {file}). Available splits: {', '.join(available) or 'none'}."
        )
    where = Path(databases) if databases is not None else folder
    text = file.read_text(encoding="utf-8")
    if '"interaction"' in text[:4096]:
        return _turns(where, json.loads(text), split, limit)
    records = _records(file, text)
    return [_to_example(where, r, split) for r in records[:limit]]


def _records(file: Path, text: str) -> list[dict]:
    """The records of a split file: a JSON list, or one JSON object a line (JSON Lines)."""
    try:
        if text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{file} is not a JSON list of records, nor JSON Lines: {exc}.") from None


def per_database(examples: list, n: int, *, shuffled: bool = False) -> list[int]:
    """The indexes of ``examples`` among the first ``n`` questions of their database (for turns of a conversation:
    every turn of its database's first ``n`` conversations), in the split's order. ``shuffled``: first in a fixed
    order of each database's own (:func:`drawn_first`) rather than the split's, whose first questions are often a
    database's easiest; more per database keeps the ones before."""
    units: dict[str, list] = {}  # db_id -> its questions (conversations), in the split's order
    for index, example in enumerate(examples):
        unit = _unit(index, example)
        if unit not in units.setdefault(example.db_id, []):
            units[example.db_id].append(unit)
    kept = {db: set(sorted(found, key=lambda u: drawn_first(db, u))[:n] if shuffled else found[:n])
            for db, found in units.items()}
    return [index for index, example in enumerate(examples) if _unit(index, example) in kept[example.db_id]]


def drawn_first(db_id: str, unit: object) -> str:
    """A question's (conversation's) place in its database's fixed shuffled order: a digest of its database and its
    index (its conversation)."""
    return hashlib.sha256(f"{db_id}/{unit}".encode()).hexdigest()


def is_turn(example: dspy.Example) -> bool:
    """Whether ``example`` is a turn of a conversation (it carries its ``interaction`` and ``turn``)."""
    return example.get("turn") is not None


def _unit(index: int, example: dspy.Example) -> object:
    """What :func:`per_database` counts: a question by its index, a turn by its conversation."""
    return ("conversation", example.interaction) if is_turn(example) else index


def _turns(folder: Path, interactions: list[dict], split: str, limit: int | None) -> list[dspy.Example]:
    """SParC's conversations, one example per turn, in order (the first ``limit`` turns)."""
    examples = []
    for number, item in enumerate(interactions):
        db_id = item.get("database_id") or item.get("db_id")
        target = database_target(folder, db_id, split)
        for turn, step in enumerate(item.get("interaction") or []):
            examples.append(dspy.Example(
                question=step["utterance"], db_id=db_id, db_path=target, gold_sql=gold_sql(step), evidence="",
                interaction=number, turn=turn,
            ).with_inputs("question", "db_path"))
            if limit is not None and len(examples) >= limit:
                return examples
    return examples


def gold_sql(record: dict) -> str:
    """A record's gold query: Spider's ``query``, BIRD's ``SQL``."""
    query = record.get("query") or record.get("SQL")
    if not query:
        raise ConfigurationError(
            f"record {record.get('question')!r} has no gold SQL: expected a 'query' (Spider) or 'SQL' (BIRD) key."
        )
    return query


def _to_example(folder: Path, record: dict, split: str) -> dspy.Example:
    return dspy.Example(
        question=record["question"],
        db_id=record["db_id"],
        db_path=database_target(folder, record["db_id"], split),
        gold_sql=gold_sql(record),
        evidence=record.get("evidence") or "",
    ).with_inputs("question", "db_path")
