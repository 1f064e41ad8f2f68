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


@pytest.fixture(scope="module")
def private_cache(tmp_path_factory):
    """A compile cache of the module's own (``pytestmark = pytest.mark.usefixtures("private_cache")``): what it
    compiles is neither read from nor left in the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GTDYN_CACHE_DIR", str(tmp_path_factory.mktemp("gtdyn_cache")))
        yield
