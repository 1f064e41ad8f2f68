"""Online state estimation with GTSAM's fixed-lag smoothers (paper 000 §4: the dynamic Bayesian network of
Fig. 1a, observed through sensors, estimated over a sliding window).

Each step k adds the full dynamics graph at step k (Newton–Euler equations, loop closure through the
loop-closing joints' pose, twist and acceleration factors, the planar factor of planar loops), the known
torques, the integration factors from step k − 1 and the encoder readings; the smoother keeps the newest
step and the ``lag`` steps before it as variables and folds older ones into a Gaussian prior on the window
(marginalisation by elimination). The wheel offers ``gtsam.IncrementalFixedLagSmoother`` (iSAM2: each update
relinearises and re-eliminates only what the new factors touch) and ``gtsam.BatchFixedLagSmoother``
(Levenberg–Marquardt on the whole window at every update); the first is the default (timings:
``benchmarks/verify_estimation.py``).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import (
    choice,
    finite_vector,
    gravity_vector,
    joint_positions,
    joint_vector,
    positive_number,
    positive_vector,
    whole_number,
)
from gtdyn.arguments.base import BaseState, base_pose_reading
from gtdyn.arguments.series import joint_name_list, step_torques
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.estimation.steps import (
    StepDynamics,
    between_steps,
    check_robot,
    coupled,
    integrated_joints,
    joint_key,
    planar_normals,
)
from gtdyn.factors.integration import RULES
from gtdyn.kinematics.loop_closure import project
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot

SMOOTHERS = ("incremental", "batch")
_QUANTITIES = (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key, K.torque_key)


@dataclass(frozen=True, eq=False)
class StateEstimate:
    """The estimate at step ``k`` (time ``t`` = k Δt): joint angles ``q``, velocities ``v``, accelerations
    ``qdd`` and torques ``tau``, in ``robot.joint_names`` order; a floating base's ``base_pose`` (4×4, world ←
    root link), ``base_twist`` and ``base_accel`` (root link frame), None on a fixed base."""

    k: int
    t: float
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    base_pose: np.ndarray | None = None
    base_twist: np.ndarray | None = None
    base_accel: np.ndarray | None = None


class FixedLagEstimator:
    """Estimates a robot's state online from encoder readings, given the torques it is driven by.

    ``dt``: the time step (s) between readings; ``lag``: how many steps before the newest stay variables in
    the window (older ones are marginalised); ``encoder_joints``: the joint name(s) read; ``sigma_encoder``: their noise
    (rad or m, one number or one per encoder); ``tau_of_step``: the known torques, a callable k → vector of n
    (``robot.joint_names`` order) or an array with one row per step — entries of passive joints are ignored
    (their τ is held at zero exactly). ``q0``, ``v0``: the initial guess (q0 is closed onto the loops around
    the independent joints), with standard deviations ``sigma_q0``, ``sigma_v0`` on the independent joints.

    Process noise: the actuated joints' torques are Gaussian priors N(τ_k, ``sigma_tau``²) rather than hard —
    the disturbance torque that the model misses (friction, the integrator's own error). Everything else is
    exact: the dynamics graph at each step, the integration factors (``rule``, on the independent joints only;
    on a loop the other joints follow by closure, and integrating them too would over-determine the step),
    passive torques zero. ``smoother``: "incremental" (``gtsam.IncrementalFixedLagSmoother``) or "batch"
    (``gtsam.BatchFixedLagSmoother``, slower).

    Transmissions: the driven joints follow their drives through the coupling factors and are not integrated.
    A floating base (in free flight: no wrench from its environment) needs its pose read at every step,
    ``update(reading, base_pose=T)`` (4×4 or ``gtsam.Pose3``, world ← root link), with standard deviation
    ``sigma_base`` ([rotation (rad); translation (m)], one number or six); ``base_twist0`` (root link frame,
    default zero) is the initial guess of its twist, with standard deviation ``sigma_v0``. Its pose, twist
    and acceleration are estimated with the joints, integrated by the same ``rule`` on SE(3).

    A gyroscope on the four-bar's coupler would read zero: on the parallelogram the coupler translates
    without turning, so it carries no information and the encoder is the only sensor used.

    ``dynamics``: "auto" (default), "compiled" or "full", as ``trajectory_inverse_dynamics`` takes it.

    ``update(reading)`` adds the next step (the first call is step 0) and returns its filtered estimate;
    ``estimates`` lists them; ``window()`` gives the smoothed estimates of the steps still in the window.
    """

    def __init__(self, robot: Robot, dt: float, lag: int, encoder_joints: str | Sequence[str], sigma_encoder,
                 tau_of_step: Callable[[int], np.ndarray] | np.ndarray, *, q0, v0=None, sigma_q0: float = 0.05,
                 sigma_v0: float = 0.5, sigma_tau: float = 0.01, rule: str = "trapezoidal", gravity=GRAVITY,
                 smoother: str = "incremental", sigma_base=None, base_twist0=None, dynamics: str = "auto"):
        self.robot = robot = check_robot(robot)
        self.dt = positive_number("dt", dt)
        self.lag = whole_number("lag", lag, 1)
        self.encoder_joints = names = joint_name_list(robot, "encoder_joints", encoder_joints)
        sigma = np.broadcast_to(positive_vector("sigma_encoder", sigma_encoder, len(names)), (len(names),))
        self._encoder_models = [gtsam.noiseModel.Isotropic.Sigma(1, float(s)) for s in sigma]
        self._tau = step_torques(robot, tau_of_step)
        q0 = joint_positions(robot, "q0", q0)
        v0 = np.zeros(robot.num_dofs) if v0 is None else joint_vector(robot, "v0", v0)
        self.sigma_q0, self.sigma_v0 = positive_number("sigma_q0", sigma_q0), positive_number("sigma_v0", sigma_v0)
        self._tau_model = gtsam.noiseModel.Isotropic.Sigma(1, positive_number("sigma_tau", sigma_tau))
        self.rule = choice("rule", rule, RULES)
        self.gravity = gravity_vector(gravity)
        choice("smoother", smoother, SMOOTHERS)
        self._base_model = self._base_twist0 = None
        if robot.floating_base:
            if sigma_base is None:
                raise ArgumentError(f"sigma_base: '{robot.name}' has a floating base, whose pose readings need a "
                                    "standard deviation (rad and m, one number or six)")
            self._base_model = gtsam.noiseModel.Diagonal.Sigmas(
                np.array(np.broadcast_to(positive_vector("sigma_base", sigma_base, 6), (6,))))
            self._base_twist0 = np.zeros(6) if base_twist0 is None else finite_vector("base_twist0", base_twist0, 6)
        self._joints = integrated_joints(robot, q0)
        q0, v0, _ = coupled(robot, q0, v0, np.zeros(robot.num_dofs))
        self._q0, self._v0 = self._closed(q0, v0, q0) if robot.loop_joints else (q0, v0)
        self._steps = StepDynamics(robot, self.gravity, planar_normals(robot, self._q0), dynamics)
        params = gtsam.ISAM2Params()
        params.setRelinearizeThreshold(1e-3)  # each step starts from a one-step prediction, already close:
        params.relinearizeSkip = 10  # tighter settings (1e-8, every update) gave the same estimates, 3x slower
        span = (self.lag + 0.5) * self.dt  # half a step more: timestamps k Δt are not exact in floating point
        if smoother == "incremental":
            self._smoother = gtsam.IncrementalFixedLagSmoother(span, params)
        else:
            self._smoother = gtsam.BatchFixedLagSmoother(span, gtsam.LevenbergMarquardtParams())
        self.estimates: list[StateEstimate] = []

    @property
    def k(self) -> int:
        """The number of steps added so far (the next update is step k)."""
        return len(self.estimates)

    def update(self, reading, base_pose=None) -> StateEstimate:
        """Add the next step with its encoder ``reading`` (a number, or one per encoder joint) — and, on a floating
        base, the reading ``base_pose`` of its root link's pose — and return the filtered estimate of that step."""
        z = finite_vector("reading", np.atleast_1d(np.asarray(reading, dtype=float)) if _numeric(reading) else reading,
                          len(self.encoder_joints))
        k, robot = self.k, self.robot
        measured = base_pose_reading(robot, base_pose)
        tau = self._tau(k)
        graph = self._steps.graph(k)  # with passive joints' τ = 0
        for joint in robot.joints:
            if joint.actuated:
                j = joint.index
                graph.add(gtsam.PriorFactorVector(joint_key(K.torque_key, j, k), tau[j - 1:j], self._tau_model))
        for name, value, model in zip(self.encoder_joints, z, self._encoder_models, strict=True):
            key = joint_key(K.joint_angle_key, robot.joint(name).index, k)
            graph.add(gtsam.PriorFactorVector(key, np.array([value]), model))
        if k == 0:
            q, v = self._q0, self._v0
            for j in self._joints:
                graph.add(gtsam.PriorFactorVector(joint_key(K.joint_angle_key, j, 0), q[j - 1:j],
                                                  gtsam.noiseModel.Isotropic.Sigma(1, self.sigma_q0)))
                graph.add(gtsam.PriorFactorVector(joint_key(K.joint_vel_key, j, 0), v[j - 1:j],
                                                  gtsam.noiseModel.Isotropic.Sigma(1, self.sigma_v0)))
            base = None if measured is None else BaseState(measured, self._base_twist0)
            if base is not None:
                graph.add(gtsam.PriorFactorVector(K.at_step(K.twist_key(0), 0),
                                                  base_frame.twist_to_com(robot) @ self._base_twist0,
                                                  gtsam.noiseModel.Isotropic.Sigma(6, self.sigma_v0)))
        else:
            graph.push_back(between_steps(self._joints, k - 1, self.dt, self.rule, floating_base=robot.floating_base))
            q, v = self._predict(self.estimates[-1])
            base = self._predict_base(self.estimates[-1])
        if measured is not None:
            graph.add(gtsam.PriorFactorPose3(K.at_step(K.pose_key(0), k), base_frame.pose_to_com(robot, measured),
                                             self._base_model))
        actuated = np.array([joint.actuated for joint in robot.joints])
        values = self._steps.values(k, q, v, tau=np.where(actuated, tau, 0.0), base=base)
        self._smoother.update(graph, values, {key: k * self.dt for key in values.keys()})
        estimate = self._estimate(k, self._smoother.calculateEstimateVector, self._smoother.calculateEstimatePose3)
        self.estimates.append(estimate)
        return estimate

    def window(self) -> list[StateEstimate]:
        """The smoothed estimates of the steps still in the window, oldest first."""
        values = self._smoother.calculateEstimate()
        first = joint_key(K.joint_angle_key, 1, 0)
        return [self._estimate(k, values.atVector, values.atPose3) for k in range(max(0, self.k - self.lag - 1), self.k)
                if values.exists(K.at_step(first, k))]

    def _estimate(self, k: int, read, read_pose) -> StateEstimate:
        """Step k's joint quantities, ``read(key)`` giving each as a 1-vector (and a floating base's, with
        ``read_pose``)."""
        robot = self.robot
        base = {}
        if robot.floating_base:
            to_link = base_frame.twist_to_link(robot)
            base = {"base_pose": base_frame.pose_to_link(robot, read_pose(K.at_step(K.pose_key(0), k))).matrix(),
                    "base_twist": to_link @ read(K.at_step(K.twist_key(0), k)),
                    "base_accel": to_link @ read(K.at_step(K.twist_accel_key(0), k))}
        return StateEstimate(k, k * self.dt, *(np.array([read(joint_key(kind, j.index, k))[0] for j in robot.joints])
                                               for kind in _QUANTITIES), **base)

    def _predict(self, last: StateEstimate) -> tuple[np.ndarray, np.ndarray]:
        """The next step's starting point: the independent joints moved by a Taylor step (the driven ones with
        them), the loops closed."""
        q = last.q + self.dt * last.v + 0.5 * self.dt ** 2 * last.qdd
        v = last.v + self.dt * last.qdd
        return self._closed(q, v, last.q) if self.robot.loop_joints else (q, v)

    def _predict_base(self, last: StateEstimate) -> BaseState | None:
        """A floating base's next pose and twist by a Taylor step on SE(3) (root link frame), or None."""
        if last.base_pose is None:
            return None
        h = self.dt
        step = h * last.base_twist + 0.5 * h * h * last.base_accel
        pose = gtsam.Pose3(last.base_pose).compose(gtsam.Pose3.Expmap(step))
        return BaseState(pose, last.base_twist + h * last.base_accel)

    def _closed(self, q, v, guess) -> tuple[np.ndarray, np.ndarray]:
        return project(self.robot, {j: q[j - 1] for j in self._joints}, {j: v[j - 1] for j in self._joints}, guess)

    def __repr__(self) -> str:
        return (f"FixedLagEstimator('{self.robot.name}', dt={self.dt:g} s, lag {self.lag} steps, encoders "
                f"{', '.join(self.encoder_joints)}, {self.k} steps so far)")


def _numeric(x) -> bool:
    return isinstance(x, (numbers.Real, np.ndarray, list, tuple)) and not isinstance(x, bool)
