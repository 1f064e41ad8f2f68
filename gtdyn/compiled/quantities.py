"""The mass matrix by a compiled solver: the columns that ``gtdyn.dynamics.quantities.mass_matrix`` solves one
elimination at a time, here all in one ``batch`` call of the same elimination as machine code."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments import joint_vector, state_batch
from gtdyn.arguments.base import base_rows, base_state, refuse_on_fixed_base
from gtdyn.compiled.build import compile
from gtdyn.compiled.solver import CompiledSolver
from gtdyn.dynamics.quantities import NO_GRAVITY, rigid_bodies
from gtdyn.model.robot import Robot


class CompiledMassMatrix:
    """M(q) (nv × nv, coordinates as in ``gtdyn.dynamics.quantities``; Pinocchio's ``crba``) from a compiled
    inverse-dynamics solver without gravity: column j is the answer at q̇ = 0 to the unit acceleration e_j (for a
    floating base, the first six are base accelerations and the base wrench makes the first six rows), and the nv
    columns of one state — or of N states — go to the solver's ``batch`` as nv (N · nv) states of one call.

    ``mass(q, base_pose=None)`` gives one M; ``mass.batch(Q, base_pose=None, threads=1)`` gives (N, nv, nv) for
    Q of shape (N, n) and base poses (N, 4, 4) (or a list of ``gtsam.Pose3``). ``solver`` is the compiled
    inverse-dynamics solver, whose checked calls fall back to the reference path as ``gtdyn.compile`` says."""

    def __init__(self, robot: Robot, *, ordering="rnea", checks: bool = True):
        free = rigid_bodies(robot)
        self.robot = robot
        self.solver: CompiledSolver = compile(free, "inverse", ordering=ordering, gravity=NO_GRAVITY, checks=checks)
        self.nv = free.nv
        unit = np.eye(self.nv)
        self._qdd = unit[:, self.nv - free.num_dofs:]  # row k: q̈ of column k (e_j for joint columns, else 0)
        self._base_accel = unit[:, :6] if free.floating_base else None  # row k: the base acceleration of column k

    def __call__(self, q, base_pose=None) -> np.ndarray:
        q = joint_vector(self.robot, "q", q)
        base = base_state(self.robot, base_pose)
        return self.batch(q[None], None if base is None else base.pose.matrix()[None])[0]

    def batch(self, Q, base_pose=None, threads: int = 1) -> np.ndarray:
        """M at each row of Q (and base pose): an array (N, nv, nv)."""
        (Q,) = state_batch(self.robot.num_dofs, Q=Q)
        count, nv = len(Q), self.nv
        rows = np.repeat(Q, nv, axis=0)
        base = {}
        if self._base_accel is not None:
            base["base_accel"] = np.tile(self._base_accel, (count, 1))
            if base_pose is not None:
                poses = base_rows("base_pose", base_pose, count, (4, 4), np.eye(4).ravel())
                base["base_pose"] = np.repeat(poses.reshape(count, 4, 4), nv, axis=0)
        else:
            refuse_on_fixed_base(self.robot, base_pose=base_pose)
        out = self.solver.batch(rows, np.zeros_like(rows), np.tile(self._qdd, (count, 1)), threads=threads, **base)
        columns = np.hstack(out) if isinstance(out, tuple) else out  # (count · nv, nv): M's columns as rows
        return columns.reshape(count, nv, nv).transpose(0, 2, 1)

    def __repr__(self) -> str:
        ordering = " ".join(self.solver.ordering)
        return f"CompiledMassMatrix('{self.robot.name}', {self.nv} × {self.nv}, ordering {ordering})"


def compile_mass_matrix(robot: Robot, *, ordering="rnea", checks: bool = True) -> CompiledMassMatrix:
    """A reusable M(q) by compiled inverse dynamics in ``ordering`` (default "rnea"); compiled once (and cached on
    disk as every compiled solver is), then one native batch call per state or per batch of states."""
    return CompiledMassMatrix(robot, ordering=ordering, checks=checks)


def compiled_mass_matrix(robot: Robot, q, *, base_pose=None, ordering="rnea") -> np.ndarray:
    """M(q) in one call of a compiled solver (compiled here, or loaded from the disk cache): the fast path of
    ``gtdyn.dynamics.quantities.mass_matrix``, equal to it to round-off. Keep ``compile_mass_matrix``'s object to
    evaluate M at many states."""
    return compile_mass_matrix(robot, ordering=ordering)(q, base_pose)
