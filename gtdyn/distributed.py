"""Sweeps on a ``dask.distributed`` cluster: compiled solvers pickle (``CompiledSolver.__reduce__``), so a batch
or many simulations can run over chunks on any number of machines — Dask schedules, gtdyn has no scheduler of
its own. Optional: ``pip install gtdyn[distributed]``.

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))
    qdd = gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=10_000)
"""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import instance_of, robot_argument, state_batch, whole_number
from gtdyn.compiled.solver import CompiledSolver
from gtdyn.simulation import Trajectory, simulate


def batch_on(client, solver: CompiledSolver, Q, V, X, *, chunk: int = 10_000, **inputs):
    """``solver.batch(Q, V, X, **inputs)`` computed on ``client``'s cluster (a ``dask.distributed.Client``):
    the solver is sent to the workers once, the states in chunks of ``chunk`` rows (``inputs``, the base's and
    the external wrenches' rows, chunked alike; a single (6,) wrench is sent whole), one task per chunk; the
    answer is what ``solver.batch`` returns here, rows in order."""
    instance_of("solver", solver, CompiledSolver, "a gtdyn.CompiledSolver (from gtdyn.compile)")
    chunk = whole_number("chunk", chunk, 1)
    Q, V, X = state_batch(solver.robot.num_dofs, Q=Q, V=V, X=X)
    shipped = client.scatter(solver, broadcast=True)
    futures = []
    for first in range(0, len(Q), chunk):
        part = slice(first, first + chunk)
        futures.append(client.submit(_batch, shipped, Q[part], V[part], X[part], _rows(inputs, part, len(Q)),
                                     pure=False))
    parts = client.gather(futures)
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(len(parts[0])))
    return np.concatenate(parts)


def simulate_on(client, robot, Q0, V0, **options) -> list[Trajectory]:
    """``gtdyn.simulate(robot, q0, v0, **options)`` from each initial state (rows of ``Q0`` and ``V0``), one task
    each on ``client``'s cluster; the trajectories in the order of the rows. Torques as ``simulate`` takes them
    (a Python controller is pickled to the workers with the rest)."""
    Q0, V0 = state_batch(robot_argument(robot).num_dofs, Q0=Q0, V0=V0)
    shipped = client.scatter(robot, broadcast=True)
    options = {"progress": False, **options}
    return client.gather([client.submit(simulate, shipped, q0, v0, pure=False, **options) for q0, v0 in zip(Q0, V0)])


def _batch(solver: CompiledSolver, Q, V, X, inputs: dict):
    return solver.batch(Q, V, X, **inputs)


def _rows(inputs: dict, part: slice, count: int) -> dict:
    """The chunk's rows of every per-state input (leading axis of ``count``); the rest whole."""
    out = {}
    for name, value in inputs.items():
        if isinstance(value, dict):
            out[name] = _rows(value, part, count)
        elif value is not None and np.ndim(value) >= 2 and np.shape(value)[0] == count:
            out[name] = np.asarray(value)[part]
        else:
            out[name] = value
    return out
