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
from gtdyn.simulation.planned_rows import PlannedRows, plannable
from gtdyn.simulation.simulate import METHODS, PROGRESS_AFTER_S, Run, prepare, warn_past_limits, within_limits
from gtdyn.simulation.steppers import Samples
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
    row (the lowest failing row, whatever the threads); the warnings of each run are ``simulate``'s, once each
    (joint limits left: once every run has ended, in row order). Each thread sets its first run up in full and
    the others from it, their starts alone checked again, their samples written straight into the stacked arrays.
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
    stacked = _Stacked(len(q0))
    errors: dict[int, BaseException] = {}
    done = [0]
    code = _LaneCode(lanes, len(q0) * steps)
    size = WIDTH if len(q0) >= WIDTH and (lanes or (lanes is None and (threads == 1 or code.big or _lanes_ready(
        robot, q0[0], v0[0], options)))) else 1
    claim, lock = iter(range(0, len(q0), size)), threading.Lock()

    def work(report: Progress | None) -> None:
        """Take the next rows until none is left or a run has failed (rows are claimed in order, so every row
        below a failed one has been claimed and finishes)."""
        starts = _Starts(robot, options, False if size == 1 else None, stacked)  # this thread's solver's runs
        while True:
            with lock:
                first = None if errors else next(claim, None)
            if first is None:
                return
            rows = range(first, min(first + size, len(q0)))
            try:
                ended = {first: _alone(starts, first, q0, v0)} if size == 1 else \
                    _group(starts, q0, v0, rows, code)
            except Exception as error:  # noqa: BLE001 — never lost in a helper thread, leaving its rows unset
                ended = {first: error}
            for i, run in ended.items():
                if isinstance(run, BaseException):  # every run's error is kept; the lowest row's is raised
                    with lock:
                        errors[i] = run
                else:
                    stacked.keep(i, run)
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
    stacked.warn_past_limits(errors)
    if errors:
        first = min(errors)
        errors[first].add_note(f"gtdyn.simulate_batch: the run from row {first} of q0 and v0")
        raise errors[first]
    return stacked.trajectories()


class _Starts:
    """The runs of one thread of a batch: its first set up in full (``prepare``), the others from it
    (``Run.again``), their starts alone checked again and their samples the rows of the batch's arrays
    (``stacked``). ``lanes``: their solver's (``forward_solver``)."""

    def __init__(self, robot: Robot, options: dict, lanes: bool | None, stacked: _Stacked):
        self.robot, self.options, self.lanes, self.stacked = robot, options, lanes, stacked
        self.first: Run | None = None  # the thread's first run, set up in full
        self._planned: dict = {}  # PlannedRows by lane solver (None: row by row)

    def run(self, i: int, q0, v0) -> Run:
        """Row i's run."""
        if self.first is None:
            self.first = prepare(self.robot, q0, v0, lanes=self.lanes, **self.options)
            self.stacked.allocate(self.first)
            return self.first
        return self.first.again(q0, v0, self.stacked.row(i))

    def ran(self, rows, Q0, V0, lane_solver=None) -> bool:
        """``rows`` (one, or a lane group's through ``lane_solver``'s lane code) through one plan of the thread's
        (``PlannedRows``) once its first run is set up and loops natively: whether they ran to their end, their
        samples in place."""
        if self.first is None or not plannable(self.first):
            return False
        planned = self._planned.get(lane_solver)
        if planned is None:
            fresh = self.first.again(Q0[rows[0]], V0[rows[0]])  # set up, not stepped: the plan's run
            planned = self._planned[lane_solver] = PlannedRows(fresh, self.stacked.arrays, lane_solver)
        return planned.ran(rows, Q0, V0)


def _alone(starts: _Starts, i: int, Q0, V0) -> Run | BaseException | None:
    """Row i's run by itself, as ``simulate`` (without its progress report) takes it; None where it ran through
    the thread's plan to its end."""
    q0, v0 = Q0[i], V0[i]
    try:
        if starts.ran([i], Q0, V0):
            return None
        run = starts.run(i, q0, v0)
        run.step_all()
        return run
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


def _planned(starts: _Starts, q0, v0, rows: range, code: _LaneCode) -> int:
    """How many of ``rows`` (a lane group's) ran to their end through one of the thread's plans (``_Starts.ran``):
    all four in lanes where the lane code is there, else one by one up to the first that did not. A start the
    checks refuse leaves it and the rows after it to the full way, which names it."""
    first = starts.first
    if first is None or not plannable(first):
        return 0
    lane_solver = code.solver(native_loop.compiled_solver(first.forward))
    done = 0
    try:
        if lane_solver is not None:
            return len(rows) if starts.ran(rows, q0, v0, lane_solver) else 0
        for i in rows:
            if not starts.ran([i], q0, v0):
                break
            done += 1
    except Exception:  # noqa: BLE001 — the full way raises it again, for its row
        pass
    return done


def _group(starts: _Starts, q0, v0, rows: range, code: _LaneCode) -> dict:
    """The runs of ``rows`` (up to ``WIDTH``), each row's ended run or the error it raised: side by side in one
    lane loop where all four loop natively and lane code is there, else one by one. Each run is set up once and
    each of its steps taken once, so it warns as ``simulate`` would. Rows after a failed one are left out: the
    batch raises the lowest failing row's error. Rows run through one of the thread's plans first (``_planned``),
    as far as they end there."""
    done = _planned(starts, q0, v0, rows, code) if len(rows) == WIDTH else 0
    ended: dict = dict.fromkeys(rows[:done])  # None: ended, the samples in place
    rows = rows[done:]
    if not rows:
        return ended
    runs: list = []
    for i in rows:
        try:
            runs.append(starts.run(i, q0[i], v0[i]))
        except Exception as error:  # noqa: BLE001 — kept for the caller
            ended[i] = error
            break
    resume: list[int | None] = [0] * len(runs)  # where each run goes on alone; None: every step taken
    lane_solver = code.solver(native_loop.compiled_solver(runs[0].forward)) if len(runs) == WIDTH and all(
        map(plannable, runs)) else None
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
            ended[i] = run
        except Exception as error:  # noqa: BLE001 — kept for the caller
            ended[i] = error
            break
    return ended


class _Stacked:
    """The batch's arrays (count, …), one per per-sample array of its runs, allocated when the first run is set up
    (``allocate``, in its shapes); later runs write their samples straight into their rows (``row``), a run set
    up in full (each thread's first) is copied in when it ends (``keep``). So a batch holds its stacked arrays and
    one run per thread, not every run twice."""

    def __init__(self, count: int):
        self.count, self.first, self.arrays = count, None, {}
        self.kept: set[int] = set()  # the rows of the runs that ended
        self._lock = threading.Lock()

    def allocate(self, run: Run) -> None:
        with self._lock:
            if self.first is None:
                samples = run.samples
                self.arrays = {name: None if getattr(samples, name) is None else
                               np.empty((self.count, *getattr(samples, name).shape)) for name in _STACKED}
                self.first = run

    def row(self, i: int) -> Samples:
        """Run i's samples: views of row i (the times are the first run's, every run's)."""
        return Samples(self.first.samples.t, **{name: None if array is None else array[i]
                                                for name, array in self.arrays.items()})

    def keep(self, i: int, run: Run | None) -> None:
        """Run i's samples in row i (outside the lock: row i is this run's alone), unless they are there (None: a
        row run through a plan)."""
        self.kept.add(i)
        if run is not None and run.samples.q.base is not self.arrays["q"]:
            for name, array in self.arrays.items():
                if array is not None:
                    array[i] = getattr(run.samples, name)

    def warn_past_limits(self, errors: dict) -> None:
        """Each ended run's JointLimitWarning, ``simulate``'s, in row order, its row's error if warnings are
        errors: the runs that stay within their limits found in one pass over the stacked positions."""
        rows, q = sorted(self.kept), self.arrays.get("q")
        if not rows:
            return
        left = np.flatnonzero(~within_limits(self.first.robot, q, axis=(1, 2))) if len(rows) == self.count else \
            [i for i in rows if not within_limits(self.first.robot, q[i])]
        for i in left:
            try:
                warn_past_limits(self.first.robot, self.first.samples.t, q[i])
            except Exception as error:  # noqa: BLE001 — a warning filtered into an error: the row's
                errors[int(i)] = error

    def trajectories(self) -> Trajectories:
        first = self.first
        return Trajectories(first.robot, first.method, first.samples.t, gravity=first.gravity, **self.arrays)
