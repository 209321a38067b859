"""Where a database lives: a SQLite path, or a URL (``sqlite:///``, ``postgresql://``, ``mysql+pymysql://``, ``duckdb:///``).

:func:`parse_address` turns what a user typed (``--db``, ``db_path=``, a ``databases.json`` entry) into a
:class:`DatabaseAddress`, or raises :class:`DatabaseError` naming the fix. Nothing is opened here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from text2sql_dspy.programs.errors import DatabaseError

Engine = Literal["sqlite", "postgresql", "duckdb", "mysql"]

SQLGLOT_DIALECTS: dict[str, str] = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb", "mysql": "mysql"}
_SCHEMES: dict[str, Engine] = {
    "sqlite": "sqlite",
    "postgresql": "postgresql", "postgres": "postgresql", "postgresql+psycopg": "postgresql",
    "duckdb": "duckdb",
    "mysql": "mysql", "mysql+pymysql": "mysql", "mariadb": "mysql", "mariadb+pymysql": "mysql",
}  # fmt: skip
# The URL schemes of server engines, as users write them in error messages.
_URL_FORMS = {"postgresql": "postgresql://USER@HOST/DBNAME", "mysql": "mysql+pymysql://USER@HOST/DBNAME"}
DUCKDB_SUFFIXES = (".duckdb", ".ddb")
SUPPORTED = (
    "a SQLite file path, sqlite:///PATH, postgresql://USER@HOST/DBNAME, mysql+pymysql://USER@HOST/DBNAME "
    "(MySQL or MariaDB) or duckdb:///PATH.duckdb"
)


@dataclass(frozen=True)
class DatabaseAddress:
    """A parsed database location. ``path`` is set for file engines (SQLite, DuckDB), ``url`` for PostgreSQL and
    MySQL."""

    engine: Engine
    db_id: str
    path: Path | None = None
    url: str | None = None

    @property
    def dialect(self) -> str:
        """The sqlglot dialect name: ``sqlite``, ``postgres``, ``mysql`` or ``duckdb``."""
        return SQLGLOT_DIALECTS[self.engine]

    @property
    def key(self) -> str:
        """A stable identity, for caches: the resolved file path or the URL."""
        return str(self.path) if self.path is not None else str(self.url)

    @property
    def shown(self) -> str:
        """A printable form with any password hidden."""
        if self.url is None:
            return str(self.path)
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)

    def sqlalchemy_url(self) -> str:
        """The URL SQLAlchemy opens, with the pinned driver named (psycopg 3, PyMySQL, duckdb-engine)."""
        if self.engine in ("postgresql", "mysql"):
            from sqlalchemy.engine import make_url

            driver = "postgresql+psycopg" if self.engine == "postgresql" else "mysql+pymysql"
            url = make_url(self.url).set(drivername=driver)
            if self.engine == "mysql" and "charset" not in url.query:
                url = url.update_query_dict({"charset": "utf8mb4"})
            return url.render_as_string(hide_password=False)
        if self.engine == "duckdb":
            return f"duckdb:///{self.path}"
        return f"sqlite:///{self.path}"


def is_url(target: object) -> bool:
    """True when ``target`` is text with a URL scheme (``name://``)."""
    return isinstance(target, str) and "://" in target


def parse_address(target: Path | str) -> DatabaseAddress:
    """Parse ``target``; a bad URL or an unsupported scheme raises :class:`DatabaseError` naming the fix."""
    if isinstance(target, DatabaseAddress):
        return target
    if not is_url(target):
        path = Path(target).expanduser().resolve()
        engine: Engine = "duckdb" if path.suffix.lower() in DUCKDB_SUFFIXES else "sqlite"
        return DatabaseAddress(engine, path.stem, path=path)
    text = str(target)
    scheme = text.split("://", 1)[0].lower()
    engine_name = _SCHEMES.get(scheme)
    if engine_name is None:
        raise DatabaseError(f"unsupported database URL scheme {scheme + '://'!r}: use {SUPPORTED}.")
    if engine_name in ("sqlite", "duckdb"):
        rest = text.split("://", 1)[1]
        if not rest.startswith("/") or rest in ("/", "/:memory:"):
            raise DatabaseError(
                f"{scheme}:// needs a file: write {scheme}:///relative/path or {scheme}:////absolute/path."
            )
        path = Path(rest[1:]).expanduser().resolve()
        return DatabaseAddress(engine_name, path.stem, path=path)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as exc:
        raise DatabaseError(f"cannot read the database URL ({exc}): use {SUPPORTED}.") from None
    if not url.database:
        raise DatabaseError(f"the URL names no database: write {_URL_FORMS[engine_name]} (got "
                            f"{url.render_as_string()}).")
    return DatabaseAddress(engine_name, url.database, url=text)
