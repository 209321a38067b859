"""Opening a database from its address: :func:`open_database` gives the :class:`~.database.Database` of the engine
the address names (a SQLite path, or a ``sqlite:///``, ``postgresql://``, ``mysql+pymysql://`` or ``duckdb:///``
URL), read-only; a missing driver is a :class:`~..errors.DatabaseError` that names the package to install. SQLite is
:mod:`.database`'s; the engines SQLAlchemy connects to (:mod:`.engines`, :mod:`.mysql_engine`) are imported only for
an address that names one of them.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from text2sql_dspy.programs.db.address import DatabaseAddress, parse_address
from text2sql_dspy.programs.db.database import SQLiteDatabase
from text2sql_dspy.programs.errors import DatabaseError

if TYPE_CHECKING:
    from text2sql_dspy.programs.db.engines import EngineDatabase

__all__ = ["open_database"]

_DRIVERS = {  # the module each engine needs, and what to install without it
    "sqlalchemy": ("sqlalchemy", "SQLAlchemy is not installed: pip install 'sqlalchemy>=2'."),
    "postgresql": ("psycopg", "the PostgreSQL driver is not installed: pip install 'psycopg[binary]'."),
    "mysql": ("pymysql", "the MySQL/MariaDB driver is not installed: pip install PyMySQL."),
    "duckdb": ("duckdb_engine", "the DuckDB driver is not installed: pip install duckdb duckdb-engine."),
}


def open_database(target: Path | str | DatabaseAddress, **options: float | int) -> SQLiteDatabase | EngineDatabase:
    """Open the database at ``target`` (a path or URL) read-only, with the engine its address names (SQLite,
    PostgreSQL, MySQL/MariaDB or DuckDB); a missing driver names its package."""
    address = parse_address(target)
    if address.engine == "sqlite":
        return SQLiteDatabase(address.path, **options)
    for module, missing in (_DRIVERS["sqlalchemy"], _DRIVERS[address.engine]):
        try:
            import_module(module)
        except ImportError:
            raise DatabaseError(missing) from None
    from text2sql_dspy.programs.db.engines import DuckDBDatabase, PostgresDatabase
    from text2sql_dspy.programs.db.mysql_engine import MySQLDatabase

    engine = {"postgresql": PostgresDatabase, "mysql": MySQLDatabase, "duckdb": DuckDBDatabase}[address.engine]
    return engine(address, **options)
