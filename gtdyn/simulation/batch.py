"""Many rollouts at once (issue 24, item 2): ``gtdyn.simulate_batch`` runs ``simulate`` from each of N initial states on
native threads. A run that loops natively releases the GIL for its steps (the loop is a ctypes call), so threads run
side by side; each thread steps with a compiled solver of its own (``solvers.forward_solver`` remembers one per
thread). A Python controller is called back from the native loop, holding the GIL while it runs. Runs with a Python
controller loop one by one, not in lanes. A run the native loop does not take (closed loops, the trapezoidal rule,
the variational integrator) or stops in (a step whose certificate does not pass) goes through the Python stepper as
``simulate`` does, holding the GIL while it does."""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields

import numpy as np

from gtdyn.arguments import choice, flag, robot_argument, whole_number
from gtdyn.arguments.series import batch_starts, check_trajectory_memory, time_grid
from gtdyn.compiled import lanes as compiled_lanes
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
                   threads: int = 1, lanes: bool | None = None, progress: bool | None = None,
                   **options) -> Trajectories:
    """``gtdyn.simulate(robot, q0[i], v0[i], tau=tau, dt=dt, steps=steps, method=method, **options)`` for each row
    i of ``q0`` and ``v0`` (arrays (N, n)), on ``threads`` native threads; the runs stacked as ``Trajectories``
    (``q`` of shape (N, steps + 1, n), …), each bit for bit what ``simulate`` gives alone.

    Every run shares ``tau`` (None, a vector, an array (steps, n), a callable or a ``gtdyn.PDController``) and
    ``options`` (``gravity``, ``checks``, ``base_pose``, ``base_twist``, ``external_wrenches``, ``wrench_axes``,
    ``contacts``). Runs that loop natively (trees; Euler, semi-implicit Euler or, on a fixed base, RK4; held
    torques or a controller) run side by side, a Python controller holding the GIL while it is called back; the
    others take the Python stepper and share the GIL. A run that fails raises its error, with a note naming its
    row (the lowest failing row, whatever the threads); the warnings of each run are ``simulate``'s, once each.
    ``progress``: as ``simulate``'s, counting runs.

    Runs that loop natively go four at a time through one loop in the SIMD lanes of a core once the solver has
    lane code (``gtdyn.compiled.lanes``), the same bits as one by one (not those with a Python controller).
    ``lanes=None`` (the default): where the solver's cache entry has it, and for a batch of
    ``gtdyn.compiled.lanes.LANES_AFTER`` steps or more (runs × steps), compiled in the background while the first
    groups run one by one (as a solver's batches tier up); on several threads a smaller batch without lane code
    shares its rows out one by one. ``lanes=True`` compiles it first if need be; ``lanes=False`` never uses it. A
    step that does not pass in one of the four (nor in the solver's twin, which a lane asks as a call does) is
    taken by all four's Python steppers; a run that fails there leaves the group, and the runs below it go on
    alone from where they were."""
    robot_argument(robot)
    q0, v0 = batch_starts(robot, q0, v0)
    choice("method", method, METHODS)
    threads = whole_number("threads", threads, 1)
    lanes = None if lanes is None else flag("lanes", lanes)
    dt, steps = time_grid(dt, steps)
    check_trajectory_memory(robot, steps, runs=len(q0))
    options = {**options, "tau": tau, "dt": dt, "steps": steps, "method": method}
    stacked: dict = {}  # the first run's t, robot, method and gravity, and the stacked arrays (shaped by it)
    errors: dict[int, BaseException] = {}
    done = [0]
    code = _LaneCode(lanes, len(q0) * steps)
    size = WIDTH if len(q0) >= WIDTH and (lanes or (lanes is None and (threads == 1 or code.big or _lanes_ready(
        robot, q0[0], v0[0], options)))) else 1
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
            try:
                ended = {first: _alone(robot, q0[first], v0[first], options)} if size == 1 else \
                    _group(robot, q0, v0, rows, options, code)
            except Exception as error:  # noqa: BLE001 — never lost in a helper thread, leaving its rows unset
                ended = {first: error}
            for i, run in ended.items():
                if isinstance(run, BaseException):  # every run's error is kept; the lowest row's is raised
                    with lock:
                        errors[i] = run
                else:
                    keep(i, run)
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


def _alone(robot: Robot, q0, v0, options: dict) -> Trajectory | BaseException:
    try:
        return simulate(robot, q0, v0, progress=False, **options)
    except Exception as error:  # noqa: BLE001 — the caller keeps it, and raises the lowest row's
        return error


def _lanes_ready(robot: Robot, q0, v0, options: dict) -> bool:
    """Whether the batch's runs would loop in lanes at once: row 0's run, set up here, loops natively and its
    solver (this thread's, remembered for the first group) already has lane code, from the cache."""
    try:
        run = prepare(robot, q0, v0, lanes=None, **options)
    except Exception:  # noqa: BLE001 — row 0 raises its own error when it runs
        return False
    return run.native and bool(native_loop.compiled_solver(run.forward).lanes)


class _LaneCode:
    """Whose lane code a batch's groups loop in. The first group's solver is asked for it (``lanes=True``: at
    once; None: in the background for a big batch); any thread's solver that has it serves: the code keeps its
    state in the workspace each group brings."""

    def __init__(self, asked: bool | None, work: int):
        self.asked, self.big = asked, work >= compiled_lanes.LANES_AFTER
        self._first = None
        self._lock = threading.Lock()

    def solver(self, mine):
        """A solver with lane code for ``mine``'s groups (``mine`` itself, or the first group's), or None."""
        with self._lock:
            if self._first is None:
                self._first = mine
                if self.asked or (self.asked is None and self.big):
                    mine.compile_lanes(wait=bool(self.asked))
        return next((solver for solver in (mine, self._first) if solver.lanes), None)


def _group(robot: Robot, q0, v0, rows: range, options: dict, code: _LaneCode) -> dict:
    """The runs of ``rows`` (up to ``WIDTH``), each row's trajectory or the error it raised: side by side in one
    lane loop where all four loop natively and lane code is there, else one by one. Each run is set up once and
    each of its steps taken once, so it warns as ``simulate`` would. Rows after a failed one are left out: the
    batch raises the lowest failing row's error."""
    runs: list = []
    ended: dict = {}
    for i in rows:
        try:
            runs.append(prepare(robot, q0[i], v0[i], lanes=None, **options))
        except Exception as error:  # noqa: BLE001 — kept for the caller
            ended[i] = error
            break
    resume: list[int | None] = [0] * len(runs)  # where each run goes on alone; None: every step taken
    lane_solver = code.solver(native_loop.compiled_solver(runs[0].forward)) if len(runs) == WIDTH and all(
        r.native and native_loop.source_of(r.torque) != native_loop.PYTHON for r in runs) else None
    if lane_solver is not None:
        try:
            native_loop.run_group(runs, lane_solver)
            resume = [None] * len(runs)
        except native_loop.GroupStopped as stop:  # the runs before it took the step; they go on alone
            ended[rows[stop.run]] = stop.error
            del runs[stop.run:]
            resume = [stop.step + 1] * len(runs)
    for i, run, start in zip(rows, runs, resume):
        try:
            if start is not None:
                run.step_all(start=start)
            ended[i] = run.finish()
        except Exception as error:  # noqa: BLE001 — kept for the caller
            ended[i] = error
            break
    return ended


def _allocate(run: Trajectory, count: int) -> dict:
    """``Trajectories``' fields for ``count`` runs like ``run``: its robot, method, times and gravity, and an empty
    array (count, …) for each of its per-sample arrays (None where it has none). Each run is copied in as it ends,
    so a batch holds its stacked arrays and one run per thread, not every run twice."""
    arrays = {name: None if getattr(run, name) is None else np.empty((count, *getattr(run, name).shape))
              for name in _STACKED}
    return {"robot": run.robot, "method": run.method, "t": run.t, "gravity": run.gravity, **arrays}
