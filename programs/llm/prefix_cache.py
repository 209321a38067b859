"""KV-state prefix cache of the embedded model: a slim RAM tier and a persistent disk tier.

llama-cpp-python asks its cache for the state whose tokens share the longest prefix with a new
prompt, and stores the state after every call. :class:`PrefixCache` answers from RAM first; the
disk tier (:class:`DiskPrefixStore`) lets a new process (``text2sql ask`` from a shell) start
from a database's prompt prefix instead of re-reading its schema. On xllamacpp the server keeps
the RAM tier itself, and the disk tier is :class:`SlotFileStore`: the server's own slot files,
saved and restored by :class:`~.xllamacpp_server.SharedXLlama` (its folder named by xllamacpp's
version in place of llama-cpp-python's).

Contract:

* RAM entries keep one row of logits (``load_state`` broadcasts it; llama.cpp re-evaluates the
  last token anyway), so an entry costs its KV bytes (~28 KB a token), not 311 MB.
* A state goes to disk only when it brings at least ``min_new_tokens`` tokens that no disk entry
  already holds (a new database's prefix, not every question).
* Disk entries live under a folder named by the model file, llama-cpp-python's version and the
  settings that shape the KV state, so a state is never loaded into a model it does not fit.
  The folder is bounded in bytes (oldest used entries go first).
* A missing, stale, truncated or corrupt entry is a miss (and is deleted), never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["DiskPrefixStore", "PrefixCache", "SlotFileStore", "common_prefix"]

MAGIC = b"T2SKV1\n"
MIN_NEW_TOKENS = 256  # what a prompt must bring that no saved state holds, to be saved to disk


def common_prefix(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> int:
    """Length of the longest common prefix of two token sequences."""
    x, y = np.asarray(a), np.asarray(b)
    m = min(len(x), len(y))
    if m == 0:
        return 0
    diff = np.flatnonzero(x[:m] != y[:m])
    return int(diff[0]) if diff.size else m


def longest_prefix(entries: Iterable[tuple[Any, Sequence[int] | np.ndarray]], key: Sequence[int]) -> tuple[Any, int]:
    """The entry whose tokens share the longest prefix with ``key``, and that length ((None, 0) if none does)."""
    best, length = None, 0
    for name, ids in entries:
        n = common_prefix(ids, key)
        if n > length:
            best, length = name, n
    return best, length


def _slim(state: Any) -> Any:
    scores = getattr(state, "scores", None)
    if scores is not None and getattr(scores, "ndim", 0) == 2 and scores.shape[0] > 1:
        state.scores = scores[-1:].copy()
    return state


class _StateFiles:
    """KV states on disk, one ``<name><SUFFIX>`` file each plus ``<name>.ids.npy``, its prompt's token ids, written
    once the state file is complete (so an id file always names a complete state file). Bounded in bytes, oldest used
    first out; a state file without ids, or ids that cannot be read, is dropped."""

    SUFFIX = ""

    def __init__(self, folder: Path, *, capacity_bytes: int, min_new_tokens: int = MIN_NEW_TOKENS):
        self.folder = Path(folder)
        self.capacity_bytes = capacity_bytes
        self.min_new_tokens = min_new_tokens
        self._index: dict[str, np.ndarray] | None = None

    @property
    def index(self) -> dict[str, np.ndarray]:
        """Token ids of every entry on disk, by name (read once, then kept up to date)."""
        if self._index is None:
            self._index = {}
            for ids_file in self.folder.glob("*.ids.npy"):
                name = ids_file.name[: -len(".ids.npy")]
                try:
                    if not self.data_file(name).is_file():
                        raise OSError("no state file")
                    self._index[name] = np.load(ids_file)
                except (OSError, ValueError, EOFError):  # EOFError: an empty file (a save killed mid-write)
                    self.drop(name)
            for orphan in self.folder.glob(f"*{self.SUFFIX}"):  # a save whose ids were never written
                if orphan.name[: -len(self.SUFFIX)] not in self._index:
                    with contextlib.suppress(OSError):
                        orphan.unlink()
        return self._index

    def data_file(self, name: str) -> Path:
        return self.folder / f"{name}{self.SUFFIX}"

    def best_name(self, key: Sequence[int]) -> tuple[str | None, int]:
        """The entry sharing the longest prefix with ``key``, and that length."""
        return longest_prefix(self.index.items(), key)

    def worth_saving(self, key: Sequence[int]) -> bool:
        """Whether ``key`` brings at least ``min_new_tokens`` tokens that no entry holds."""
        return self.capacity_bytes > 0 and len(key) - self.best_name(key)[1] >= self.min_new_tokens

    def touch(self, name: str) -> None:
        with contextlib.suppress(OSError):
            os.utime(self.data_file(name))  # most recently used: evicted last

    def _record(self, name: str, ids: np.ndarray) -> bool:
        """Write the ids of a complete state file ``name`` (atomically), then keep the folder within its bound; False
        (and the entry dropped) where the disk refuses."""
        tmp = self.folder / f".{name}.ids.tmp.npy"
        try:
            np.save(tmp, ids)
            os.replace(tmp, self.folder / f"{name}.ids.npy")
        except OSError as exc:  # a full or read-only disk costs speed, never the answer
            logger.warning("could not record a KV state in %s: %s", self.folder, exc)
            self.drop(name)
            return False
        self.index[name] = ids
        self._evict()
        return True

    def drop(self, name: str) -> None:
        for file in (self.data_file(name), self.folder / f"{name}.ids.npy"):
            with contextlib.suppress(OSError):
                file.unlink()
        if self._index is not None:
            self._index.pop(name, None)

    def _evict(self) -> None:
        def stat(name: str) -> os.stat_result | None:
            try:
                return self.data_file(name).stat()
            except OSError:
                return None

        stats = {name: stat(name) for name in self.index}
        names = sorted(stats, key=lambda n: stats[n].st_mtime if stats[n] else 0.0)
        total = sum(s.st_size for s in stats.values() if s)
        while names and total > self.capacity_bytes:
            oldest = names.pop(0)
            total -= stats[oldest].st_size if stats[oldest] else 0
            self.drop(oldest)


class DiskPrefixStore(_StateFiles):
    """llama-cpp-python's KV states: ``<hash>.kv`` (this module's format: its tokens, last logits and state, with a
    checksum) beside ``<hash>.ids.npy``."""

    SUFFIX = ".kv"

    def __init__(self, folder: Path, *, n_ctx: int, capacity_bytes: int, min_new_tokens: int = MIN_NEW_TOKENS):
        super().__init__(folder, capacity_bytes=capacity_bytes, min_new_tokens=min_new_tokens)
        self.n_ctx = n_ctx

    def best(self, key: Sequence[int]) -> tuple[Path | None, int]:
        """The state file sharing the longest prefix with ``key``, and that length."""
        name, length = self.best_name(key)
        return (None if name is None else self.data_file(name)), length

    def load(self, path: Path) -> Any | None:
        """The state in ``path``, or None (and the entry deleted) if it cannot be read back exactly."""
        import llama_cpp

        name = path.name[: -len(self.SUFFIX)]
        try:
            with open(path, "rb") as fh:
                if fh.readline() != MAGIC:
                    raise ValueError("not a text2sql KV state")
                header = json.loads(fh.readline())
                ids = np.frombuffer(fh.read(header["n_tokens"] * 4), dtype=np.intc)
                scores = np.frombuffer(fh.read(header["n_vocab"] * 4), dtype=np.single).reshape(1, -1)
                blob = fh.read(header["state_size"])
            if (len(blob) != header["state_size"] or zlib.crc32(blob) != header["crc32"]
                    or len(ids) != header["n_tokens"]):
                raise ValueError("truncated or corrupt")
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
            logger.info("KV cache entry %s unusable (%s); dropped", path.name, exc)
            self.drop(name)
            return None
        input_ids = np.zeros(self.n_ctx, dtype=np.intc)
        input_ids[: len(ids)] = ids
        self.touch(name)
        return llama_cpp.LlamaState(
            input_ids=input_ids, scores=scores.copy(), n_tokens=int(header["n_tokens"]),
            llama_state=blob, llama_state_size=int(header["state_size"]), seed=int(header.get("seed", 0)),
        )

    def maybe_save(self, key: Sequence[int], state: Any) -> bool:
        """Write ``state`` if it brings ``min_new_tokens`` tokens no entry holds; True if written."""
        if not self.worth_saving(key):
            return False
        ids = np.asarray(state.input_ids[: state.n_tokens], dtype=np.intc)
        name = hashlib.sha256(ids.tobytes()).hexdigest()[:32]
        header = {
            "n_tokens": int(state.n_tokens), "n_vocab": int(state.scores.shape[-1]),
            "state_size": int(state.llama_state_size), "crc32": zlib.crc32(state.llama_state), "seed": int(state.seed),
        }
        fh = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, delete=False, suffix=".tmp") as fh:
                fh.write(MAGIC + json.dumps(header).encode() + b"\n")
                fh.write(ids.tobytes())
                fh.write(np.asarray(state.scores[-1], dtype=np.single).tobytes())
                fh.write(state.llama_state)
            os.replace(fh.name, self.data_file(name))
        except OSError as exc:  # a full or read-only disk costs speed, never the answer
            logger.warning("could not save a KV state to %s: %s", self.folder, exc)
            if fh is not None:  # None: the folder could not be made, so no temporary file exists
                with contextlib.suppress(OSError):
                    os.unlink(fh.name)
            return False
        return self._record(name, ids)


class SlotFileStore(_StateFiles):
    """The xllamacpp server's KV states: ``<name>.slot`` (written by the server's slot save) beside
    ``<name>.ids.npy`` (written here once the save succeeded)."""

    SUFFIX = ".slot"

    def slot_file(self, name: str) -> Path:
        return self.data_file(name)

    def best(self, key: Sequence[int]) -> tuple[str | None, int]:
        """The entry sharing the longest prefix with ``key``, and that length."""
        return self.best_name(key)

    @staticmethod
    def name_for(key: Sequence[int]) -> str:
        return hashlib.sha256(np.asarray(key, dtype=np.int32).tobytes()).hexdigest()[:32]

    def added(self, name: str, key: Sequence[int]) -> None:
        """Record the ids of a slot file the server has just written, then keep the folder within its bound."""
        self._record(name, np.asarray(key, dtype=np.int32))


class PrefixCache:
    """llama-cpp-python cache: slim states in RAM (bounded in entries and bytes), backed by an optional disk store.

    It has ``llama_cpp.BaseLlamaCache``'s interface (``cache[tokens]``, ``cache[tokens] = state``,
    ``tokens in cache``), which is all ``Llama`` uses.
    """

    def __init__(self, capacity_bytes: int, max_entries: int, disk: DiskPrefixStore | None = None):
        self.capacity_bytes = capacity_bytes
        self.max_entries = max_entries
        self.disk = disk
        self.cache_state: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    @property
    def cache_size(self) -> int:
        return sum(s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes for s in self.cache_state.values())

    def _best_ram(self, key: tuple[int, ...]) -> tuple[tuple[int, ...] | None, int]:
        return longest_prefix(((k, k) for k in self.cache_state), key)

    def __getitem__(self, key: Sequence[int]) -> Any:
        key = tuple(key)
        ram_key, ram_len = self._best_ram(key)
        if self.disk is not None:
            path, disk_len = self.disk.best(key)
            if path is not None and disk_len > ram_len:
                state = self.disk.load(path)
                if state is not None:
                    ids = tuple(int(i) for i in state.input_ids[: state.n_tokens])
                    self._store(ids, state)
                    return state
        if ram_key is None:
            raise KeyError("no cached prefix")
        self.cache_state.move_to_end(ram_key)
        return self.cache_state[ram_key]

    def __contains__(self, key: Sequence[int]) -> bool:
        key = tuple(key)
        return self._best_ram(key)[0] is not None or (self.disk is not None and self.disk.best(key)[0] is not None)

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        key = tuple(key)
        self._store(key, _slim(value))
        if self.disk is not None:
            self.disk.maybe_save(key, value)

    def _store(self, key: tuple[int, ...], value: Any) -> None:
        self.cache_state.pop(key, None)
        self.cache_state[key] = value
        while len(self.cache_state) > self.max_entries or (self.cache_size > self.capacity_bytes
                                                           and len(self.cache_state) > 1):
            self.cache_state.popitem(last=False)
