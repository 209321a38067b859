"""The bundled database copied into a throwaway MariaDB server, then the README's question asked over it as a user
would (text2sql ask, V2, the embedded model), connected as the SELECT-only reader. Run from the repository root:

    TEXT2SQL_N_THREADS=1 python benchmarks/results/mariadb-ask-2026-11-26/run.py > benchmarks/results/mariadb-ask-2026-11-26/output.txt
    TEXT2SQL_N_THREADS=1 python benchmarks/results/mariadb-ask-2026-11-26/run.py --docs > .../output-docs.txt
"""

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests import mariadb_server  # noqa: E402
from text2sql_dspy import bundled_database  # noqa: E402
from text2sql_dspy.programs.db.source import open_source  # noqa: E402
from text2sql_dspy.programs.db.transfer import copy_sqlite_database  # noqa: E402

DOCS = "--docs" in sys.argv  # carry the bundled database's column documentation over as COMMENTs

server = mariadb_server.start()
try:
    server.create_database("saas")
    docs = open_source(bundled_database()).catalog if DOCS else None
    tables = copy_sqlite_database(bundled_database(), server.url("saas"), docs=docs)
    print(f"copied {len(tables)} tables of the bundled database into MariaDB ({server.sql(None, 'SELECT VERSION()')[0][0]})"
          + (", with its column documentation as COMMENTs" if DOCS else ", without its documentation"))
    url = server.reader_url("saas")
    command = [sys.executable, "-m", "text2sql_dspy.cli", "ask", "How many users are blocked right now?",
               "--db", url, "--execute", "--trace"]
    print("$ text2sql ask \"How many users are blocked right now?\" --db mysql+pymysql://reader@localhost/saas?unix_socket=... "
          "--execute --trace", flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    print(done.stdout)
    print(f"exit {done.returncode}")
finally:
    server.stop()
