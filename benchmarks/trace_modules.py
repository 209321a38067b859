#!/usr/bin/env python
"""How much of the package one question goes through: the project modules it calls into, and import cycles.

    python benchmarks/trace_modules.py                      # one V2 question on the bundled database, embedded model
    python benchmarks/trace_modules.py --program v1 --question "How many users are there?"

Prints, for one answer (the program built and warmed on a first question, then traced on a second):
the ``text2sql_dspy`` modules whose functions run while it is answered (``sys.setprofile``), by package; the
modules loaded by ``import text2sql_dspy.programs.catalog`` alone in a fresh interpreter, and whether DSPy is among
them; import cycles among the package's modules, counting imports inside functions and under ``TYPE_CHECKING``; and
the modules over 500 lines.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "text2sql_dspy"
MAX_LINES = 500
SKIP_LONG = {"text2sql_dspy.data.build_database"}  # the bundled data generator


def called_modules(program: str, question: str, warm: str) -> list[str]:
    from text2sql_dspy import bundled_database, make_program

    agent = make_program(program, db_path=bundled_database())
    agent.run(warm)  # builds the LM, the value index and the retriever: one-time work, not the question's
    seen: set[str] = set()

    def profile(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith(PACKAGE):
                seen.add(name)

    import threading

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        answer = agent.run(question)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    print(f"question: {question!r} -> {answer.status}: {answer.sql}")
    return sorted(seen)


def loaded_by_import(module: str) -> list[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(m for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return out


def module_files() -> dict[str, Path]:
    import text2sql_dspy

    root = Path(text2sql_dspy.__file__).resolve().parent
    files: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join((PACKAGE, *parts)).removesuffix(".__init__")
        files[name] = path
    # the repository's top-level folders install into the package (pyproject's package-dir)
    import importlib

    for sub in ("programs", "signatures", "optimize", "data"):
        pkg = importlib.import_module(f"{PACKAGE}.{sub}")
        base = Path(pkg.__file__).resolve().parent
        for path in base.rglob("*.py"):
            if ".venv" in path.parts or "__pycache__" in path.parts:
                continue
            parts = path.relative_to(base).with_suffix("").parts
            files[".".join((PACKAGE, sub, *parts)).removesuffix(".__init__")] = path
    return files


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``name`` imports, wherever the import stands (functions and TYPE_CHECKING too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(files: dict[str, Path]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), package ``__init__`` files aside: importing
    a submodule runs its package's ``__init__`` but that is not a dependency of the submodule's code."""
    known = set(files)
    graph = {name: {t for t in imports_of(name, path, known) if not _is_package_init(t, files)}
             for name, path in files.items() if not _is_package_init(name, files)}
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


def _is_package_init(name: str, files: dict[str, Path]) -> bool:
    return files[name].name == "__init__.py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", default="v2")
    parser.add_argument("--question", default="How many users are blocked right now?")
    parser.add_argument("--warm", default="How many workspaces are there?")
    parser.add_argument("--import", dest="module", default=f"{PACKAGE}.programs.catalog.catalog",
                        help="the module whose import alone is measured")
    parser.add_argument("--no-question", action="store_true", help="skip the traced question (no model load)")
    args = parser.parse_args(argv)

    if not args.no_question:
        called = called_modules(args.program, args.question, args.warm)
        by_package: dict[str, list[str]] = defaultdict(list)
        for name in called:
            by_package[name.rpartition(".")[0]].append(name.rpartition(".")[2])
        print(f"\nmodules one {args.program} question calls into: {len(called)}")
        for package, names in sorted(by_package.items()):
            print(f"  {package}: {', '.join(names)}")

    loaded = loaded_by_import(args.module)
    own = [m for m in loaded if m.startswith(PACKAGE)]
    print(f"\nimport {args.module}: {len(loaded)} modules loaded, {len(own)} of them the project's; "
          f"DSPy {'loaded' if 'dspy' in loaded else 'not loaded'}")

    files = module_files()
    found = cycles(files)
    print(f"\nimport cycles (imports in functions and under TYPE_CHECKING included): {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))

    long = sorted((sum(1 for _ in path.open(encoding="utf-8")), name) for name, path in files.items()
                  if name not in SKIP_LONG)
    over = [(n, name) for n, name in long if n > MAX_LINES]
    print(f"\nmodules over {MAX_LINES} lines (the bundled data generator aside): {len(over)}")
    for n, name in over:
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
