"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a temporary folder, Unix socket only.

:func:`start` finds the server binaries (``PATH``, then Debian's ``/usr/lib/postgresql/*/bin``), initialises
a cluster in a fresh temporary folder and starts it listening on a socket in that folder and on no TCP
address at all. As root it runs the server as an unprivileged OS user (``postgres`` if it exists), since
``initdb`` refuses to run as root. :meth:`Server.stop` stops it and deletes the folder.

Run it by hand to get a server for an evaluation (it stays up until Ctrl-C)::

    python tests/postgres_server.py
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "postgres"
READER = "reader"  # a role created with SELECT only, as the README tells users to do


class ServerUnavailable(RuntimeError):
    """The PostgreSQL server binaries are missing or the server would not start (the message says why)."""


def server_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None."""
    found = shutil.which("initdb")
    if found:
        folder = Path(found).resolve().parent  # /usr/local/bin/initdb may be a link into the real folder
        if (folder / "pg_ctl").is_file():
            return folder
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


@dataclass
class Server:
    """A running throwaway server. ``url(db)`` connects as the superuser; ``reader_url(db)`` as the SELECT-only role."""

    folder: Path
    bin_dir: Path
    run_as: str | None

    def url(self, database: str, user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@/{database}?host={self.folder}"

    def reader_url(self, database: str) -> str:
        return self.url(database, READER)

    def psql(self, database: str, sql: str) -> None:
        """Run ``sql`` as the superuser, outside a transaction (setup only)."""
        import psycopg

        with psycopg.connect(host=str(self.folder), user=SUPERUSER, dbname=database, autocommit=True) as conn:
            conn.execute(sql.encode())  # bytes: no client-side placeholders

    def create_database(self, name: str) -> str:
        """Create database ``name`` (readable by the reader role); its superuser URL."""
        self.psql("postgres", f'CREATE DATABASE "{name}"')
        self.psql(name, f'GRANT USAGE ON SCHEMA public TO {READER}; '
                        f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {READER}')  # fmt: skip
        return self.url(name)

    def grant_reader(self, database: str) -> None:
        """Give the reader role SELECT on every table of every user schema of ``database``."""
        self.psql(database, """DO $$ DECLARE s text; BEGIN
            FOR s IN SELECT nspname FROM pg_namespace
                     WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' LOOP
              EXECUTE format('GRANT USAGE ON SCHEMA %I TO reader', s);
              EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO reader', s);
            END LOOP; END $$""")

    def stop(self) -> None:
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop"],
                  check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, command: list[str], check: bool = True) -> str:
        if self.run_as:
            command = ["runuser", "-u", self.run_as, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise ServerUnavailable(f"{' '.join(command[-3:])} failed: {done.stderr.strip()[:500]}")
        return done.stdout


def start() -> Server:
    """Initialise and start a server; raises :class:`ServerUnavailable` saying why it cannot."""
    bin_dir = server_binaries()
    if bin_dir is None:
        raise ServerUnavailable(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: install them with "
            "'apt-get install -y postgresql' (Debian/Ubuntu) to run the PostgreSQL tests"
        )
    run_as = _unprivileged_user() if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="t2s-pg-"))  # short: a socket path must stay under 108 bytes
    if run_as:
        shutil.chown(folder, user=run_as)
    server = Server(folder, bin_dir, run_as)
    try:
        server._run([str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", SUPERUSER, "--auth=trust",
                     "-E", "UTF8", "--locale=C", "--no-sync"])  # fmt: skip
        options = f"-c listen_addresses='' -k {folder} -c fsync=off -c autovacuum=off -c max_connections=40"
        server._run([str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-o", options, "-l",
                     str(folder / "server.log"), "-w", "-t", "60", "start"])  # fmt: skip
        server.psql("postgres", f"CREATE ROLE {READER} LOGIN")
    except (ServerUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        log = folder / "server.log"
        tail = log.read_text()[-500:] if log.is_file() else ""
        server.stop()
        raise ServerUnavailable(f"the throwaway PostgreSQL server did not start: {exc} {tail}") from exc
    return server


SPIDER_LIKE_DDL = """
CREATE TABLE Singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Age INTEGER);
CREATE TABLE Concert (Concert_ID INTEGER PRIMARY KEY, Concert_Name TEXT, Year TEXT,
                      Singer_ID INTEGER REFERENCES Singer(Singer_ID));
INSERT INTO Singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
                          (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41);
INSERT INTO Concert VALUES (1, 'Auditions', '2014', 1), (2, 'Super bootcamp', '2014', 2), (3, 'Home Visits', '2015', 2);
"""
SPIDER_LIKE_EXTRAS = [  # a second schema, and comments the catalog must carry
    "CREATE SCHEMA billing",
    "CREATE TABLE billing.invoices (invoice_id integer PRIMARY KEY, singer_id integer REFERENCES singer(singer_id), "
    "total numeric(10, 2) NOT NULL)",
    "INSERT INTO billing.invoices VALUES (1, 1, 120.50), (2, 2, 99.00)",
    "COMMENT ON TABLE billing.invoices IS 'Invoices sent to singers'",
    "COMMENT ON COLUMN billing.invoices.total IS 'Amount in euros, tax included'",
    "ANALYZE",
]


def build_spider_like(path: Path) -> Path:
    """A two-table Spider-style SQLite database (mixed-case names, a foreign key) at ``path``."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.executescript(SPIDER_LIKE_DDL)
    conn.commit()
    conn.close()
    return path


def load_test_databases(server: Server) -> None:
    """``saas`` (the bundled database) and ``spider_like`` (plus a ``billing`` schema), readable by the reader role."""
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.db.transfer import copy_sqlite_database

    copy_sqlite_database(ensure_bundled_database(), server.create_database("saas"))
    server.grant_reader("saas")
    copy_sqlite_database(build_spider_like(server.folder / "spider_like.sqlite"), server.create_database("spider_like"))
    for statement in SPIDER_LIKE_EXTRAS:
        server.psql("spider_like", statement)
    server.grant_reader("spider_like")


def _unprivileged_user() -> str:
    for name in (SUPERUSER, "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise ServerUnavailable("running as root and no unprivileged user (postgres, nobody) to run initdb as")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill PID` stops the server too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = start()
    load_test_databases(server)
    print(f"PostgreSQL is up. The bundled database, read-only role:\n  {server.reader_url('saas')}\nCtrl-C (or kill "
          "PID) stops it.")
    try:
        import time

        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
