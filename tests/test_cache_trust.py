"""The compile cache's trust model (issue 25, item 5): a cached solver is a pickle, so only a private folder and
files of this user are loaded from or stored to; otherwise a CacheWarning, once, and an in-memory compile."""

import os
import pickle
import stat
import warnings

import pytest

import gtdyn
from gtdyn.compiled import cache

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_WARNED", set())
    return tmp_path / "cache"


def test_the_folder_is_created_private_and_used(folder):
    gtdyn.compile(gtdyn.load_robot("rr"), "inverse")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in folder.glob("*.pkl"))
    assert gtdyn.compile(gtdyn.load_robot("rr"), "inverse").from_cache


def test_a_folder_others_may_write_is_not_trusted(folder):
    folder.mkdir()
    folder.chmod(0o777)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = gtdyn.compile(gtdyn.load_robot("rr"), "inverse")
        second = gtdyn.compile(gtdyn.load_robot("rr"), "inverse")
    assert not first.from_cache and not second.from_cache and list(folder.glob("*.pkl")) == []
    assert sum(issubclass(w.category, gtdyn.CacheWarning) for w in caught) == 1  # once per folder
    assert first(*[[0.1, 0.2]] * 3).shape == (2,)


def test_a_planted_file_others_may_write_is_never_unpickled(folder):
    """A solver cached honestly, then its file made writable by others (as a planted one would be): not loaded."""
    solver = gtdyn.compile(gtdyn.load_robot("rr"), "forward")
    path = folder / f"{solver.cache_key}.pkl"
    path.chmod(0o666)
    loaded = []
    real_load = pickle.load
    try:
        pickle.load = lambda f: loaded.append(f) or real_load(f)
        with pytest.warns(gtdyn.CacheWarning, match="writable by others or belongs to someone else"):
            again = gtdyn.compile(gtdyn.load_robot("rr"), "forward")
    finally:
        pickle.load = real_load
    assert not again.from_cache and loaded == []


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown needs root")
def test_a_file_of_another_user_is_not_loaded(folder):
    solver = gtdyn.compile(gtdyn.load_robot("rr"), "hybrid", qdd_joints=["j1"])
    os.chown(folder / f"{solver.cache_key}.pkl", 12345, 12345)
    with pytest.warns(gtdyn.CacheWarning):
        assert not gtdyn.compile(gtdyn.load_robot("rr"), "hybrid", qdd_joints=["j1"]).from_cache
