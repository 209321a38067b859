"""A non-editable install owns one import name, ``text2sql_dspy``, and coexists with Hugging Face's ``evaluate``.

The wheel is built from a copy of the sources and installed with ``--no-deps`` into a fresh
virtual environment that sees this environment's site-packages through a ``.pth`` file (so torch,
dspy... are not reinstalled) and already holds Hugging Face's ``evaluate``. Building (setuptools)
and installing ``evaluate`` need the package registry; without it the test fails and says so.
Deselect it with ``-m "not packaging"``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parent.parent
HF_EVALUATE = "evaluate==0.4.6"
IMPORT_NAME = "text2sql_dspy"

PROBE = """
import json, evaluate, text2sql_dspy
from text2sql_dspy import bundled_database, make_program
from text2sql_dspy.programs.bundled import BUNDLED_DATA, BUNDLED_SCHEMAS
print(json.dumps({
    "evaluate_file": evaluate.__file__, "evaluate_version": evaluate.__version__,
    "evaluate_has_load": callable(getattr(evaluate, "load", None)),
    "ours_file": text2sql_dspy.__file__, "make_program": callable(make_program),
    "splits": sorted(p.name for p in BUNDLED_DATA.glob("*.json")),
    "schema_files": len(list((BUNDLED_SCHEMAS / "saas").glob("*.yaml"))),
    "database": str(bundled_database()),
}))
"""


def test_wheel_installs_one_top_level_name_beside_hf_evaluate(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    python, site_packages = fresh_venv(tmp_path / "venv")
    run([python, "-m", "pip", "install", "-q", "--no-deps", HF_EVALUATE], f"pip install {HF_EVALUATE}")
    bin_dir = python.parent
    before = set(os.listdir(site_packages)), set(os.listdir(bin_dir))

    run([python, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(wheel)], "pip install <wheel>")

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert set(os.listdir(site_packages)) - before[0] == {IMPORT_NAME, f"{IMPORT_NAME}-{version}.dist-info"}
    assert set(os.listdir(bin_dir)) - before[1] == {"text2sql"}

    elsewhere = tmp_path / "elsewhere"  # neither the repository nor the venv on the import path by accident
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TEXT2SQL_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    probe = json.loads(run([python, "-c", PROBE], "importing both packages", cwd=elsewhere, env=env).splitlines()[-1])
    assert Path(probe["evaluate_file"]).is_relative_to(site_packages / "evaluate")
    assert probe["evaluate_version"] == HF_EVALUATE.split("==")[1] and probe["evaluate_has_load"]
    assert Path(probe["ours_file"]) == site_packages / IMPORT_NAME / "__init__.py" and probe["make_program"]
    assert probe["splits"] == ["dev.json", "test.json", "train.json"] and probe["schema_files"] >= 30
    assert Path(probe["database"]).is_relative_to(tmp_path / "cache")  # built in the cache, not in site-packages
    assert not (site_packages / IMPORT_NAME / "data" / "database").exists()

    help_text = run([str(bin_dir / "text2sql"), "--help"], "text2sql --help", cwd=elsewhere, env=env)
    assert "{ask,chat,compile,evaluate,calibrate,learn,examples,serve}" in help_text


def build_wheel(tmp_path: Path) -> Path:
    """Build the wheel from a copy of what the build reads, so the checkout gains no build/ folder."""
    source = tmp_path / "source"
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    folders = {IMPORT_NAME, *(Path(d).parts[0] for d in config["tool"]["setuptools"]["package-dir"].values())}
    ignore = shutil.ignore_patterns("__pycache__", "database")
    for folder in folders:
        shutil.copytree(REPO / folder, source / folder, ignore=ignore)
    for file in ("pyproject.toml", config["project"]["readme"]):
        shutil.copy2(REPO / file, source / file)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(source)], "building the wheel")
    (wheel,) = dist.glob("*.whl")
    return wheel


def fresh_venv(folder: Path) -> tuple[Path, Path]:
    """A venv without pip whose ``.pth`` adds this environment's site-packages (after its own)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site_packages = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], "the venv"))
    shared = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    (site_packages / "shared-environment.pth").write_text("\n".join(shared) + "\n")
    return python, site_packages


def run(argv: list, what: str, **kwargs) -> str:
    """Run ``argv``; any failure fails the test with its output and what it needs."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kwargs)
    if done.returncode != 0:
        pytest.fail(
            f"{what} failed (exit {done.returncode}). Building the wheel and installing {HF_EVALUATE} need the "
            f"package registry; deselect this test with -m 'not packaging'.\n{done.stdout}\n{done.stderr}",
            pytrace=False,
        )
    return done.stdout.strip()
