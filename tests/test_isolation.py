"""The suite never touches the user's files: not their example store, not their cache (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import USER_CACHE_DIR, USER_STORE_PATH
from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.examples.store import ExampleStore, default_store_path
from text2sql_dspy.programs.source import open_source

ROOT = Path(__file__).resolve().parent.parent

PROBE = '''
from pathlib import Path
from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.examples.store import ExampleStore, default_store_path

def test_the_users_store_and_cache_are_not_the_suites():
    real = Path({real!r})
    assert default_store_path() != real and not str(default_cache_dir()).startswith({home!r})
    assert ExampleStore().keys() == {{}}  # the pair saved in the user's store is not seen
'''


def test_the_suite_uses_temporary_folders_not_the_users() -> None:
    assert default_store_path() != USER_STORE_PATH and default_cache_dir() != USER_CACHE_DIR
    assert not default_store_path().exists() or ExampleStore().keys() == {}


def test_a_pair_saved_in_the_users_default_store_is_not_seen_by_the_suite(tmp_path: Path, tiny_db: Path) -> None:
    home = tmp_path / "home-cache"  # a user's cache folder, as the platform gives it (XDG_CACHE_HOME)
    user_env = {k: v for k, v in os.environ.items() if k not in ("TEXT2SQL_EXAMPLES", "TEXT2SQL_CACHE")}
    user_env["XDG_CACHE_HOME"] = str(home)
    real_store = home / "text2sql-dspy" / "examples.sqlite"  # where the user's pairs go by default
    store = ExampleStore(real_store)
    store.save_pair(open_source(tiny_db), "How many users are there?", "SELECT COUNT(*) FROM users")
    assert store.keys() and store.count(open_source(tiny_db)) == 1
    store.close()
    probe = tmp_path / "probe" / "test_probe.py"
    probe.parent.mkdir()
    probe.write_text(PROBE.format(real=str(real_store), home=str(home)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "--rootdir", str(probe.parent),
         "-p", "no:cacheprovider", str(probe)],
        cwd=ROOT, env=user_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert ExampleStore(real_store).count(open_source(tiny_db)) == 1  # and the user's pair is still there
