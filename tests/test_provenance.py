"""Which code answered (``optimize/provenance.py``): a digest of the files that decide an answer, the same wherever
they are installed, and on every record ``evaluate`` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from text2sql_dspy.optimize.provenance import code_identity, digest_of

FILES = {"agents/react.py": "x = 1\n", "agents/verifier.json": "{}", "signatures.py": "y = 2\n"}


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(("changes", "same"), [
    ({}, True),
    ({"agents/__pycache__/react.cpython-311.pyc": "compiled"}, True),  # not what decides an answer
    ({"notes.txt": "scratch"}, True),
    ({"agents/react.py": "x = 2\n"}, False),  # one byte of code
    ({"agents/verifier.json": '{"sure": 0.9}'}, False),  # the shipped model is code too
    ({"agents/other.py": ""}, False),  # a file added
])
def test_the_digest_names_the_files_that_decide_an_answer(tmp_path: Path, changes: dict[str, str], same: bool) -> None:
    one = tree(tmp_path / "a" / "programs", FILES)
    other = tree(tmp_path / "b" / "programs", {**FILES, **changes})
    assert (digest_of([one]) == digest_of([other])) is same


def test_the_identity_of_this_checkout_has_a_digest_and_a_commit() -> None:
    found = code_identity()
    assert len(found["digest"]) == 16 and int(found["digest"], 16) >= 0
    if (Path(__file__).parents[1] / ".git").exists():
        assert found["commit"]


def test_an_install_inside_a_checkout_is_not_given_the_checkouts_commit(tmp_path: Path) -> None:
    import subprocess

    from text2sql_dspy.optimize.provenance import _commit

    repo = tmp_path / "repo"
    tracked = tree(repo / "programs", {"__init__.py": ""})
    installed = tree(repo / ".venv" / "site-packages" / "programs", {"__init__.py": ""})
    (repo / ".gitignore").write_text(".venv/\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    assert _commit(tracked) and "+changes" not in _commit(tracked)
    assert _commit(installed) is None
    (tracked / "__init__.py").write_text("x = 1\n")
    assert _commit(tracked).endswith("+changes")
