import os
import sys

# One BLAS thread per test process (and per process it starts: notebook kernels, fuzz and warm-up workers), unless
# the caller says otherwise. On two cores shared with other work, OpenBLAS's own threads contend for them: one
# numpy SVD (of gtdyn's free-variable check) then took ~14–20 s instead of ~0.9 s, at random. Set before numpy
# is imported: OpenBLAS reads it once, when it loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))  # tests' own helpers (references, loop_mechanisms, …)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture(scope="module")
def puma():
    """The bundled PUMA 560 (a module's own copy)."""
    import gtdyn

    return gtdyn.load_robot("puma560")


@pytest.fixture(scope="session")
def run_cache_dir(tmp_path_factory) -> str:
    """One compile cache for the whole test run, shared by its xdist workers (the cache's writes are atomic, and a
    solver two workers compile at once is stored twice, the same). About a third of the suite's compiles were the
    PUMA's same few solvers, compiled again by each module into a cache of its own."""
    base = tmp_path_factory.getbasetemp()
    in_worker = "PYTEST_XDIST_WORKER" in os.environ  # then base is pytest-N/popen-gwK/, one per worker
    root = base.parent if in_worker else base
    path = root / "gtdyn_run_cache"
    path.mkdir(exist_ok=True)
    return str(path)


@pytest.fixture(scope="module")
def private_cache(run_cache_dir):
    """The test run's compile cache (``pytestmark = pytest.mark.usefixtures("private_cache")``): what a module
    compiles is neither read from nor left in the user's cache. A test that needs a cache of its own (one that
    watches what is compiled or stored) sets ``GTDYN_CACHE_DIR`` to its ``tmp_path``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GTDYN_CACHE_DIR", run_cache_dir)
        yield
