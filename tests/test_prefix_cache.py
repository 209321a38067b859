"""The engine's KV prefix cache: the disk store (round trip, bad entries, bounds) and the RAM/disk tiers.

No model is loaded: a state is any object with LlamaState's fields, holding made-up bytes.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from text2sql_dspy.programs.llm.prefix_cache import DiskPrefixStore, PrefixCache, common_prefix

N_CTX = 64
N_VOCAB = 8
BLOB_BYTES = 1000


def fake_state(ids: list[int], *, fill: int = 7, seed: int = 3) -> SimpleNamespace:
    """A LlamaState-like object for ``ids``: input_ids padded to n_ctx, a row of scores per token, a KV blob."""
    input_ids = np.zeros(N_CTX, dtype=np.intc)
    input_ids[: len(ids)] = ids
    scores = np.arange(len(ids) * N_VOCAB, dtype=np.single).reshape(len(ids), N_VOCAB)
    blob = bytes((fill + i) % 256 for i in range(BLOB_BYTES))
    return SimpleNamespace(input_ids=input_ids, scores=scores, n_tokens=len(ids), llama_state=blob,
                           llama_state_size=len(blob), seed=seed)  # fmt: skip


def store(folder: Path, capacity_bytes: int = 1 << 20, min_new_tokens: int = 4) -> DiskPrefixStore:
    return DiskPrefixStore(folder, n_ctx=N_CTX, capacity_bytes=capacity_bytes, min_new_tokens=min_new_tokens)


def entry_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


PROMPT = list(range(100, 120))  # 20 tokens: a database's prompt prefix


def test_common_prefix() -> None:
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0 and common_prefix([5], [6]) == 0


def test_a_saved_state_loads_back_exactly_in_a_new_process(tmp_path: Path) -> None:
    state = fake_state(PROMPT)
    assert store(tmp_path).maybe_save(PROMPT, state)
    fresh = store(tmp_path)  # another process: it finds the entry from the files alone
    path, length = fresh.best(PROMPT + [1, 2, 3])
    assert path is not None and length == len(PROMPT)
    loaded = fresh.load(path)
    assert loaded is not None
    assert loaded.n_tokens == len(PROMPT) and len(loaded.input_ids) == N_CTX
    assert list(loaded.input_ids[: len(PROMPT)]) == PROMPT and not loaded.input_ids[len(PROMPT):].any()
    assert loaded.scores.shape == (1, N_VOCAB) and np.array_equal(loaded.scores[0], state.scores[-1])
    assert loaded.llama_state == state.llama_state and loaded.llama_state_size == BLOB_BYTES
    assert loaded.seed == state.seed


def test_a_state_is_saved_only_when_it_brings_enough_new_tokens(tmp_path: Path) -> None:
    disk = store(tmp_path, min_new_tokens=4)
    assert disk.maybe_save(PROMPT, fake_state(PROMPT))
    question = PROMPT + [1, 2, 3]  # the same prefix plus a short question: 3 new tokens
    assert not disk.maybe_save(question, fake_state(question))
    longer = PROMPT + [1, 2, 3, 4]
    assert disk.maybe_save(longer, fake_state(longer))
    assert not disk.maybe_save([7, 8, 9], fake_state([7, 8, 9]))  # new, but shorter than min_new_tokens
    assert len(disk.index) == 2
    assert not store(tmp_path / "off", capacity_bytes=0).maybe_save(PROMPT, fake_state(PROMPT))  # disk tier off
    assert not (tmp_path / "off").exists()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-10])


def _flip_blob_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the KV blob is last: its crc32 no longer matches
    path.write_bytes(bytes(data))


def _bad_magic(path: Path) -> None:
    path.write_bytes(b"GGUF\n" + path.read_bytes()[5:])


def _bad_header(path: Path) -> None:
    lines = path.read_bytes().split(b"\n", 2)
    path.write_bytes(lines[0] + b"\n{not json\n" + lines[2])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _flip_blob_byte, _bad_magic, _bad_header, _empty, Path.unlink],
                         ids=["truncated", "corrupt_blob", "bad_magic", "bad_header", "empty", "missing"])
def test_an_unreadable_entry_is_a_miss_and_is_deleted(tmp_path: Path, damage: Any) -> None:
    disk = store(tmp_path)
    disk.maybe_save(PROMPT, fake_state(PROMPT))
    path, _ = disk.best(PROMPT)
    damage(path)
    assert disk.load(path) is None
    assert entry_files(tmp_path) == [] and disk.best(PROMPT) == (None, 0)


@pytest.mark.parametrize("ids_bytes", [b"", b"\x93NUMPY"], ids=["empty", "truncated"])
def test_an_unreadable_token_list_drops_its_entry(tmp_path: Path, ids_bytes: bytes) -> None:
    store(tmp_path).maybe_save(PROMPT, fake_state(PROMPT))
    (ids_file,) = tmp_path.glob("*.ids.npy")
    ids_file.write_bytes(ids_bytes)  # a save killed while writing it
    fresh = store(tmp_path)
    assert fresh.best(PROMPT) == (None, 0)
    assert entry_files(tmp_path) == []


def test_the_folder_is_bounded_and_the_least_recently_used_entry_goes_first(tmp_path: Path) -> None:
    a, b, c = PROMPT, list(range(200, 220)), list(range(300, 320))
    probe = store(tmp_path / "probe")
    probe.maybe_save(a, fake_state(a))
    entry_bytes = next((tmp_path / "probe").glob("*.kv")).stat().st_size
    disk = store(tmp_path / "kv", capacity_bytes=2 * entry_bytes + entry_bytes // 2)  # room for two entries
    disk.maybe_save(a, fake_state(a))
    disk.maybe_save(b, fake_state(b))
    path_a, path_b = disk.best(a)[0], disk.best(b)[0]
    os.utime(path_a, (1_000, 1_000))
    os.utime(path_b, (2_000, 2_000))
    assert disk.load(path_a) is not None  # a use: A is now the most recently used
    disk.maybe_save(c, fake_state(c))
    assert disk.best(b) == (None, 0) and not path_b.exists()  # B, the least recently used, went
    assert disk.best(a)[0] == path_a and disk.best(c)[1] == len(c)
    assert sum(p.stat().st_size for p in (tmp_path / "kv").glob("*.kv")) <= disk.capacity_bytes


def test_an_unwritable_folder_costs_the_save_not_the_answer(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache folder should be")
    disk = store(blocker / "kv")
    assert disk.maybe_save(PROMPT, fake_state(PROMPT)) is False
    assert disk.best(PROMPT) == (None, 0)


# --------------------------------------------------------------------------- the tiers


def test_ram_serves_the_longest_shared_prefix_and_keeps_one_row_of_logits() -> None:
    cache = PrefixCache(capacity_bytes=1 << 30, max_entries=4)
    with pytest.raises(KeyError):
        cache[PROMPT]
    short, long = fake_state(PROMPT[:10]), fake_state(PROMPT)
    cache[PROMPT[:10]] = short
    cache[PROMPT] = long
    assert cache[PROMPT + [1, 2]] is long and cache[PROMPT[:12]] is long and cache[PROMPT[:5]] is short
    assert long.scores.shape == (1, N_VOCAB)  # slim: only the last row of logits is kept
    assert PROMPT[:3] in cache and [9, 9] not in cache


def test_ram_is_bounded_in_entries_least_recently_used_first() -> None:
    cache = PrefixCache(capacity_bytes=1 << 30, max_entries=2)
    a, b, c = [1, 1], [2, 2], [3, 3]
    cache[a], cache[b] = fake_state(a), fake_state(b)
    _ = cache[a]  # a use
    cache[c] = fake_state(c)
    assert a in cache and c in cache and b not in cache


def test_disk_serves_a_longer_prefix_than_ram_and_the_state_moves_into_ram(tmp_path: Path) -> None:
    PrefixCache(1 << 30, 4, disk=store(tmp_path))[PROMPT] = fake_state(PROMPT)  # an earlier process
    cache = PrefixCache(1 << 30, 4, disk=store(tmp_path))
    cache[PROMPT[:8]] = fake_state(PROMPT[:8], fill=1)  # shorter, and too short to be saved to disk
    served = cache[PROMPT + [1, 2]]
    assert served.n_tokens == len(PROMPT) and served.llama_state == fake_state(PROMPT).llama_state
    assert tuple(PROMPT) in cache.cache_state  # now in RAM too
    assert cache[PROMPT + [1, 2]] is served  # and served from RAM next time
    assert len(list(tmp_path.glob("*.kv"))) == 1


def test_ram_wins_when_its_prefix_is_as_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = PrefixCache(1 << 30, 4, disk=store(tmp_path))
    state = fake_state(PROMPT)
    cache[PROMPT] = state  # saved to both tiers
    assert len(list(tmp_path.glob("*.kv"))) == 1
    monkeypatch.setattr(cache.disk, "load", lambda path: pytest.fail("the disk was read"))
    assert cache[PROMPT + [5]] is state


def test_a_corrupt_disk_entry_falls_back_to_ram(tmp_path: Path) -> None:
    PrefixCache(1 << 30, 4, disk=store(tmp_path))[PROMPT] = fake_state(PROMPT)
    _flip_blob_byte(next(tmp_path.glob("*.kv")))
    cache = PrefixCache(1 << 30, 4, disk=store(tmp_path))
    short = fake_state(PROMPT[:8])
    cache[PROMPT[:8]] = short
    assert cache[PROMPT] is short
    assert entry_files(tmp_path) == []


# --------------------------------------------------------------------------- the engine's settings for it


def test_the_disk_tier_size_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from text2sql_dspy.programs.errors import ConfigurationError
    from text2sql_dspy.programs.llm import shared_llama as llama_engine

    monkeypatch.delenv(llama_engine.KV_CACHE_BYTES_ENV, raising=False)
    assert llama_engine._disk_cache_bytes() == llama_engine.DEFAULT_DISK_CACHE_BYTES
    monkeypatch.setenv(llama_engine.KV_CACHE_BYTES_ENV, "5e8")
    assert llama_engine._disk_cache_bytes() == 500_000_000
    monkeypatch.setenv(llama_engine.KV_CACHE_BYTES_ENV, "0")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    assert llama_engine._make_prefix_cache(1 << 20, 2, model_path=model).disk is None  # 0 turns the disk tier off
    monkeypatch.setenv(llama_engine.KV_CACHE_BYTES_ENV, "lots")
    with pytest.raises(ConfigurationError, match="number of bytes"):
        llama_engine._disk_cache_bytes()


def test_the_disk_folder_is_keyed_by_the_model_file_and_context(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    from text2sql_dspy.programs.llm import shared_llama as llama_engine

    monkeypatch.setenv("TEXT2SQL_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF v1")
    first = llama_engine._disk_cache_folder(model, 4096, None)
    assert first == llama_engine._disk_cache_folder(model, 4096, None)
    assert first.parent == tmp_path / "cache" / "kv"
    assert first != llama_engine._disk_cache_folder(model, 8192, None)  # another context size
    model.write_bytes(b"GGUF v2, another size")
    assert first != llama_engine._disk_cache_folder(model, 4096, None)  # another model file
