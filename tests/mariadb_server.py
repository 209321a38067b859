"""A throwaway MariaDB server for tests and benchmarks: ``mariadb-install-db`` in a temporary folder, Unix socket only.

:func:`start` finds Debian's ``mariadbd`` and ``mariadb-install-db`` (``apt-get install -y mariadb-server``),
initialises a data folder in a fresh temporary folder and starts the server listening on a socket in that
folder, with ``--skip-networking`` (no TCP port at all). As root it runs with ``--user=root``. The superuser
``root`` has no password (socket only); :data:`READER` is a user with ``SELECT`` only, as the README tells
users to create. :meth:`Server.stop` stops it and deletes the folder.

Run it by hand to get a server for an evaluation (it stays up until Ctrl-C)::

    python tests/mariadb_server.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "root"
READER = "reader"  # SELECT only, as the README tells users to do
WRITER = "writer"  # may write: opening as it warns
SERVER_BINARIES = ("mariadbd", "mysqld")
INSTALL_BINARIES = ("mariadb-install-db", "mysql_install_db")
SBIN = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")


class ServerUnavailable(RuntimeError):
    """The MariaDB binaries are missing or the server would not start (the message says why)."""


def _find(names: tuple[str, ...]) -> Path | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return Path(found)
        for folder in SBIN:
            if (Path(folder) / name).is_file():
                return Path(folder) / name
    return None


@dataclass
class Server:
    """A running throwaway server. ``url(db)`` connects as root; ``reader_url(db)`` as the SELECT-only user."""

    folder: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def socket(self) -> Path:
        return self.folder / "sock"

    def url(self, database: str, user: str = SUPERUSER, password: str = "") -> str:
        secret = f":{password}" if password else ""
        return f"mysql+pymysql://{user}{secret}@localhost/{database}?unix_socket={self.socket}"

    def reader_url(self, database: str) -> str:
        return self.url(database, READER)

    def connect(self, database: str | None = None, user: str = SUPERUSER):  # noqa: ANN201
        import pymysql

        return pymysql.connect(unix_socket=str(self.socket), user=user, database=database, autocommit=True,
                               charset="utf8mb4")  # fmt: skip

    def sql(self, database: str | None, *statements: str) -> list[tuple]:
        """Run ``statements`` as root (setup only); the last one's rows."""
        conn = self.connect(database)
        try:
            rows: list[tuple] = []
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                    rows = list(cur.fetchall() or [])
            return rows
        finally:
            conn.close()

    def create_database(self, name: str) -> str:
        """Create (or recreate) database ``name``, readable by the reader user; its root URL."""
        self.sql(None, f"DROP DATABASE IF EXISTS `{name}`", f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4",
                 f"GRANT SELECT ON `{name}`.* TO '{READER}'@'localhost'",
                 f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{WRITER}'@'localhost'")  # fmt: skip
        return self.url(name)

    def stop(self) -> None:
        from tests.services import stop_process

        stop_process(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)


def start() -> Server:
    """Initialise and start a server; raises :class:`ServerUnavailable` saying why it cannot."""
    server_bin, install_bin = _find(SERVER_BINARIES), _find(INSTALL_BINARIES)
    if server_bin is None or install_bin is None:
        raise ServerUnavailable(
            "MariaDB server binaries (mariadbd, mariadb-install-db) not found: install them with "
            "'apt-get install -y mariadb-server' (Debian/Ubuntu) to run the MariaDB tests"
        )
    folder = Path(tempfile.mkdtemp(prefix="t2s-my-"))  # short: a socket path must stay under 108 bytes
    user = ["--user=root"] if os.geteuid() == 0 else []
    common = ["--no-defaults", f"--datadir={folder / 'data'}", "--lower-case-table-names=1"]
    log = folder / "server.log"
    try:
        done = subprocess.run(
            [str(install_bin), *common, *user, "--auth-root-authentication-method=normal", "--skip-test-db",
             "--skip-name-resolve"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if done.returncode != 0:
            raise ServerUnavailable(f"mariadb-install-db failed: {(done.stderr or done.stdout).strip()[-500:]}")
        process = subprocess.Popen(
            [str(server_bin), *common, *user, f"--socket={folder / 'sock'}", "--skip-networking",
             f"--pid-file={folder / 'pid'}", f"--log-error={log}", "--skip-log-bin", "--innodb-buffer-pool-size=64M",
             "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=0", "--max-connections=60",
             f"--tmpdir={folder}", "--secure-file-priv=" + str(folder / "files")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerUnavailable(f"the throwaway MariaDB server did not start: {exc}") from exc
    except ServerUnavailable:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    (folder / "files").mkdir()
    server = Server(folder, process)
    deadline = time.monotonic() + 60
    while True:
        try:
            server.sql(None, "SELECT 1")
            break
        except Exception as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-500:] if log.is_file() else ""
                server.stop()
                raise ServerUnavailable(f"the throwaway MariaDB server did not start: {exc} {tail}") from exc
            time.sleep(0.2)
    server.sql(None, f"CREATE USER '{READER}'@'localhost'", f"CREATE USER '{WRITER}'@'localhost'")
    return server


def load_test_databases(server: Server) -> None:
    """``saas`` (the bundled database) and ``spider_like`` (plus a ``billing`` database and comments)."""
    from tests.postgres_server import build_spider_like
    from text2sql_dspy.programs.bundled import ensure_bundled_database
    from text2sql_dspy.programs.db.transfer import copy_sqlite_database

    copy_sqlite_database(ensure_bundled_database(), server.create_database("saas"))
    copy_sqlite_database(build_spider_like(server.folder / "spider_like.sqlite"), server.create_database("spider_like"))
    server.create_database("billing")
    server.sql(
        "billing",
        "CREATE TABLE invoices (invoice_id INT PRIMARY KEY, singer_id BIGINT, total DECIMAL(10, 2) NOT NULL "
        "COMMENT 'Amount in euros, tax included', FOREIGN KEY (singer_id) REFERENCES spider_like.singer (singer_id)) "
        "COMMENT 'Invoices sent to singers'",
        "INSERT INTO invoices VALUES (1, 1, 120.50), (2, 2, 99.00)",
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server = start()
    load_test_databases(server)
    print(f"MariaDB is up. The bundled database, SELECT-only user:\n  {server.reader_url('saas')}\nCtrl-C (or kill "
          "PID) stops it.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
