"""Spider-format datasets as ``dspy.Example`` lists.

A Spider-format folder holds ``<split>.json`` files of ``{"db_id", "question", "query"}`` records
and ``database/<db_id>/<db_id>.sqlite``. The bundled ``data/`` folder and a Spider or BIRD
download load the same way. Each example has inputs ``question`` and ``db_id``, plus ``db_path``
(an absolute path, or a URL) and ``gold_sql``.

The bundled dataset ships inside the package as ``text2sql_dspy.data`` (the repository's
``data/``), with its schema files beside it in ``schemas/``. Its SQLite database is built on
first use into the user cache directory, never into the package, which may be read-only.

A folder may also hold ``databases.json``, a mapping from ``db_id`` to where that database lives::

    {"saas": "postgresql://reader@localhost/saas", "concert_singer": "duckdb:///spider/concert_singer.duckdb"}

A listed ``db_id`` is served from there (a relative file path is read from the folder); the others from
``database/``. Gold SQL stays SQLite: on another engine it is transpiled when scored.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib.resources import files
from pathlib import Path

import dspy

from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.db.address import is_url
from text2sql_dspy.programs.errors import ConfigurationError, DatabaseError

BUNDLED_DATA = Path(str(files("text2sql_dspy.data")))
BUNDLED_SCHEMAS = BUNDLED_DATA.parent / "schemas"  # the same layout in a checkout and in site-packages
BUNDLED_DB_ID = "saas"
HUB_SPIDER = "xlangai/spider"


DATABASES_FILE = "databases.json"


def database_target(data_dir: Path, db_id: str) -> str:
    """Where ``db_id`` lives: its ``databases.json`` entry (a URL or a path), else its SQLite file in the folder."""
    listed = database_map(data_dir).get(db_id)
    if listed is None:
        return str(database_path(data_dir, db_id))
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


def database_path(data_dir: Path, db_id: str) -> Path:
    """Where a Spider-format folder keeps ``db_id``'s SQLite file (the bundled one is built if absent)."""
    if db_id == BUNDLED_DB_ID and Path(data_dir).resolve() == BUNDLED_DATA.resolve():
        return ensure_bundled_database()
    path = Path(data_dir) / "database" / db_id / f"{db_id}.sqlite"
    if not path.is_file():
        raise DatabaseError(f"database for db_id {db_id!r} not found at {path}.")
    return path.resolve()


def ensure_bundled_database() -> Path:
    """The bundled ``saas`` SQLite file, built from ``schemas/saas`` into the cache dir on first use."""
    from text2sql_dspy.data.build_database import build_database

    target = bundled_database_file()
    if target.is_file():
        return target
    try:
        return Path(build_database(target, schema_dir=BUNDLED_SCHEMAS / BUNDLED_DB_ID)).resolve()
    except OSError as exc:
        raise DatabaseError(
            f"cannot build the bundled database at {target}: {exc}. Fix: set TEXT2SQL_CACHE to a writable directory."
        ) from exc


def bundled_database_file() -> Path:
    """``<cache dir>/databases/saas-<digest>/saas.sqlite``, where the bundled database is built."""
    folder = f"{BUNDLED_DB_ID}-{_bundled_sources_digest()}"
    return (default_cache_dir() / "databases" / folder / f"{BUNDLED_DB_ID}.sqlite").resolve()


@cache
def _bundled_sources_digest() -> str:
    """A digest of the builder and the schema files: an edited schema or a new release gets a fresh database."""
    digest = hashlib.sha256()
    for source in [BUNDLED_DATA / "build_database.py", *sorted((BUNDLED_SCHEMAS / BUNDLED_DB_ID).glob("*.yaml"))]:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def load_split(data_dir: Path | str = BUNDLED_DATA, split: str = "test", *, limit: int | None = None) -> list[dspy.Example]:
    """Read ``<data_dir>/<split>.json`` with HF ``datasets``; the first ``limit`` records if given."""
    from datasets import load_dataset  # heavy import, kept off the CLI's start-up path

    folder = Path(data_dir)
    file = folder / f"{split}.json"
    if not file.is_file():
        available = sorted(p.stem for p in folder.glob("*.json") if p.stem != "tables")
        raise ConfigurationError(
            f"no split {split!r} in {folder} (expected {file}). Available splits: {', '.join(available) or 'none'}."
        )
    records = load_dataset("json", data_files=str(file), split="train")
    if limit is not None:
        records = records.select(range(min(limit, len(records))))
    return [_to_example(folder, r["db_id"], r["question"], r["query"]) for r in records]


def load_spider_from_hub(split: str = "validation", *, limit: int | None = None) -> list[dspy.Example]:
    """Spider from the Hugging Face hub (online users only; needs the databases downloaded separately).

    Examples carry ``db_id`` but no ``db_path``: pass ``--data`` pointing at a local Spider folder to run them.
    """
    from datasets import load_dataset

    records = load_dataset(HUB_SPIDER, split=split)
    if limit is not None:
        records = records.select(range(min(limit, len(records))))
    return [
        dspy.Example(question=r["question"], db_id=r["db_id"], gold_sql=r["query"]).with_inputs("question")
        for r in records
    ]


def _to_example(folder: Path, db_id: str, question: str, query: str) -> dspy.Example:
    return dspy.Example(
        question=question,
        db_id=db_id,
        db_path=database_target(folder, db_id),
        gold_sql=query,
    ).with_inputs("question", "db_path")
