"""Calling compiled kinematics: what ``gtdyn.compile_frames`` and ``gtdyn.compile_center_of_mass`` share.

Each object holds up to two modules of machine code, "at_q" (inputs q and a floating base's pose) and "motion"
(q, q̇, the pose and the base's twist), each compiled when first needed and kept with a workspace per module for
the thread that made the object. A call writes plain float64 arrays as they are and checks anything else first;
the generated code checks the numbers and sets a status, and where it is not 1 the boundary's checks raise the
reference functions' error. Batches stack the states' inputs, run them natively, and name a refused row.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field

import numpy as np

from gtdyn.arguments import finite_vector, joint_vector, pose_argument, state_batch, whole_number
from gtdyn.arguments.base import base_rows, base_state, refuse_on_fixed_base
from gtdyn.compiled import base_inputs, entry, native, parallel
from gtdyn.compiled.small_batches import few_states
from gtdyn.model.robot import Robot

_ARRAY, _FLOAT = np.ndarray, np.dtype(float)
IDENTITY = base_inputs.DEFAULTS["base_pose"]
POSE, TWIST = 16, 6  # a floating base's inputs after q (and q̇): its pose (row-major 4×4), then its twist


@dataclass
class Module:
    """A module's machine code (names from ``prefix``), ``loaded`` here. Its workspace: the inputs from 0, the status
    at ``out``, the parts of the answer (``fast`` writes the first, ``main`` both), the bodies' slots; ``size``."""

    object: bytes
    prefix: str
    out: int
    parts: list[int]
    size: int
    loaded: native.Loaded = field(init=False, repr=False)

    def __post_init__(self):
        self.loaded = native.Loaded(self.object, self.prefix)


@dataclass
class Quick:
    """A quantity's native entry (``gtdyn.compiled.entry.Entry``) and each part's shape (the entry writes arrays of
    those shapes as they are)."""

    entry: object
    shapes: list


class _Calls(dict):
    """A kinematic object's call per quantity, ``call(obj, q, v, base_pose, base_twist)``: ``_quick_call``'s once
    the object's thread has bound the entry, else the first call's, which binds it (``CompiledKinematics._call``)."""

    def __missing__(self, quantity: str):
        return functools.partial(_first_call, quantity)


def _first_call(quantity: str, kinematics, q, v, base_pose, base_twist):
    return kinematics._call(quantity, q, v, base_pose, base_twist)


def _quick_call(quick: Quick, quantity: str):
    """The call through the native entry, as one Python function: fresh arrays of the answer's shapes, filled by
    the entry, or the checked Python path (``_called``) where the entry does not take the call. A function of its
    own because a small quantity's call is mostly Python (for a frame's placement and Jacobian: the method,
    ``_call``'s look-ups and two ``np.empty``; benchmarks/results/design_measurements.md). It holds no reference
    to the object (no cycle): the object passes itself."""
    call, empty = quick.entry.call, np.empty
    if len(quick.shapes) == 1:
        (shape,) = quick.shapes

        def one(kinematics, q, v, base_pose, base_twist):
            answer = empty(shape)
            if call(q, v, base_pose, base_twist, answer):
                return answer
            return kinematics._called(quantity, q, v, base_pose, base_twist)
        return one
    first_shape, second_shape = quick.shapes

    def two(kinematics, q, v, base_pose, base_twist):
        first, second = empty(first_shape), empty(second_shape)
        if call(q, v, base_pose, base_twist, first, second):
            return first, second
        return kinematics._called(quantity, q, v, base_pose, base_twist)
    return two


def plain_array(x, shape: tuple) -> bool:
    """Whether ``x`` is a float64 array of ``shape``: written to the workspace as it is."""
    return type(x) is _ARRAY and x.dtype is _FLOAT and x.shape == shape


class CompiledKinematics:
    """The calls of a compiled kinematic object. A subclass names its ``QUANTITIES`` (each: its module, the entry
    that computes it, its part of the module's answer, None for all parts), how its q is checked (``check_q``:
    ``joint_vector``, or ``joint_positions`` where angles out of range are refused), the shape of each part of a
    module's answer for one state (``_shapes``) and how a module is compiled (``_compile``)."""

    QUANTITIES: dict[str, tuple[str, str, int | None]] = {}

    def __init__(self, robot: Robot, modules: dict[str, Module] | None = None):
        self.robot, self.nv = robot, robot.nv
        self._modules: dict[str, Module] = dict(modules or {})
        self._workspaces: dict[str, tuple] = {}
        self._quick: dict[str, Quick] = {}  # per quantity, on the owner's workspace
        self._calls = _Calls()  # per quantity: the call of the subclass's methods (``_quick_call`` once bound)
        self._lock = threading.Lock()
        self._owner = threading.get_ident()

    def check_q(self, robot: Robot, name: str, q) -> np.ndarray:
        return joint_vector(robot, name, q)

    def _shapes(self, name: str) -> list[tuple[int, ...]]:
        raise NotImplementedError

    def _compile(self, name: str) -> Module:
        raise NotImplementedError

    def _answer(self, name: str, part, values: np.ndarray, parts: int = 2):
        """Part ``part`` (if None, the first ``parts``: a quantity of two parts is the first two) of a module's
        answer, the last axis of ``values``, in its shapes."""
        answer, start = [], 0
        for size, shape in zip(self._modules[name].parts[:parts if part is None else part + 1], self._shapes(name)):
            answer.append(values[..., start:start + size].reshape(values.shape[:-1] + shape))
            start += size
        return tuple(answer) if part is None else answer[part]

    def _call(self, quantity: str, q, v, base_pose, base_twist):
        """A quantity's call before its native entry is bound (binding it, in the object's thread), or from another
        thread before the object's own has called it."""
        call = self._bind(quantity)
        if call is None:
            return self._called(quantity, q, v, base_pose, base_twist)
        return call(self, q, v, base_pose, base_twist)

    def _bind(self, quantity: str):
        """The quantity's call through its one native entry on this object's workspace (``gtdyn.compiled.entry``):
        plain float64 arrays in, each part of the answer written straight into an array of its own; kept in
        ``_calls``. None in other threads, whose calls take the Python path on a workspace of their own."""
        if threading.get_ident() != self._owner:
            return None
        name, function, part = self.QUANTITIES[quantity]
        module, ws = self._workspace(name)[:2]
        n, floating, motion = self.robot.num_dofs, self.robot.floating_base, name == "motion"
        first = (2 if motion else 1) * n
        parts = range(len(module.parts[:2])) if part is None else [part]
        shapes = [self._shapes(name)[k] for k in parts]
        arguments = [entry.Argument(entry.IN, 0, (n,)),
                     entry.Argument(entry.IN, n, (n,)) if motion else entry.Argument(entry.NONE),
                     entry.Argument(entry.DEFAULT, first, (4, 4), IDENTITY) if floating else entry.Argument(entry.NONE),
                     entry.Argument(entry.DEFAULT, first + POSE, (TWIST,), base_inputs.DEFAULTS["base_twist"])
                     if floating and motion else entry.Argument(entry.NONE)]
        for k, shape in zip(parts, shapes):
            arguments.append(entry.Argument(entry.OUT, module.out + 1 + sum(module.parts[:k]), shape, any_shape=True))
        quick = self._quick[quantity] = Quick(
            entry.bind(ws, module.loaded.address[function], module.out, arguments, owner=self._owner), shapes)
        call = self._calls[quantity] = _quick_call(quick, quantity)
        return call

    def _called(self, quantity: str, q, v, base_pose, base_twist):
        """A call through Python: any input the native entry does not take as it is (lists, a ``gtsam.Pose3``,
        another thread's call), checked here, and the boundary's error where the generated code refuses it."""
        name, function, part = self.QUANTITIES[quantity]
        motion, n = name == "motion", self.robot.num_dofs
        module, ws, pointer, in_q, in_v, in_pose, in_twist, answer = self._workspace(name)
        given = (q, v, base_pose, base_twist)
        if not (plain_array(q, (n,)) and (not motion or plain_array(v, (n,)))
                and (base_pose is None or in_pose is not None and plain_array(base_pose, (4, 4)))
                and (base_twist is None or in_twist is not None and plain_array(base_twist, (6,)))):
            q, v, base = self._checked(*given, motion)  # anything but plain float arrays: checked first
            base_pose, base_twist = (None, None) if base is None else (base.pose.matrix(), base.twist)
        in_q[...] = q  # the generated code checks the numbers
        if motion:
            in_v[...] = v
        if in_pose is not None:
            in_pose[...] = IDENTITY if base_pose is None else base_pose
        if in_twist is not None:
            in_twist[...] = 0.0 if base_twist is None else base_twist
        module.loaded.entry[function](pointer)
        if ws[module.out] != 1.0:  # a non-finite input, an angle out of range, a pose that is no rigid transform
            self._checked(*given, motion)  # raises the reference's error
            raise AssertionError(f"gtdyn: {type(self).__name__}'s code refused inputs the boundary accepts")
        return tuple(x.copy() for x in answer[:2]) if part is None else answer[part].copy()

    def _checked(self, q, v, base_pose, base_twist, motion: bool):
        """The checks of ``gtdyn.kinematics.frames.checked_state``, in its order: q, q̇, the base."""
        q = self.check_q(self.robot, "q", q)
        v = (np.zeros(self.robot.num_dofs) if v is None else joint_vector(self.robot, "v", v)) if motion else None
        return q, v, base_state(self.robot, base_pose, base_twist)

    def _batch(self, quantity: str, Q, V, base_pose, base_twist, threads):
        if base_pose is None and base_twist is None and (small := self._by_calls(quantity, Q, V, threads)) is not None:
            return small
        name, function, part = self.QUANTITIES[quantity]
        module, motion, n = self._module(name), name == "motion", self.robot.num_dofs
        threads = whole_number("threads", threads, 1)
        arrays = state_batch(n, Q=Q, V=V) if motion else state_batch(n, Q=Q)
        count = len(arrays[0])
        if self.robot.floating_base:
            arrays.append(base_rows("base_pose", base_pose, count, (4, 4), IDENTITY.ravel()))
            if motion:
                arrays.append(base_rows("base_twist", base_twist, count, (6,), np.zeros(6)))
        else:
            refuse_on_fixed_base(self.robot, base_pose=base_pose, base_twist=base_twist)
        inputs = np.ascontiguousarray(np.hstack(arrays))
        n_out = 1 + sum(module.parts[:1 if function == "fast" else 2])  # the status, the parts
        results = parallel.run_states(module.loaded.batch[function], module.size, inputs, n_out, module.out, threads)
        for k in np.flatnonzero(results[:, 0] != 1.0):
            self._row_error(k, inputs[k], motion)
        return self._answer(name, part, results[:, 1:])

    def _by_calls(self, quantity: str, Q, V, threads):
        """A batch of a few plain float64 states (``small_batches.few_states``) through the quantity's native entry,
        a state at a time, each part written into its row (a few calls cost less than the batch's own Python);
        None where the batch must run: anything else, another thread, or a state the entry does not take (the
        batch then names it)."""
        motion = self.QUANTITIES[quantity][0] == "motion"
        if not (few_states(Q, V) if motion else few_states(Q)):
            return None
        if quantity not in self._quick and self._bind(quantity) is None:  # bound once, by the object's thread
            return None
        whole_number("threads", threads, 1)
        quick = self._quick[quantity]
        call, outs = quick.entry.call, [np.empty((len(Q), *shape)) for shape in quick.shapes]
        for i in range(len(Q)):
            rows = (out[i] if out.ndim > 1 else out[i:i + 1] for out in outs)  # a scalar's row: one double
            if not call(Q[i], V[i] if motion else None, None, None, *rows):
                return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _row_error(self, k: int, row: np.ndarray, motion: bool) -> None:
        """The boundary's error for row k of a batch, naming it."""
        n, first = self.robot.num_dofs, (2 if motion else 1) * self.robot.num_dofs
        self.check_q(self.robot, f"Q[{k}]", row[:n])
        if motion:
            joint_vector(self.robot, f"V[{k}]", row[n:first])
        if self.robot.floating_base:
            pose_argument(f"base_pose[{k}]", row[first:first + POSE].reshape(4, 4))
            if motion:
                finite_vector(f"base_twist[{k}]", row[first + POSE:], TWIST)

    def _workspace(self, name: str) -> tuple:
        """(module, ws, its address, views of q, q̇, the base pose as 4×4, the base twist — None where the module
        has none —, the parts of the answer): kept per module by the object's thread, fresh in other threads."""
        views = self._workspaces.get(name) if threading.get_ident() == self._owner else None
        if views is None:
            module, n, floating, motion = self._module(name), self.robot.num_dofs, self.robot.floating_base, \
                name == "motion"
            ws, first = np.zeros(module.size), (2 if motion else 1) * n
            views = (module, ws, ws.ctypes.data, ws[:n], ws[n:2 * n] if motion else None,
                     ws[first:first + POSE].reshape(4, 4) if floating else None,
                     ws[first + POSE:first + POSE + TWIST] if floating and motion else None,
                     self._answer(name, None, ws[module.out + 1:module.out + 1 + sum(module.parts)],
                                  len(module.parts)))
            if threading.get_ident() == self._owner:
                self._workspaces[name] = views
        return views

    def _module(self, name: str) -> Module:
        with self._lock:  # compiled once, whichever thread asks first
            if name not in self._modules:
                self._modules[name] = self._compile(name)
            return self._modules[name]

    def _modules_to_send(self) -> dict:
        """The modules compiled so far, as plain tuples (pickling)."""
        with self._lock:
            return {name: (m.object, m.prefix, m.out, m.parts, m.size) for name, m in self._modules.items()}


def arrived_modules(modules: dict, target: str) -> dict:
    """Pickled modules (``_modules_to_send``), here: their machine code if it was made for this CPU, else none."""
    return {name: Module(*m) for name, m in modules.items()} if target == native.target_id() else {}
