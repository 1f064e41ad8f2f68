"""A simulated trajectory, and the energies that judge an integrator."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import gtsam
import numpy as np

from gtdyn.compiled.cache import robot_fingerprint
from gtdyn.dynamics.quantities import kinetic_energy_of, potential_energy_of
from gtdyn.errors import ArgumentError
from gtdyn.kinematics.forward import forward_kinematics
from gtdyn.model.robot import Robot
from gtdyn.simulation.solvers import Recent

# from this many samples the energies come from compiled kinematics (``gtdyn.compile_center_of_mass``), whose
# compile costs less than the reference's kinematics pass per sample (benchmarks/results/design_measurements.md)
COMPILED_ENERGIES_FROM = 1000
_COMPILED = Recent(8)  # the compiled kinematics of recent robots


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Samples at times ``t`` (steps + 1): joint positions ``q``, velocities ``v``, accelerations ``qdd`` and
    torques ``tau`` (rows in time, columns in ``robot.joint_names`` order; ``qdd`` and ``tau`` of the last
    sample are those at its time too), and the kinetic and potential energy (J) at each sample, computed when
    first asked for. On closed loops ``closure`` is the largest loop mismatch (rad, m, rad/s, m/s) at each
    sample: the states are projected onto the loops at every evaluation, so it stays at round-off."""

    robot: Robot
    method: str
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    gravity: np.ndarray
    closure: np.ndarray | None = None  # closed loops: the largest pose or twist mismatch around a loop, per sample
    base_pose: np.ndarray | None = None  # floating base: (steps + 1, 4, 4), world ← root link
    base_twist: np.ndarray | None = None  # floating base: (steps + 1, 6), [ω; v] in the root link frame
    base_accel: np.ndarray | None = None  # floating base: (steps + 1, 6), its time derivative
    # contacts: (steps + 1, 3 per point contact + 6 per surface contact), what the environment applies, in the
    # contact frames (as a compiled solver gives them), at each sample
    contact_forces: np.ndarray | None = None

    @cached_property
    def _energies(self) -> np.ndarray:  # computed on first use: a forward-kinematics pass per sample
        if len(self.t) >= COMPILED_ENERGIES_FROM:
            try:
                com = _compiled_kinematics(self.robot)
                return np.column_stack([com.batch_kinetic_energy(self.q, self.v, self.base_pose, self.base_twist),
                                        com.batch_potential_energy(self.q, self.gravity, self.base_pose)])
            except ArgumentError:  # samples the compiled code refuses (angles beyond ±1e6 rad): the reference's
                pass
        if self.base_pose is None:
            return np.array([energies(self.robot, q, v, self.gravity)
                             for q, v in zip(self.q, self.v, strict=True)]).reshape(-1, 2)
        return np.array([energies(self.robot, q, v, self.gravity, gtsam.Pose3(T), twist)
                         for q, v, T, twist in zip(self.q, self.v, self.base_pose, self.base_twist,
                                                   strict=True)]).reshape(-1, 2)

    @property
    def kinetic(self) -> np.ndarray:
        """Kinetic energy (J) at each sample."""
        return self._energies[:, 0]

    @property
    def potential(self) -> np.ndarray:
        """Potential energy (J) at each sample, zero with every CoM at the world origin's height."""
        return self._energies[:, 1]

    @property
    def energy(self) -> np.ndarray:
        """Kinetic plus potential energy (J)."""
        return self.kinetic + self.potential

    def __repr__(self) -> str:
        drift = np.max(np.abs(self.energy - self.energy[0]))
        return (f"Trajectory({self.method} on '{self.robot.name}', {len(self.t) - 1} steps of "
                f"{self.t[1] - self.t[0]:g} s, energy drift up to {drift:.3g} J)")


def _compiled_kinematics(robot: Robot):
    """The robot's compiled centre of mass and energies, compiled once for the last few robots."""
    from gtdyn.compiled.center_of_mass import compile_center_of_mass

    return _COMPILED.get((robot_fingerprint(robot), tuple(robot.joint_names)), lambda: compile_center_of_mass(robot))


def energies(robot: Robot, q: np.ndarray, v: np.ndarray, gravity, base_pose=None,
             base_twist=None) -> tuple[float, float]:
    """Kinetic and potential energy at one state (``gtdyn.dynamics.quantities``: Σ ½ Vᵢᵀ Gᵢ Vᵢ and −Σ mᵢ g · pᵢ over
    the moving bodies, a floating base among them), from one forward-kinematics pass."""
    kin = forward_kinematics(robot, q, v, base_pose, base_twist)
    return kinetic_energy_of(robot, kin), potential_energy_of(robot, kin, gravity)
