"""Online state estimation with GTSAM's fixed-lag smoothers (paper 000 §4: the dynamic Bayesian network of
Fig. 1a, observed through sensors, estimated over a sliding window).

Each step k adds the full dynamics graph at step k (Newton–Euler equations, loop closure through the
loop-closing joints' pose, twist and acceleration factors, the planar factor of planar loops), the known
torques, the integration factors from step k − 1 and the encoder readings; the smoother keeps the newest
step and the ``lag`` steps before it as variables and folds older ones into a Gaussian prior on the window
(marginalisation by elimination). The wheel offers ``gtsam.IncrementalFixedLagSmoother`` (iSAM2: each update relinearises and
re-eliminates only what the new factors touch) and ``gtsam.BatchFixedLagSmoother`` (Levenberg–Marquardt on the
whole window at every update); the first is the default, about 10 ms per step on the four-bar.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gtsam
import numpy as np

from gtdyn import keys as K
from gtdyn.arguments import finite_vector, gravity_vector, joint_vector
from gtdyn.equations import GRAVITY
from gtdyn.errors import ArgumentError
from gtdyn.estimation.steps import (between_steps, check_robot, integrated_joints, joint_key, planar_normals,
                                    state_values, step_graph)
from gtdyn.factors.integration import RULES
from gtdyn.kinematics.loop_closure import project
from gtdyn.model.robot import Robot

SMOOTHERS = ("incremental", "batch")
_QUANTITIES = (K.joint_angle_key, K.joint_vel_key, K.joint_accel_key, K.torque_key)


@dataclass(frozen=True, eq=False)
class StateEstimate:
    """The estimate at step ``k`` (time ``t`` = k Δt): joint angles ``q``, velocities ``v``, accelerations
    ``qdd`` and torques ``tau``, in ``robot.joint_names`` order."""

    k: int
    t: float
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray


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

    A gyroscope on the four-bar's coupler would read zero: on the parallelogram the coupler translates
    without turning, so it carries no information and the encoder is the only sensor used.

    ``update(reading)`` adds the next step (the first call is step 0) and returns its filtered estimate;
    ``estimates`` lists them; ``window()`` gives the smoothed estimates of the steps still in the window.
    """

    def __init__(self, robot: Robot, dt: float, lag: int, encoder_joints: str | Sequence[str], sigma_encoder,
                 tau_of_step: Callable[[int], np.ndarray] | np.ndarray, *, q0, v0=None, sigma_q0: float = 0.05,
                 sigma_v0: float = 0.5, sigma_tau: float = 0.01, rule: str = "trapezoidal", gravity=GRAVITY,
                 smoother: str = "incremental"):
        self.robot = robot = check_robot(robot)
        self.dt = _positive_number("dt", dt)
        if isinstance(lag, bool) or not isinstance(lag, numbers.Integral) or lag < 1:
            raise ArgumentError(f"lag: expected a whole number of steps ≥ 1, got {lag!r}")
        self.lag = int(lag)
        names = [encoder_joints] if isinstance(encoder_joints, str) else list(encoder_joints) \
            if isinstance(encoder_joints, Sequence) else None
        if not names or any(not isinstance(name, str) or name not in robot.joint_names for name in names):
            raise ArgumentError(f"encoder_joints: expected a joint name or a list of them (joints of '{robot.name}': "
                                f"{', '.join(robot.joint_names)}), got {encoder_joints!r}")
        if len(set(names)) != len(names):
            raise ArgumentError(f"encoder_joints: a joint given twice in {names}")
        self.encoder_joints = names
        sigma = np.broadcast_to(_positive_vector("sigma_encoder", sigma_encoder, len(names)), (len(names),))
        self._encoder_models = [gtsam.noiseModel.Isotropic.Sigma(1, float(s)) for s in sigma]
        self._tau = _torque_source(robot, tau_of_step)
        q0 = joint_vector(robot, "q0", q0)
        v0 = np.zeros(robot.num_dofs) if v0 is None else joint_vector(robot, "v0", v0)
        self.sigma_q0, self.sigma_v0 = _positive_number("sigma_q0", sigma_q0), _positive_number("sigma_v0", sigma_v0)
        self._tau_model = gtsam.noiseModel.Isotropic.Sigma(1, _positive_number("sigma_tau", sigma_tau))
        if not isinstance(rule, str) or rule not in RULES:
            raise ArgumentError(f"rule: {rule!r} is not one of {', '.join(RULES)}")
        self.rule = rule
        self.gravity = gravity_vector(gravity)
        if smoother not in SMOOTHERS:
            raise ArgumentError(f"smoother: {smoother!r} is not one of {', '.join(SMOOTHERS)}")
        self._joints = integrated_joints(robot, q0)
        self._q0, self._v0 = self._closed(q0, v0, q0) if robot.loop_joints else (q0, v0)
        self._planar = planar_normals(robot, self._q0)
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

    def update(self, reading) -> StateEstimate:
        """Add the next step with its encoder ``reading`` (a number, or one per encoder joint) and return the
        filtered estimate of that step."""
        z = finite_vector("reading", np.atleast_1d(np.asarray(reading, dtype=float)) if _numeric(reading) else reading,
                          len(self.encoder_joints))
        k, robot = self.k, self.robot
        tau = self._tau(k)
        graph = step_graph(robot, k, self.gravity, self._planar)  # with passive joints' τ = 0
        for joint in robot.joints:
            if joint.actuated:
                j = joint.index
                graph.add(gtsam.PriorFactorVector(joint_key(K.torque_key, j, k), tau[j - 1:j], self._tau_model))
        for name, value, model in zip(self.encoder_joints, z, self._encoder_models):
            key = joint_key(K.joint_angle_key, robot.joint(name).index, k)
            graph.add(gtsam.PriorFactorVector(key, np.array([value]), model))
        if k == 0:
            q, v = self._q0, self._v0
            for j in self._joints:
                graph.add(gtsam.PriorFactorVector(joint_key(K.joint_angle_key, j, 0), q[j - 1:j],
                                                  gtsam.noiseModel.Isotropic.Sigma(1, self.sigma_q0)))
                graph.add(gtsam.PriorFactorVector(joint_key(K.joint_vel_key, j, 0), v[j - 1:j],
                                                  gtsam.noiseModel.Isotropic.Sigma(1, self.sigma_v0)))
        else:
            graph.push_back(between_steps(self._joints, k - 1, self.dt, self.rule))
            q, v = self._predict(self.estimates[-1])
        actuated = np.array([joint.actuated for joint in robot.joints])
        values = state_values(robot, k, q, v, tau=np.where(actuated, tau, 0.0), gravity=self.gravity)
        self._smoother.update(graph, values, {key: k * self.dt for key in values.keys()})
        estimate = self._estimate(k, self._smoother.calculateEstimateVector)
        self.estimates.append(estimate)
        return estimate

    def window(self) -> list[StateEstimate]:
        """The smoothed estimates of the steps still in the window, oldest first."""
        values = self._smoother.calculateEstimate()
        first = joint_key(K.joint_angle_key, 1, 0)
        return [self._estimate(k, values.atVector) for k in range(max(0, self.k - self.lag - 1), self.k)
                if values.exists(K.at_step(first, k))]

    def _estimate(self, k: int, read) -> StateEstimate:
        """Step k's joint quantities, ``read(key)`` giving each as a 1-vector."""
        joints = self.robot.joints
        return StateEstimate(k, k * self.dt, *(np.array([read(joint_key(kind, j.index, k))[0] for j in joints])
                                               for kind in _QUANTITIES))

    def _predict(self, last: StateEstimate) -> tuple[np.ndarray, np.ndarray]:
        """The next step's starting point: the independent joints moved by a Taylor step, the loops closed."""
        q = last.q + self.dt * last.v + 0.5 * self.dt ** 2 * last.qdd
        v = last.v + self.dt * last.qdd
        return self._closed(q, v, last.q) if self.robot.loop_joints else (q, v)

    def _closed(self, q, v, guess) -> tuple[np.ndarray, np.ndarray]:
        return project(self.robot, {j: q[j - 1] for j in self._joints}, {j: v[j - 1] for j in self._joints}, guess)

    def __repr__(self) -> str:
        return (f"FixedLagEstimator('{self.robot.name}', dt={self.dt:g} s, lag {self.lag} steps, encoders "
                f"{', '.join(self.encoder_joints)}, {self.k} steps so far)")


def _numeric(x) -> bool:
    return isinstance(x, (numbers.Real, np.ndarray, list, tuple)) and not isinstance(x, bool)


def _positive_number(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x <= 0:
        raise ArgumentError(f"{name}: expected a finite number > 0, got {x!r}")
    return float(x)


def _positive_vector(name: str, x, n: int) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float) if not isinstance(x, (bool, str)) else None
    except (TypeError, ValueError):
        a = None
    if a is None or a.shape not in ((), (n,)) or not np.all(np.isfinite(a)) or not np.all(a > 0):
        raise ArgumentError(f"{name}: expected a finite number > 0 or {n} of them, got {x!r}")
    return a


def _torque_source(robot: Robot, tau) -> Callable[[int], np.ndarray]:
    """``torque(k)``: the known torques of step k, checked when asked for."""
    n = robot.num_dofs
    if callable(tau):
        def call(k: int) -> np.ndarray:
            try:
                return joint_vector(robot, "tau_of_step", tau(k))
            except ArgumentError as e:
                raise ArgumentError(f"tau_of_step: bad torques for step {k}: {e}") from None
        return call
    try:
        array = np.asarray(tau, dtype=float) if not isinstance(tau, str) else None
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2 or array.shape[1] != n or not np.all(np.isfinite(array)):
        raise ArgumentError(f"tau_of_step: expected a callable k -> {n} torques or a finite array of shape "
                            f"(steps, {n}), got {type(tau).__name__}"
                            + (f" of shape {array.shape}" if array is not None else ""))

    def row(k: int) -> np.ndarray:
        if k >= len(array):
            raise ArgumentError(f"tau_of_step: no torques for step {k} (the array has {len(array)} rows)")
        return array[k]
    return row
