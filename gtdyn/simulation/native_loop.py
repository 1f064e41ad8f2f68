"""Time loops in native code (issue 24, item 2): ``loop_ir``'s rollout around the compiled forward solver's own entry,
on a tree (its base fixed or floating; with rigid contacts or external wrenches), with torques held over each step (a
vector or one row per step), from a ``gtdyn.PDController`` (evaluated in the loop at every stage, as the Python
stepper asks a controller) or from any other Python controller (called back at every stage), sample by sample into
the run's arrays, bit for bit as the Python loop. A loop is generated per (joints, method, torque source), compiled
once (kept in the compile cache). An evaluation whose certificate does not pass (status ≠ 1), a PD torque that is not
finite or a Python controller that raises stops the loop before that step: the caller takes the step through the
Python stepper, which asks the reference path and the controller's checks (answers, warns or raises as always), and
resumes.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np

from gtdyn.compiled import cache, native, pose_step
from gtdyn.compiled.parallel import address
from gtdyn.compiled.small_batches import evaluation_operations
from gtdyn.compiled.solver import CompiledSolver
from gtdyn.simulation.controllers import PDController
from gtdyn.simulation.environment import EnvironmentForward
from gtdyn.simulation.loop_ir import loop_ir
from gtdyn.simulation.loop_plan import FIELDS, METHODS, PYTHON, SAMPLE_ROWS

_lock = threading.Lock()
_loops: dict = {}
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_double, ctypes.c_int64)


def _rollout(n: int, method: str, source, width: int = 1, floating: bool = False, forces: int = 0,
             release: bool = True):
    """The compiled loop for n joints (on a ``floating`` base or not; with ``forces`` contact force components or
    none), ``method`` and a torque ``source`` (``source_of``), over ``width`` runs (kept for the process's life,
    with its code; its object code is kept in the compile cache); called with the GIL released (``release``) or
    held."""
    key = (n, method, source, width, floating, forces)
    with _lock:
        if key not in _loops:
            code = cache.compiled_ir(loop_ir(n, method, source, width, floating, forces), native.target_id(),
                                     native.compile_object)
            loaded = native.Loaded(code, "", entries=(),
                                   extra=["rollout"])
            _loops[key] = (loaded, *(kind(ctypes.c_int64, ctypes.c_void_p)(loaded.extra["rollout"])
                                     for kind in (ctypes.CFUNCTYPE, ctypes.PYFUNCTYPE)))
        return _loops[key][1 if release else 2]


def _bits(x: float) -> int:
    """A double's bits as the plan's int64 word."""
    return _WORD.unpack(_DOUBLE.pack(x))[0]


_DOUBLE, _WORD = struct.Struct("=d"), struct.Struct("=q")


class PythonController:
    """A Python controller in the native loop (``loop_plan.PYTHON``): the loop writes a stage's (q, q̇) into
    ``buffers`` and calls ``function(t, k)``, which asks the run's ``torque`` (``ControllerTorques``, which hands
    the controller copies; the solver checks that the answer is finite) and writes its answer back: 1. What it
    raises is kept (``failed``) and the answer is 0, which stops the loop before the step; the Python stepper
    then takes the step, and raises there as it always does."""

    def __init__(self, torque, n: int):
        self.torque, self.failed = torque.for_native_loop, None
        self.buffers = np.zeros((3, n))
        self.q, self.v, self.tau = self.buffers  # views, made once
        self.function = _CALLBACK(self._call)

    def _call(self, t: float, k: int) -> int:
        try:
            self.tau[:] = self.torque(t, self.q, self.v)
        except BaseException as error:  # noqa: BLE001 — raised again by the Python stepper's step, or by _loop
            self.failed = error
            return 0
        return 1

    def words(self) -> list[int]:
        """The plan's callback, cq, cv and ctau."""
        return [ctypes.cast(self.function, ctypes.c_void_p).value, *(row.ctypes.data for row in self.buffers)]


def plan_of(solver, dt: float, torque, samples, state: np.ndarray, stepper=None) -> tuple[np.ndarray, object]:
    """The plan words of a run (``FIELDS``; first and end are set per chunk). ``torque``: ``HeldTorques`` or a
    controller's torques; ``stepper``: on a floating base, the run's ``FloatingStepper`` (its pose and its pose
    step's scratch). Returns the plan and what it points to besides the run's arrays and the stepper: the torque
    rows, or a ``PythonController`` (keep both alive while the loop runs; a ``PDController``'s arrays live with
    it)."""
    n = solver.robot.num_dofs
    law, source = getattr(torque, "law", None), source_of(torque)
    rows = np.ascontiguousarray(torque.rows, dtype=float) if law is None else np.zeros((1, n))
    controller, python = [0] * 10, PythonController(torque, n) if source == PYTHON else None
    if isinstance(source, tuple):
        stride = [0 if len(r) == 1 else n for r in (law.q_rows, law.v_rows, law.ff_rows)]
        controller = [address(law.kp), address(law.kd), address(law.q_rows), stride[0], address(law.v_rows),
                      stride[1], address(law.ff_rows), stride[2], _bits(1.0 if law.dt is None else law.dt),
                      law.last_row]
    base = [0] * 7
    forces = [0 if samples.contact_forces is None else address(samples.contact_forces)]
    if samples.base_pose is not None:
        base = [address(stepper.start), pose_step.address("moved"), pose_step.address("rate"),
                address(stepper.steps.scratch),
                *(address(array) for array in (samples.base_pose, samples.base_twist, samples.base_accel))]
    return np.array([solver._pointer, solver._native.address[solver._entry], solver._status, solver._out,
                     0, 0, _bits(dt), address(samples.q), address(samples.v), address(samples.qdd),
                     address(samples.tau), address(rows), len(rows), address(state), address(samples.t),
                     *controller, *(python.words() if python else [0] * 4), *base, *forces, 0, 0, len(samples.t) - 1],
                    dtype=np.int64), \
        python or rows


def run(plan: np.ndarray, n: int, method: str, source, first: int, end: int, width: int = 1,
        floating: bool = False, forces: int = 0, release: bool = True) -> int:
    """Steps ``first`` … ``end``−1 in native code, from the plan's state (x then y, written back; and a floating
    base's pose); returns ``end``, or the step whose evaluation did not pass (the state is its start). The run's
    last step (``end`` = steps + 1) records the final sample and takes no step. ``release``: the GIL, while the
    steps run (other threads run Python meanwhile; ``releases``)."""
    plan[_FIRST], plan[_END] = first, end
    return int(_rollout(n, method, source, width, floating, forces, release)(address(plan)))


# A native call releases the GIL when it runs long enough to pay for handing it over and back: about this many
# operations (tens of microseconds of steps). Shorter ones keep it, so the threads of a batch of short runs take
# turns rather than hand the GIL over at every row (benchmarks/results/design_measurements.md).
RELEASE_ABOVE = 100_000
LANE_GROUP_COST = 2  # a lane group's evaluation (four runs) in scalar evaluations, about (benchmarks.checked_call)


def releases(solver, method: str, steps: int, width: int = 1) -> bool:
    """Whether ``steps`` steps of ``width`` runs by ``method`` through ``solver`` run long enough to release the
    GIL (``RELEASE_ABOVE``; ``small_batches.evaluation_operations`` each evaluation)."""
    group = 1 if width == 1 else LANE_GROUP_COST
    return steps * (4 if method == "rk4" else 1) * group * evaluation_operations(solver) > RELEASE_ABOVE


CHUNK = 4096  # steps between progress reports
_FIRST, _END = FIELDS.index("first"), FIELDS.index("end")


def source_of(torque) -> tuple[bool, ...] | str | None:
    """A run's torque source for ``loop_ir``: None for held torques, the passive joints of the ``PDController``
    behind a controller ``torque``, or ``PYTHON`` for any other controller."""
    law = getattr(torque, "law", None)
    if law is None:
        return None
    return tuple(bool(p) for p in law.passive) if isinstance(law, PDController) else PYTHON


def compiled_solver(forward):
    """The compiled solver a run's ``forward`` calls: itself, or the one behind its environment."""
    return forward.solver if type(forward) is EnvironmentForward else forward


def write_wrenches(forward, ws: np.ndarray, width: int = 1, lane: int = 0) -> None:
    """The run's external wrenches (held over the run) into the inputs of the workspace ``ws`` the loop's solver
    reads (lane ``lane`` of ``width``), once: the solver does not write its inputs, and the Python path's calls
    write the same values there."""
    solver = compiled_solver(forward)
    if solver.wrench_frames:
        inputs = solver._wrench_inputs
        ws[inputs.start * width + lane:inputs.stop * width:width] = forward.wrenches.values


def applies(robot, method: str, forward) -> bool:
    """Whether a run can loop natively: a tree (its base fixed or floating), an explicit method of ``METHODS`` and
    the compiled solver of this thread, plain or in its environment (rigid contacts, external wrenches held over the
    run). Any torque does: held torques, or a controller (a ``PDController`` evaluated in the loop, any other called
    back: ``source_of``)."""
    solver = compiled_solver(forward)
    return (not robot.loop_joints and method in METHODS and type(solver) is CompiledSolver
            and (not solver.wrench_frames or type(forward) is EnvironmentForward)
            and solver._owner == threading.get_ident())


def run_loop(stepper, samples, report, forward, method: str, dt: float, torque, start: int = 0) -> None:
    """``simulate``'s time loop in native code, chunk by chunk, from step ``start`` (the stepper's state is that
    step's start); a step whose evaluation does not pass goes through ``stepper`` (the Python path: the reference
    path answers, warns or raises), and the loop resumes after it. ``forward``: the run's (``applies``)."""
    state = np.concatenate((stepper.x, stepper.y), dtype=float)  # a copy: the loop writes it
    solver = compiled_solver(forward)
    plan, held = plan_of(solver, dt, torque, samples, state, stepper)
    write_wrenches(forward, solver._ws)
    follow(plan, solver)
    _loop(plan, [(stepper, samples, state)], method, source_of(torque), report, start,
          held if isinstance(held, PythonController) else None, solver)
    del held  # alive until here: the plan points to it


class GroupStopped(Exception):
    """A run of a lane group raised ``error`` in its Python step ``step``: the group's runs before it (``run``,
    its index) have taken that step, the others have not."""

    def __init__(self, run: int, step: int, error: BaseException):
        super().__init__(f"run {run} of a lane group failed at step {step}")
        self.run, self.step, self.error = run, step, error


def run_group(runs: list, lane_solver, report=None) -> None:
    """Runs side by side in one lane loop (``simulate_batch``): ``gtdyn.simulation.simulate.Run``s, as many as a
    lane group's states (``gtdyn.compiled.lanes.WIDTH``), of the same solver, method, Δt, steps and torque source,
    each looping natively, through the lane code of ``lane_solver`` (any thread's solver of the same cache entry:
    the code keeps its state in the workspace the group brings). A step that does not pass in one run goes
    through every run's Python stepper (the others' certified steps give the same bits there), and the loop
    resumes after it; a run that raises there stops the group (``GroupStopped``). A run whose lane does not pass
    asks the solver's twin first, as a call does (``follow``)."""
    first = runs[0]
    solver = compiled_solver(first.forward)
    states = [np.concatenate([r.stepper.x, r.stepper.y]).astype(float) for r in runs]
    plan, rows = plan_of(solver, first.dt, first.torque, first.samples, states[0], first.stepper)
    per_run = {"state": states} | {word: [getattr(r.samples, field) for r in runs] for word, field in
                                   SAMPLE_ROWS.items() if getattr(first.samples, field) is not None}
    if first.samples.base_pose is not None:  # each run's pose (PER_FLOATING_RUN)
        per_run["pose"] = [r.stepper.start for r in runs]
    ws, addresses = in_lanes(plan, solver, lane_solver, [r.forward for r in runs], per_run)
    write_wrenches(first.forward, solver._ws)  # the runs share them: the twin's copy comes from here (``follow``)
    follow(plan, solver)
    _loop(plan, [(r.stepper, r.samples, state) for r, state in zip(runs, states)], first.method,
          source_of(first.torque), report, solver=solver)
    del rows, ws, addresses  # alive until here: the plan points to them


def in_lanes(plan: np.ndarray, solver, lane_solver, forwards: list, per_run: dict) -> tuple[np.ndarray, dict]:
    """A run's plan made a lane loop's over ``len(forwards)`` runs (``loop_ir``'s width): the lanes' workspace,
    interleaved, each run's external wrenches written in (``forwards``: the runs'), ``lane_solver``'s lane code,
    and each per-run word (``per_run``: word → each run's array) pointing to an array of the runs' addresses.
    Returns the workspace and those arrays by word: alive while the plan runs, a run moved by writing its new
    address there."""
    width = len(forwards)
    ws = np.zeros(solver._size * width)
    for w, forward in enumerate(forwards):
        write_wrenches(forward, ws, width, w)
    plan[FIELDS.index("ws")] = address(ws)
    plan[FIELDS.index("run")] = lane_solver._batches.lanes.address[lane_solver._entry]
    addresses = {word: np.array([address(a) for a in arrays], dtype=np.int64) for word, arrays in per_run.items()}
    for word, words in addresses.items():
        plan[FIELDS.index(word)] = address(words)
    return ws, addresses


def follow(plan: np.ndarray, solver) -> None:
    """The solver's twin (``gtdyn.compiled.rescue``), once compiled, into the plan of a run's loop, which then asks
    it where the solver's code does not pass, as a call does (so a run at a state the solver's pivots cannot take,
    Solo-12 standing on straight legs, loops on rather than stopping at every step); its inputs besides the state,
    the external wrenches, as the solver holds them."""
    twin = None if solver._rescue is None else solver._rescue.compiled
    if twin is not None and plan[FIELDS.index("trun")] == 0:
        twin._ws[solver._wrench_inputs] = solver._ws[solver._wrench_inputs]
        plan[FIELDS.index("tws")] = twin._pointer
        plan[FIELDS.index("trun")] = twin._native.address[solver._entry]


def _loop(plan: np.ndarray, runs: list, method: str, source, report, start: int = 0,
          python: PythonController | None = None, solver=None) -> None:
    """Chunks of the native loop over ``runs`` ((stepper, samples, state) each, the state x then y, which the plan
    points to) from step ``start`` to the final sample, each step the loop stops at taken by the runs' Python
    steppers (``python``: the run's Python controller, whose interruption, not an error, is raised at once).
    ``solver``: one run's, whose twin the loop asks once it is compiled (``follow``)."""
    stepper, samples, state = runs[0]
    steps, n, floating = len(samples.t) - 1, len(stepper.x), samples.base_pose is not None
    forces = 0 if samples.contact_forces is None else samples.contact_forces.shape[1]
    k = start
    while k <= steps:  # the final sample too: the step after it is never taken
        end = min(k + CHUNK, steps + 1)
        k = run(plan, samples.q.shape[1], method, source, k, end, len(runs), floating, forces)
        if python is not None and python.failed is not None:
            failed, python.failed = python.failed, None
            if not isinstance(failed, Exception):  # KeyboardInterrupt, SystemExit: not for the step to repeat
                raise failed
        if k < end:  # the Python step (or the final sample alone), from the state the loop stopped at
            for j, (stepper, samples, state) in enumerate(runs):
                stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
                try:
                    stepper.record(k, samples.t[k], samples)
                    if k < steps:
                        stepper.advance(k, samples.t[k])
                except Exception as error:
                    if len(runs) == 1:
                        raise
                    raise GroupStopped(j, k, error) from error
                state[:n], state[n:] = stepper.x, stepper.y  # in place: the plan points to it
            if solver is not None:
                follow(plan, solver)
            k += 1
        if report is not None:
            report.at(min(k, steps))
    for stepper, _, state in runs:  # the final state
        stepper.x, stepper.y = state[:n].copy(), state[n:].copy()
