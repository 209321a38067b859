"""Which code answered: a digest of the files that decide an answer (the programs and the signatures, the shipped
verifier among them), and the git commit where they are a checkout. ``evaluate`` writes it on every record, so a
result names the code that produced it, also where a run was resumed after the code changed, or ran from an
installed snapshot that has no git."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path

__all__ = ["code_identity", "described", "digest_of"]

SUFFIXES = (".py", ".json", ".yaml")  # what decides an answer; caches and compiled files do not


def digest_of(roots: Iterable[Path]) -> str:
    """16 hex digits over the relative paths and bytes of the files below ``roots`` that end in :data:`SUFFIXES`,
    in sorted order: the same files give the same digest wherever they are installed."""
    digest = hashlib.sha256()
    for root in roots:
        files = (p for p in root.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts and p.is_file())
        for path in sorted(files):
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _commit(root: Path) -> str | None:
    """The checkout's commit, with ``+changes`` where files below ``root`` differ from it; None where ``root`` is not
    tracked by git (an install, also one inside another checkout's folder)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    try:
        if not git("ls-files", "--", "__init__.py"):
            return None
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}+changes" if changed else commit


@cache
def code_identity() -> dict[str, str]:
    """``{"digest": ..., "commit": ...}`` of the imported programs and signatures (no ``commit`` outside git)."""
    import text2sql_dspy.programs as programs
    import text2sql_dspy.signatures as signatures

    roots = [Path(next(iter(package.__path__))) for package in (programs, signatures)]
    found = {"digest": digest_of(roots)}
    if (commit := _commit(roots[0])) is not None:
        found["commit"] = commit
    return found


def described(code: dict[str, str]) -> str:
    """A code identity in words: ``digest at commit``, or the digest alone outside git."""
    return " at ".join(code.values())
