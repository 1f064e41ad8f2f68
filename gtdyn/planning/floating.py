"""A floating robot's trajectory, with contact phases (``optimize_trajectory(..., base_pose=..., contacts=...)``).

The generalized coordinates at a knot are [ξ; q] over m = 6 + n, as the compiled floating solver and its
derivatives take them: the base pose T = T̄ Exp(ξ), ξ = [ω; v] in the root link frame, about an anchor T̄ that
moves to the pose between rounds (``rebase``); the base twist V and acceleration V̇ (root link frame) lead q̇
and q̈; the generalized forces lead with the base's six, which are zero (nothing pushes the base but the
contacts: a passive "joint"). Per knot in contact, the contact forces f (world-aligned, ``contacts``) enter the
dynamics as external wrenches at their frames, [0 … ; u] − ID(T, V, V̇, q, q̇, q̈, f) = 0, with ∂ID/∂f = −(R J_v)ᵀ
from the frames' Jacobians.

Between knots the base follows the trapezoidal (or Euler) rule on SE(3): Log(T_k⁻¹ T_{k+1}) = Δt/2 (V_k + V_{k+1})
(Euler: Δt V_k), with V̇ integrating V as q̈ integrates q̇. Jacobians with respect to ξ carry the right Jacobian
J_r(ξ) (Exp(ξ + δ) = Exp(ξ) Exp(J_r δ)), so a step's linearization is exact wherever it is taken.
"""

from __future__ import annotations

from types import SimpleNamespace

import gtsam
import numpy as np

from gtdyn.dynamics.quantities import moving_bodies
from gtdyn.planning.contacts import UP, ContactInequalities, ContactSchedule
from gtdyn.planning.goals import FrameGoals
from gtdyn.planning.knots import UNIT, KnotProblem
from gtdyn.planning.limits import Limits


def _exp(xi: np.ndarray) -> np.ndarray:
    return gtsam.Pose3.Expmap(xi).matrix()


class FloatingProblem(KnotProblem):
    """``KnotProblem`` over [ξ; q] with contact phases (``schedule``, or None: in the air throughout)."""

    def __init__(self, robot, solver, frames, steps, dt, collocation, q0, v0, goal_q, goal_v, weights,
                 bounds: Limits, schedule: ContactSchedule | None, start: tuple, goal: tuple, gravity: np.ndarray,
                 force_smoothness: float, frame_goals: FrameGoals | None = None, *,
                 start_accel: np.ndarray | None = None):
        self.schedule = schedule
        self.active = schedule.active if schedule else [[] for _ in range(steps + 1)]
        self.f_keys = {k: gtsam.symbol("f", k) for k in range(steps + 1) if self.active[k]}
        passive = np.concatenate([np.ones(6, bool), [not j.actuated for j in robot.joints]])
        super().__init__(robot, solver, steps, dt, collocation, q0, v0, goal_q, goal_v, weights, bounds, None,
                         passive, {k: [(key, 3 * len(self.active[k]))] for k, key in self.f_keys.items()},
                         start_accel=start_accel)
        self.f_index = {k: self.offsets[key] + np.arange(3 * len(self.active[k])) for k, key in self.f_keys.items()}
        self.frames, self.gravity, self.force_smoothness = frames, gravity, force_smoothness
        (self.start_pose, self.start_twist), (self.goal_pose, self.goal_twist) = start, goal
        self.anchors = np.repeat(self.start_pose[None], steps + 1, axis=0)
        self._last: tuple | None = None  # (x, ``_at(x)``)
        self.contact_terms = ContactInequalities(schedule) if schedule else None
        # task-space goals (``self.goals``, the fixed-base starting guess's inverse kinematics, stays None)
        self.frame_goals = frame_goals

    # -- the base -------------------------------------------------------------------------------------------

    def _at(self, x: np.ndarray) -> SimpleNamespace:
        """What the base and the contact points are at x — the poses T_k = T̄_k Exp(ξ_k) (K, 4, 4), J_r(ξ_k) (a
        right perturbation of T per unit change of ξ), the points' world positions p (K, C, 3) and R J_v
        (K, C, 3, m: their world velocities' rows over [V; q̇], also ∂p/∂[right perturbation of T; q]) — once per
        x: a step's linearization and each merit ask for them several times."""
        if self._last is not None and np.array_equal(self._last[0], x):
            return self._last[1]
        xi = x[self.s_index[:, :6]]
        at = SimpleNamespace(T=np.array([anchor @ _exp(e) for anchor, e in zip(self.anchors, xi, strict=True)]),
                             Jr=np.array([gtsam.Pose3.ExpmapDerivative(e) for e in xi]), p=None, RJ=None)
        if self.frames is not None:
            P, J = self.frames.batch_placement_jacobian(x[self.s_index[:, 6:self.m]], base_pose=at.T)
            at.p, at.RJ = P[:, :, :3, 3], np.einsum("kcij,kcjl->kcil", P[:, :, :3, :3], J[:, :, 3:])
        self._last = (x.copy(), at)
        return at

    def poses(self, x: np.ndarray) -> np.ndarray:
        """T_k = T̄_k Exp(ξ_k), (K, 4, 4)."""
        return self._at(x).T

    def rebase(self, x: np.ndarray) -> np.ndarray:
        self.anchors = self.poses(x)
        self._last = None  # the same numbers now mean other poses
        x = x.copy()
        x[self.s_index[:, :6]] = 0.0
        return x

    def joint_parts(self, x: np.ndarray):
        q, v, _, tau = self.unpack(x)
        return q[:, 6:], v[:, 6:], tau[:, 6:]

    def forces(self, x: np.ndarray) -> list[np.ndarray]:
        """Per knot, the forces of its contacts in contact, (count, 3)."""
        return [x[self.f_index[k]].reshape(-1, 3) if k in self.f_index else np.zeros((0, 3))
                for k in range(self.N + 1)]

    def wrenches(self, x: np.ndarray) -> dict:
        """Every contact frame's wrench [0; f] at every knot (zero off its stances), as the solver takes them."""
        if not self.schedule:
            return {}
        out = {name: np.zeros((self.N + 1, 6)) for name in self.schedule.frames}
        for k, f in enumerate(self.forces(x)):
            for c, force in zip(self.active[k], f, strict=True):
                out[self.schedule.frames[c]][k, 3:] = force
        return out

    @staticmethod
    def _in_x(D: np.ndarray, Jr: np.ndarray) -> np.ndarray:
        """Jacobians over [right perturbation; q] (knots first, …, rows, m) as ∂/∂[ξ; q] of x: J_r(ξ) in."""
        D = D.copy()
        D[..., :6] = np.einsum("k...ij,kjl->k...il", D[..., :6], Jr)
        return D

    # -- the factors ----------------------------------------------------------------------------------------

    def dynamics(self, x: np.ndarray, jacobians: bool):
        q, v, a, _ = self.unpack(x)
        given = {"base_pose": self.poses(x), "base_twist": v[:, :6], "base_accel": a[:, :6],
                 "external_wrenches": self.wrenches(x) or None}
        if not jacobians:
            return np.hstack(self.solver.batch(q[:, 6:], v[:, 6:], a[:, 6:], **given)), None
        d = self.solver.batch_derivatives(q[:, 6:], v[:, 6:], a[:, 6:], **given)
        at = self._at(x)
        dq = self._in_x(d.dq, at.Jr)
        blocks = [[(self.s_keys[k], -np.concatenate([dq[k], d.dv[k], d.dx[k]], axis=1))] for k in range(self.N + 1)]
        for k, key in self.f_keys.items():  # ∂(−ID)/∂f = (R J_v)ᵀ, contact by contact
            blocks[k].append((key, np.concatenate([at.RJ[k, c].T for c in self.active[k]], axis=1)))
        return d.value, blocks

    def collocation(self, x: np.ndarray):
        """``KnotProblem.collocation`` with the pose rows on SE(3): Log(T_k⁻¹ T_{k+1}) − Δt/2 (V_k + V_{k+1})."""
        r, blocks = super().collocation(x)
        T, Jr = self._at(x).T, self._at(x).Jr
        V = x[self.s_index[:, self.m:self.m + 6]]
        out = []
        for k in range(self.N):
            D = gtsam.Pose3(np.linalg.inv(T[k]) @ T[k + 1])
            rho = gtsam.Pose3.Logmap(D)
            r[k, :6] = rho - (self.h / 2 * (V[k] + V[k + 1]) if self.rule == "trapezoidal" else self.h * V[k])
            inverse_log = gtsam.Pose3.LogmapDerivative(rho)
            now, after = blocks[k][0].copy(), blocks[k][1].copy()
            now[:6, :6] = -inverse_log @ D.inverse().AdjointMap() @ Jr[k]
            after[:6, :6] = inverse_log @ Jr[k + 1]
            out.append((now, after))
        return r, out

    def _pose_row(self, k: int, target: np.ndarray, Jr: np.ndarray, T: np.ndarray):
        """Log(target⁻¹ T_k) and its block on s_k."""
        rho = gtsam.Pose3.Logmap(gtsam.Pose3(np.linalg.inv(target) @ T[k]))
        J = np.zeros((6, 3 * self.m))
        J[:, :6] = gtsam.Pose3.LogmapDerivative(rho) @ Jr[k]
        return [(self.s_keys[k], J)], rho

    def boundary(self, x: np.ndarray, start: bool = True) -> list[tuple[list, np.ndarray]]:
        """Start (pose, twist, q, q̇; unless not ``start``), goal (those given), and the contacts' landing heights
        and standing still."""
        q, v, _, _ = self.unpack(x)
        T, Jr = self._at(x).T, self._at(x).Jr
        m, N = self.m, self.N
        eye = np.eye(3 * m)
        joints_q, speeds = eye[6:m], eye[m:2 * m]
        rows = [self._pose_row(0, self.start_pose, Jr, T),
                ([(self.s_keys[0], joints_q)], q[0, 6:] - self.q0),
                ([(self.s_keys[0], speeds)], v[0] - np.concatenate([self.start_twist, self.v0]))] if start else []
        rows += self.start_acceleration_rows(x)
        if self.goal_pose is not None:
            rows.append(self._pose_row(N, self.goal_pose, Jr, T))
        if self.goal_twist is not None:
            rows.append(([(self.s_keys[N], eye[m:m + 6])], v[N, :6] - self.goal_twist))
        if self.goal_q is not None:
            rows.append(([(self.s_keys[N], joints_q)], q[N, 6:] - self.goal_q))
        if self.goal_v is not None:
            rows.append(([(self.s_keys[N], speeds[6:])], v[N, 6:] - self.goal_v))
        if self.schedule:
            rows += self._contact_rows(x)
        if self.frame_goals:
            pad = np.zeros(2 * m)
            for k, r, J in self.frame_goals.residuals(q[:, 6:], T):
                J = self._in_x(J[None], Jr[k:k + 1])[0]
                rows.append(([(self.s_keys[k], np.hstack([J, np.broadcast_to(pad, (len(r), 2 * m))]))], r))
        return rows

    def _contact_rows(self, x: np.ndarray) -> list[tuple[list, np.ndarray]]:
        """A stance's point lands on the ground at its first knot (height = the ground's) and stays where it
        landed (p_k − p_{k−1} = 0). A landing row the boundary already implies is left out — it would make the
        constraints' Jacobian rank-deficient, which stalls the steps: at knot 0 (the start pose and q0 place the
        point), and on a stance to the last knot when the goal pose and q are given (they place it there)."""
        at = self._at(x)
        p, D = at.p, self._in_x(at.RJ, at.Jr)
        pad = np.zeros((3, 2 * self.m))
        pinned = self.goal_pose is not None and self.goal_q is not None
        rows = []
        for c, runs in enumerate(self.schedule.stances):
            for a, b in runs:
                if a > 0 and not (pinned and b == self.N + 1):
                    rows.append(([(self.s_keys[a], np.hstack([D[a, c, 2], pad[0]])[None])],
                                 np.array([p[a, c, 2] - self.schedule.ground])))
                for k in range(a + 1, b):
                    rows.append(([(self.s_keys[k], np.hstack([D[k, c], pad])),
                                  (self.s_keys[k - 1], -np.hstack([D[k - 1, c], pad]))], p[k, c] - p[k - 1, c]))
        return rows

    def _force_changes(self) -> list[tuple[int, int]]:
        """Consecutive knots whose contacts are the same: their forces' change is a soft cost."""
        return [(k, k + 1) for k in range(self.N) if self.active[k] and self.active[k] == self.active[k + 1]]

    def soft_residuals(self, x: np.ndarray) -> np.ndarray:
        """Effort and smoothness, and the contact forces' rate of change: trapezoidal collocation sees only the
        mean of two knots' accelerations, so without it the forces alternate from knot to knot."""
        w = np.sqrt(self.force_smoothness * self.h) / self.h
        changes = [w * (x[self.f_index[b]] - x[self.f_index[a]]) for a, b in self._force_changes()]
        return np.concatenate([super().soft_residuals(x), *changes])

    def add_soft_factors(self, graph: gtsam.GaussianFactorGraph, x: np.ndarray) -> None:
        w = np.sqrt(self.force_smoothness * self.h) / self.h
        for a, b in self._force_changes():
            eye = w * np.eye(len(self.f_index[a]))
            graph.add(gtsam.JacobianFactor(self.f_keys[b], eye, self.f_keys[a], -eye,
                                           -w * (x[self.f_index[b]] - x[self.f_index[a]]), UNIT(len(eye))))

    # -- inequalities ---------------------------------------------------------------------------------------

    def _contact_values(self, x: np.ndarray) -> np.ndarray:
        return self.contact_terms.values(self.forces(x), self._at(x).p[:, :, 2])

    def inequalities(self, x: np.ndarray) -> list[tuple[object, tuple]]:
        out = super().inequalities(x)
        if self.contact_terms is not None:
            out.append((self.contact_terms, (self._contact_values(x),)))
        return out

    def add_inequality_factors(self, graph: gtsam.GaussianFactorGraph, x: np.ndarray) -> None:
        super().add_inequality_factors(graph, x)
        if self.contact_terms is not None:
            at = self._at(x)
            D = self._in_x(at.RJ, at.Jr)
            heights = {(k, c): np.concatenate([UP @ D[k, c], np.zeros(2 * self.m)]) for k, c in
                       self.contact_terms.flight}
            self.contact_terms.add_factors(graph, self._contact_values(x), self.f_keys, self.s_keys, heights)

    # -- start ----------------------------------------------------------------------------------------------

    def warm_start(self, initial, planned_type) -> np.ndarray:
        """A floating plan of the same knots as the starting point: its joints (the start moved to q0, v0), base
        poses (the anchors; the first moved to the start pose), twists (the first the start twist) and
        accelerations, torques, contact forces (a frame it has no force for shares the weight) and the
        multipliers of its limits and contacts."""
        q, v = self.joints_from(initial, planned_type, floating=True)
        self.anchors = np.array(initial.base_pose, float)
        self.anchors[0], self._last = self.start_pose, None
        twist = np.array(initial.base_twist, float)
        twist[0] = self.start_twist
        zero = np.zeros((self.N + 1, 6))
        x = self.pack(np.hstack([zero, q]), np.hstack([twist, v]), np.hstack([initial.base_accel, initial.qdd]),
                      np.hstack([zero, initial.tau]))
        given, share = initial.contact_forces or {}, self._weight()
        for k, index in self.f_index.items():
            names = [self.schedule.frames[c] for c in self.active[k]]
            x[index] = np.concatenate([given[name][k] if name in given else [0.0, 0.0, share / len(names)]
                                       for name in names])
        if self.contact_terms is not None and "contacts" in (initial.multipliers or {}):
            self.contact_terms.take(initial.multipliers["contacts"])
        return x

    def _weight(self) -> float:
        return -sum(body.mass for body in moving_bodies(self.robot)) * float(self.gravity @ UP)

    def initial_guess(self) -> np.ndarray:
        """The joints as on a fixed base (``smooth_path``), the base at its start pose at rest, the weight shared
        by the contacts of each knot, the generalized forces their inverse dynamics."""
        q, v, a = self.smooth_path()
        K, zero = self.N + 1, np.zeros((self.N + 1, 6))
        x = self.pack(np.hstack([zero, q]), np.hstack([zero, v]), np.hstack([zero, a]), np.zeros((K, self.m)))
        x[self.s_index[0, self.m:self.m + 6]] = self.start_twist
        weight = self._weight()
        for k, index in self.f_index.items():
            x[index] = np.tile([0.0, 0.0, weight / len(self.active[k])], len(self.active[k]))
        value, _ = self.dynamics(x, False)
        value[:, self.passive] = 0.0
        x[self.u_index] = value
        return x
