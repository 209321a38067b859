"""Tables named ``<namespace>__<table>`` in each benchmark set's SQLite files: where none is, the view is unchanged.

    python benchmarks/results/namespace-view-2026-12-05/namespaced_tables.py ../shared/benchmarks
"""

import sqlite3
import sys
from pathlib import Path

root = Path(sys.argv[1])
for folder in sorted(p for p in root.iterdir() if p.is_dir()):
    files = sorted(folder.rglob("*.sqlite"))
    found = []
    for path in files:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
            found += [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'") if "__" in n]
    print(f"{folder.name}: {len(files)} SQLite files, {len(found)} namespaced tables {found[:5]}")
