"""Sweeps on a ``dask.distributed`` cluster: compiled objects pickle (solvers, the mass matrix, frames, Λ⁻¹), so
a batch or many simulations can run over chunks on any number of machines — Dask schedules, gtdyn has no
scheduler of its own. Optional: ``pip install gtdyn[distributed]``.

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))
    qdd = gtdyn.distributed.batch_on(client, solver, Q, V, X, chunk=10_000)
    J = gtdyn.distributed.rows_on(client, frames.batch_jacobian, Q, chunk=10_000)
"""

from __future__ import annotations

import numbers

import numpy as np

from gtdyn.arguments import batch_method, instance_of, robot_argument, state_batch, whole_number
from gtdyn.compiled import lanes
from gtdyn.compiled.center_of_mass import CompiledCenterOfMass
from gtdyn.compiled.frames import CompiledFrames
from gtdyn.compiled.operational import CompiledInverseOSIM
from gtdyn.compiled.quantities import CompiledBiasForces, CompiledMassMatrix
from gtdyn.compiled.solver import CompiledSolver
from gtdyn.errors import ArgumentError
from gtdyn.simulation import Trajectory, simulate

COMPILED = (CompiledSolver, CompiledMassMatrix, CompiledBiasForces, CompiledFrames,  # what rows_on sends
            CompiledInverseOSIM, CompiledCenterOfMass)


def batch_on(client, solver: CompiledSolver, Q, V, X, *, chunk: int = 10_000, **inputs):
    """``solver.batch(Q, V, X, **inputs)`` computed on ``client``'s cluster (a ``dask.distributed.Client``):
    the solver is sent to the workers once, the states in chunks of ``chunk`` rows (``inputs``, the base's and
    the external wrenches' rows, chunked alike; a single (6,) wrench is sent whole), one task per chunk; the
    answer is what ``solver.batch`` returns here, rows in order."""
    instance_of("solver", solver, CompiledSolver, "a gtdyn.CompiledSolver (from gtdyn.compile)")
    return rows_on(client, solver.batch, Q, V, X, chunk=chunk, **inputs)


def rows_on(client, method, *states, chunk: int = 10_000, **inputs):
    """``method(*states, **inputs)`` computed on ``client``'s cluster, for ``method`` a batch method of a compiled
    object — ``solver.batch``, ``solver.batch_derivatives``, ``mass.batch`` (``gtdyn.compile_mass_matrix``),
    ``bias.batch`` (``gtdyn.compile_bias_forces``), ``com.batch`` and ``com.batch_jacobian``
    (``gtdyn.compile_center_of_mass``), ``osim.batch`` (``gtdyn.compile_inverse_osim``),
    ``frames.batch_jacobian`` and the other ``batch_…`` of ``gtdyn.compile_frames``. The object goes to the workers
    once; ``states`` (Q, and V, X where the method takes them: (N, n) each) and the per-state rows of ``inputs`` (a
    leading axis of N: base poses, wrenches) go in chunks of ``chunk`` rows, one task each. The answer is what
    ``method`` returns here, rows in order (arrays, or tuples of them). A row the method refuses raises its
    ``ArgumentError``, saying where its chunk starts.

    A solver's ``batch`` over ``lanes.LANES_AFTER`` states or more compiles its SIMD lanes here first (unless it
    was compiled with ``lanes=False``), as its batches here would, so that every worker runs them: a solver
    unpickled on a worker compiles none of its own."""
    owner, name, named = batch_method("method", method, COMPILED, *states, **inputs)
    chunk = whole_number("chunk", chunk, 1)
    states = state_batch(owner.robot.num_dofs, **{key: named[key] for key in list(named)[:len(states)]})
    count = len(states[0])
    if name == "batch" and isinstance(owner, CompiledSolver) and count >= lanes.LANES_AFTER:
        owner.compile_lanes(wait=True)  # a sweep this long runs in lanes here: the workers get them with it
    shipped = client.scatter(owner, broadcast=True)
    futures = []
    for first in range(0, count, chunk):
        part = slice(first, first + chunk)
        futures.append(client.submit(_run, shipped, name, first, [a[part] for a in states],
                                     _rows(inputs, part, count), pure=False))
    return _joined(client.gather(futures))


def _run(owner, name: str, first: int, states: list, inputs: dict):
    try:
        return getattr(owner, name)(*states, **inputs)
    except ArgumentError as error:  # its row indices count from the chunk's first row: say so
        error.args = (f"in the chunk from row {first} (rows below count from there): {error}",)
        raise


def _joined(parts: list):
    """The chunks' answers as one: arrays stacked, tuples (named ones too) part by part."""
    first = parts[0]
    if isinstance(first, tuple):
        joined = [np.concatenate([p[k] for p in parts]) for k in range(len(first))]
        return type(first)(*joined) if hasattr(first, "_fields") else tuple(joined)
    return np.concatenate(parts)


def simulate_on(client, robot, Q0, V0, **options) -> list[Trajectory]:
    """``gtdyn.simulate(robot, q0, v0, **options)`` from each initial state (rows of ``Q0`` and ``V0``), one task
    each on ``client``'s cluster; the trajectories in the order of the rows. Torques as ``simulate`` takes them
    (a Python controller is pickled to the workers with the rest)."""
    Q0, V0 = state_batch(robot_argument(robot).num_dofs, Q0=Q0, V0=V0)
    shipped = client.scatter(robot, broadcast=True)
    options = {"progress": False, **options}
    return client.gather([client.submit(simulate, shipped, q0, v0, pure=False, **options) for q0, v0 in zip(Q0, V0)])


def _rows(inputs: dict, part: slice, count: int) -> dict:
    """The chunk's rows of every per-state input (``_per_state``); the rest whole."""
    out = {}
    for name, value in inputs.items():
        if isinstance(value, dict):
            out[name] = _rows(value, part, count)
        elif _per_state(value, count):
            out[name] = value[part]
        else:
            out[name] = value
    return out


def _per_state(value, count: int) -> bool:
    """Whether ``value`` holds an entry per state: an array with a leading axis of ``count`` (and more axes), or a
    list of ``count`` entries that are not numbers (a list of ``gtsam.Pose3``). A (6,) wrench for every state is
    one input, even for six states."""
    if isinstance(value, np.ndarray):
        return value.ndim >= 2 and value.shape[0] == count
    return isinstance(value, (list, tuple)) and len(value) == count > 0 \
        and not isinstance(value[0], (numbers.Number, np.number))
