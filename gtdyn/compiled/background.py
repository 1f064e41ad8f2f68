"""Lane code compiled in a process of its own, for a solver that asks for it in the background
(``gtdyn.compiled.lanes.Batches``): tracing the plan again is Python, and in a thread of the caller's process it
took the GIL from the caller's batches (Talos: batches several times slower for the half second of tracing,
benchmarks/results/design_measurements.md), and llvmlite serialises its calls within a process. A worker process
traces and compiles on one core and hands back the object code; the caller's batches go on on the other.
"""

from __future__ import annotations

import logging
import os
import pickle
import sys

from gtdyn.compiled import objects

LOG = logging.getLogger("gtdyn")
COMMAND = "from gtdyn.compiled.background import serve; serve()"  # what the worker runs


def lane_code_elsewhere(*arguments) -> dict:
    """``build._lane_code(*arguments)`` in a worker process (``serve``), on one core; in this process if no
    worker can run it (the reason logged), unless this process is exiting."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # where gtdyn imports from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        code, out, err = objects.run_worker([sys.executable, "-c", COMMAND], pickle.dumps(arguments), env)
        if code == 0 and out:
            return pickle.loads(out)  # noqa: S301 - our own worker's answer
        reason = err.decode(errors="replace").strip().splitlines()[-1:] or code
    except (OSError, pickle.PickleError) as error:
        reason = error
    if objects.exiting():
        raise RuntimeError("the process is exiting")
    LOG.info("gtdyn.compiled: no worker for the lane code (%s); compiling it here", reason)
    from gtdyn.compiled.build import _lane_code  # build imports this module

    return _lane_code(*arguments)


def serve() -> None:
    """A worker's work: ``build._lane_code``'s arguments, pickled, on standard input; the object code, pickled, on
    standard output. One core: big programs' parts one after the other (the caller runs batches on the other)."""
    from gtdyn.compiled.build import _lane_code

    arguments = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - from the process that started this one
    objects.workers = lambda: 1
    sys.stdout.buffer.write(pickle.dumps(_lane_code(*arguments)))
    sys.stdout.buffer.flush()
