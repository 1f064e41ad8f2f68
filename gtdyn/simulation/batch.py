"""Many rollouts at once (issue 24, item 2): ``gtdyn.simulate_batch`` runs ``simulate`` from each of N initial
states on native threads. A run that loops natively releases the GIL for its steps (the loop is a ctypes call),
so threads run side by side; each thread steps with a compiled solver of its own (``solvers.forward_solver``
remembers one per thread). A run the native loop does not take (a Python controller, a floating base, closed
loops, the variational integrator) or stops in (a step whose certificate does not pass) goes through the Python
stepper as ``simulate`` does, holding the GIL while it does."""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields

import numpy as np

from gtdyn.arguments import choice, flag, robot_argument, whole_number
from gtdyn.arguments.series import batch_starts, check_trajectory_memory, time_grid
from gtdyn.compiled.lanes import WIDTH
from gtdyn.model.robot import Robot
from gtdyn.progress import Progress
from gtdyn.simulation import native_loop
from gtdyn.simulation.simulate import METHODS, PROGRESS_AFTER_S, prepare, simulate
from gtdyn.simulation.trajectory import Trajectory

# the Trajectory's per-sample arrays, stacked over the runs
_STACKED = tuple(f.name for f in fields(Trajectory) if f.name not in ("robot", "method", "t", "gravity"))


@dataclass(frozen=True, eq=False)
class Trajectories:
    """N runs of the same length: ``t`` (steps + 1,) shared; ``q``, ``v``, ``qdd``, ``tau`` of shape (N, steps + 1,
    n), run i's samples in row i; and, where the robot has them, ``closure`` (N, steps + 1), ``base_pose``
    (N, steps + 1, 4, 4), ``base_twist`` and ``base_accel`` (N, steps + 1, 6) and ``contact_forces``.
    ``trajectories[i]`` is run i as a ``Trajectory`` (views of these arrays, with its energies)."""

    robot: Robot
    method: str
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    gravity: np.ndarray
    closure: np.ndarray | None = None
    base_pose: np.ndarray | None = None
    base_twist: np.ndarray | None = None
    base_accel: np.ndarray | None = None
    contact_forces: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.q)

    def __getitem__(self, i: int) -> Trajectory:
        arrays = {name: None if getattr(self, name) is None else getattr(self, name)[i] for name in _STACKED}
        return Trajectory(self.robot, self.method, self.t, gravity=self.gravity, **arrays)

    def __repr__(self) -> str:
        return (f"Trajectories({len(self)} runs of {self.method} on '{self.robot.name}', {len(self.t) - 1} steps of "
                f"{self.t[1] - self.t[0]:g} s)")


def simulate_batch(robot: Robot, q0, v0, *, tau=None, dt: float, steps: int, method: str = "semi_implicit_euler",
                   threads: int = 1, lanes: bool = False, progress: bool | None = None, **options) -> Trajectories:
    """``gtdyn.simulate(robot, q0[i], v0[i], tau=tau, dt=dt, steps=steps, method=method, **options)`` for each row
    i of ``q0`` and ``v0`` (arrays (N, n)), on ``threads`` native threads; the runs stacked as ``Trajectories``
    (``q`` of shape (N, steps + 1, n), …), each bit for bit what ``simulate`` gives alone.

    Every run shares ``tau`` (None, a vector, an array (steps, n), a callable or a ``gtdyn.PDController``) and
    ``options`` (``gravity``, ``checks``, ``base_pose``, ``base_twist``, ``external_wrenches``, ``wrench_axes``,
    ``contacts``). Runs that loop natively (fixed-base trees, Euler, semi-implicit Euler or RK4, held torques or a
    ``PDController``) run side by side; the others take the Python stepper and share the GIL. A run that fails
    raises its error, with a note naming its row (the lowest failing row, whatever the threads); the warnings of
    each run are ``simulate``'s. ``progress``: as ``simulate``'s, counting runs.

    ``lanes=True``: runs that loop natively go four at a time through one loop in the SIMD lanes of a core
    (``gtdyn.compiled.lanes``; the solver is compiled with ``lanes=True`` once, and cached), the same bits as
    one by one. A step that does not pass in one of the four is taken by all four's Python steppers; a group
    whose run fails is run again row by row, so errors name their rows as without lanes (warnings the group gave
    before it failed then come twice)."""
    robot_argument(robot)
    q0, v0 = batch_starts(robot, q0, v0)
    choice("method", method, METHODS)
    threads = whole_number("threads", threads, 1)
    lanes = flag("lanes", lanes)
    dt, steps = time_grid(dt, steps)
    check_trajectory_memory(robot, steps, runs=len(q0))
    options = {**options, "tau": tau, "dt": dt, "steps": steps, "method": method, "progress": False}
    stacked: dict = {}  # the first run's t, robot, method and gravity, and the stacked arrays (shaped by it)
    errors: dict[int, BaseException] = {}
    done = [0]
    size = WIDTH if lanes else 1  # rows claimed at a time
    found: dict = {}  # whether the runs loop natively, once known (``_in_lanes``)
    claim, lock = iter(range(0, len(q0), size)), threading.Lock()

    def keep(i: int, run: Trajectory) -> None:
        with lock:
            if not stacked:
                stacked.update(_allocate(run, len(q0)))
        for name in _STACKED:  # row i is this run's alone: copied outside the lock
            if stacked[name] is not None:
                stacked[name][i] = getattr(run, name)

    def work(report: Progress | None) -> None:
        """Take the next rows until none is left or a run has failed (rows are claimed in order, so every row
        below a failed one has been claimed and finishes)."""
        while True:
            with lock:
                first = None if errors else next(claim, None)
            if first is None:
                return
            rows = range(first, min(first + size, len(q0)))
            runs = _in_lanes(robot, q0, v0, rows, options, found) if len(rows) == WIDTH else None
            for i in rows:
                try:
                    keep(i, runs[i - first] if runs else simulate(robot, q0[i], v0[i], **options))
                except Exception as e:  # every run's error is kept; the lowest row's is raised
                    with lock:
                        errors[i] = e
            with lock:
                done[0] += len(rows)
            if report is not None:
                report.at(done[0])

    with Progress("simulate_batch", len(q0), enabled=progress, after=0.0 if progress else PROGRESS_AFTER_S,
                  every=1.0, unit="runs") as report:
        helpers = [threading.Thread(target=work, args=(None,), daemon=True) for _ in range(min(threads, len(q0)) - 1)]
        for helper in helpers:
            helper.start()
        work(report)  # this thread works too, and alone reports
        for helper in helpers:
            helper.join()
    if errors:
        first = min(errors)
        errors[first].add_note(f"gtdyn.simulate_batch: the run from row {first} of q0 and v0")
        raise errors[first]
    return Trajectories(**stacked)


def _in_lanes(robot: Robot, q0, v0, rows: range, options: dict, found: dict) -> list[Trajectory] | None:
    """The runs of ``rows`` (``WIDTH`` of them) side by side in one lane loop, or None where they do not loop
    natively or one fails (the caller then runs them one by one, as ``simulate`` would, raising where it does).
    ``found``: the batch's memo of whether its runs loop natively (the same for every row), so that runs in
    Python compile no lane solver and a batch sets up one run to find out, not one per group."""
    options = {key: value for key, value in options.items() if key != "progress"}
    try:
        if "native" not in found:
            found["native"] = prepare(robot, q0[rows[0]], v0[rows[0]], **options).native
        if not found["native"]:
            return None
        runs = [prepare(robot, q0[i], v0[i], lanes=True, **options) for i in rows]
        native_loop.run_group(runs)
        return [run.finish() for run in runs]
    except Exception:  # noqa: BLE001 — the rows again, one by one, name their own errors
        return None


def _allocate(run: Trajectory, count: int) -> dict:
    """``Trajectories``' fields for ``count`` runs like ``run``: its robot, method, times and gravity, and an empty
    array (count, …) for each of its per-sample arrays (None where it has none). Each run is copied in as it ends,
    so a batch holds its stacked arrays and one run per thread, not every run twice."""
    arrays = {name: None if getattr(run, name) is None else np.empty((count, *getattr(run, name).shape))
              for name in _STACKED}
    return {"robot": run.robot, "method": run.method, "t": run.t, "gravity": run.gravity, **arrays}
