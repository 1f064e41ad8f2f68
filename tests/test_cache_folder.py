"""The compile cache's folder and size (issue 20, item 9): the platform's cache folder unless GTDYN_CACHE_DIR says
otherwise, and a size cap that removes the least recently used solvers first."""

import os
import time

from gtdyn.compiled import cache


def test_the_folder_is_the_platforms_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("GTDYN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # platformdirs' rule on Linux
    assert cache.directory() == tmp_path / "gtdyn" / "compiled"
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.directory() == tmp_path / "mine"


def test_storing_beyond_the_cap_removes_the_least_recently_used(monkeypatch, tmp_path):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("GTDYN_CACHE_MAX_MB", "2.5")  # room for two of the records below
    big = {"object": b"x" * 2**20}  # ~1 MiB each
    now = time.time()
    for k, name in enumerate(("old", "used", "new")):
        cache.store(name, big)
        os.utime(tmp_path / f"{name}.pkl", (now - 100 + k, now - 100 + k))  # stored in this order
    # three records do not fit in 2.5 MiB: the oldest went when "new" came (the newest stays, whatever its size)
    assert sorted(p.stem for p in tmp_path.glob("*.pkl")) == ["new", "used"]
    assert cache.load("used") is not None  # loading marks it used now
    cache.store("newest", big)
    assert sorted(p.stem for p in tmp_path.glob("*.pkl")) == ["newest", "used"]
    monkeypatch.setenv("GTDYN_CACHE_MAX_MB", "not a number")  # a malformed setting keeps the default
    cache.store("another", big)
    assert len(list(tmp_path.glob("*.pkl"))) == 3


def test_small_programs_are_compiled_once_then_loaded(monkeypatch, tmp_path):
    """``cache.compiled_ir`` (the native time loop, the pose step): the first process compiles an IR text and stores
    its object code under the text's hash and the CPU; the next loads it; other IR, or another CPU, compiles."""
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    compiled = []

    def compile_ir(ir: str) -> bytes:
        compiled.append(ir)
        return f"object of {ir}".encode()

    assert cache.compiled_ir("define void @a()", "cpu1", compile_ir) == b"object of define void @a()"
    assert cache.compiled_ir("define void @a()", "cpu1", compile_ir) == b"object of define void @a()"
    assert compiled == ["define void @a()"]
    cache.compiled_ir("define void @b()", "cpu1", compile_ir)
    cache.compiled_ir("define void @a()", "cpu2", compile_ir)
    assert compiled == ["define void @a()", "define void @b()", "define void @a()"]
