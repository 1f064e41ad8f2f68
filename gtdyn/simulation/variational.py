"""The linear-time variational integrator of paper 004 (Lee, Liu, Park & Srinivasa): each step solves the
discrete Euler–Lagrange (DEL) equations for q_{k+1} by a quasi-Newton iteration whose residual is the
discrete recursive Newton–Euler algorithm (DRNEA, the paper's Algorithm 2) and whose update is
Δq = −Δt M⁻¹(q_k) e (RIQN, Algorithm 3), with M⁻¹ e from a compiled forward-dynamics solver at rest and without
gravity — Featherstone's impulse algorithm, as the paper says. Both passes are O(n).

Per body i, in its CoM frame (the paper's eq. 18–22, trapezoidal discrete Lagrangian, eq. 9):

    ΔT_i = T_{λ(i),i}(q_k)⁻¹ ΔT_{λ(i)} T_{λ(i),i}(q_{k+1}),   V_i = log(ΔT_i) / Δt          (forward pass)
    μ_i  = dlog_{Δt V_i}ᵀ G_i V_i                                                      (discrete momentum)
    F_i  = μ_i − Π_i − (Δt/2) W_i(q_k) + Σ_children [Ad_{cTi}]ᵀ F_c                       (backward pass)
    e_j  = S_jᵀ F_j − (Δt/2)(τ_{k−1} + τ_k)_j

where W_i is link i's weight as a wrench and Π_i the body's incoming momentum: G_i V_i(t₀) at the first step,
then [Ad_{ΔT_i}]ᵀ μ_i + (Δt/2) W_i(q_{k+1}) from the step before (the discrete Legendre transform; the paper's
[Ad_{exp(Δt V)}]ᵀ μ^{k−1} with the potential's share). Torques are held over each step (the first step sees
(Δt/2) τ₀). Velocities are reported through the same transform: p_{k+1} = Sᵀ(backward pass of Π) + (Δt/2) τ_k,
q̇_{k+1} = M⁻¹ p_{k+1}.
"""

from __future__ import annotations

import gtsam
import numpy as np

from gtdyn.equations import gravity_wrench
from gtdyn.errors import ArgumentError
from gtdyn.kinematics.forward import NUMERIC, forward_kinematics, kinematic_pass, subtree_projections
from gtdyn.model.base_frame import pose_to_link, twist_to_link
from gtdyn.model.robot import Robot
from gtdyn.spatial import Ad, dlog

TOLERANCE = 1e-14  # |e| relative to the momentum scale at which a step has converged (round-off: ~1e-13,
# where the update stops moving q and STEP_TOLERANCE ends the iteration)
STEP_TOLERANCE = 1e-15  # or the update has stopped moving q, relative to |q|
# or |e| has reached its round-off floor: below this (relative to the momentum scale) and no longer shrinking. On
# long chains the floor is above TOLERANCE (μ = G ξ / Δt amplifies the rounding of ξ; measured in
# benchmarks/results/design_measurements.md), and the update never stops moving q
STALL_TOLERANCE = 1e-9


def settled(largest: float, previous: float | None, scale: float) -> bool:
    """Whether a step's iteration is done with max |e| = ``largest`` (``previous``: the iteration before's): within
    TOLERANCE of the momentum scale, or within STALL_TOLERANCE and no smaller than before (round-off)."""
    return largest <= TOLERANCE * scale or (previous is not None and previous <= largest <= STALL_TOLERANCE * scale)
MAX_ITERATIONS = 50


def not_converged(state: dict, residual: float):
    """The error of a step whose iteration did not converge: the step is too long for the motion."""
    raise ArgumentError(f"dt: the variational integrator did not converge in {MAX_ITERATIONS} iterations at "
                        f"t = {state.get('t', 0.0):g} s (residual {residual:.3g}); take a smaller step")


class VariationalIntegrator:
    """One robot's DEL steps. ``mass_inverse(q, p)`` returns M(q)⁻¹ p (a compiled forward solver at rest, without
    gravity); on a floating base p and the answer start with the base's 6 (its CoM frame), and the base's
    displacement over the step, ξ₀ = log ΔT₀, is an unknown with the joints: its residual is the whole impulse
    left on the base (no joint from the world takes any). ``gravity`` in the world frame."""

    def __init__(self, robot: Robot, gravity, mass_inverse):
        if robot.loop_joints or robot.transmissions:  # its DRNEA has no constraint forces
            raise ArgumentError(f"method: the variational integrator covers trees without transmissions; "
                                f"'{robot.name}' has {'closed loops' if robot.loop_joints else 'transmissions'}")
        self.robot, self.gravity, self.mass_inverse = robot, np.asarray(gravity, float), mass_inverse
        self.floating = robot.floating_base
        self.bodies = (robot.base, *robot.links) if self.floating else robot.links
        self.iterations: list[int] = []

    # -- the passes -----------------------------------------------------------------------------------------

    def _poses(self, q, T0):
        """Joint transforms pTc(q) and each body's pose in the world, root → leaves from the base's dynamics frame at
        T0: the kinematics pass (``gtdyn.kinematics.forward.kinematic_pass``), its twists unused."""
        robot = self.robot
        kin, pTc = kinematic_pass(robot, NUMERIC, q, np.zeros(robot.num_dofs), T0, np.zeros(6))
        return {j.index: pTc[j.index] for j in robot.joints}, kin.wT

    def _weights(self, wT, scale: float) -> dict[int, np.ndarray]:
        return {link.index: scale * gravity_wrench(link.mass, wT[link.index], self.gravity) for link in self.bodies}

    def _backward(self, wrench_of: dict[int, np.ndarray], pTc) -> np.ndarray:
        """``subtree_projections`` as an array."""
        return np.array(subtree_projections(self.robot, wrench_of, pTc), float)

    def _split(self, u):
        """(ξ₀ or None, q) of the unknowns."""
        return (u[:6], u[6:]) if self.floating else (None, u)

    def residual(self, u_next, state) -> tuple[np.ndarray, dict, dict]:
        """DRNEA: e(u_{k+1}), and per body its displacement ΔT and discrete momentum μ."""
        dt, robot = state["dt"], self.robot
        xi0, q_next = self._split(u_next)
        pTc_next = {j.index: j.parent_T_child(q_next[j.index - 1]) for j in robot.joints}
        dT = {0: gtsam.Pose3() if xi0 is None else gtsam.Pose3.Expmap(xi0)}
        mu = {}
        if self.floating:
            mu[0] = dlog(xi0).T @ robot.base.G @ (xi0 / dt)
        for joint in robot.tree_joints:  # forward pass: displacements and average velocities
            j, p = joint.index, robot.link(joint.parent).index
            dT[j] = state["pTc"][j].inverse().compose(dT[p]).compose(pTc_next[j])
            V = gtsam.Pose3.Logmap(dT[j]) / dt
            mu[j] = dlog(dt * V).T @ robot.link(joint.child).G @ V
        body = {i: mu[i] - state["momentum"][i] - state["weight"][i] for i in mu}
        e = self._backward(body, state["pTc"]) - state["impulse"]
        return e, dT, mu

    # -- stepping ---------------------------------------------------------------------------------------------

    def start(self, q0, v0, tau0, dt: float, T0=None, V0=None) -> dict:
        """The state before the first step: body momenta G Vᵢ(t₀) from (q₀, q̇₀) and, on a floating base, its CoM
        frame's pose T0 and twist V0."""
        robot = self.robot
        kin = forward_kinematics(robot, q0, v0, None if T0 is None else pose_to_link(robot, T0),
                                 None if V0 is None else twist_to_link(robot) @ V0)
        momentum = {link.index: link.G @ kin.V[link.index] for link in self.bodies}
        v_all = np.concatenate([V0, v0]) if self.floating else np.array(v0, float)
        return self._state(np.array(q0, float), v_all, momentum, self._impulse(np.zeros(self.robot.num_dofs)), tau0,
                           dt, T0=T0)

    def _impulse(self, joint_impulse):
        return np.concatenate([np.zeros(6), joint_impulse]) if self.floating else joint_impulse

    def _state(self, q, v, momentum, held, tau, dt, poses=None, T0=None) -> dict:
        pTc, wT = poses or self._poses(q, T0 or gtsam.Pose3())
        return {"q": q, "v": v, "T0": wT[0], "dt": dt, "pTc": pTc, "momentum": momentum,
                "weight": self._weights(wT, dt / 2), "impulse": held + self._impulse(dt / 2 * np.asarray(tau, float)),
                "tau": np.asarray(tau, float)}

    def step(self, state: dict, tau_next_of) -> tuple[dict, int]:
        """u_{k+1} by RIQN from the initial guess u_k + Δt u̇_k; returns the next state (velocities from the
        discrete Legendre transform) and the iteration count. ``tau_next_of(q, v)`` gives τ_{k+1} (joints)."""
        dt, q = state["dt"], state["q"]
        u_next = (np.concatenate([dt * state["v"][:6], q + dt * state["v"][6:]]) if self.floating
                  else q + dt * state["v"])
        scale = max(1.0, float(np.max(np.abs(state["impulse"]), initial=0.0)),
                    max(float(np.max(np.abs(m))) for m in state["momentum"].values()))
        previous = None
        for iteration in range(1, MAX_ITERATIONS + 1):  # noqa: B007 (the count is reported after the loop)
            e, dT, mu = self.residual(u_next, state)
            largest = float(np.max(np.abs(e)))
            if settled(largest, previous, scale):
                break
            previous = largest
            update = dt * self.mass_inverse(q, e)
            u_next = u_next - update
            if np.max(np.abs(update)) <= STEP_TOLERANCE * (1.0 + np.max(np.abs(u_next))):
                break
        else:
            not_converged(state, float(np.max(np.abs(e))))
        self.iterations.append(iteration)
        _, q_next = self._split(u_next)
        poses = self._poses(q_next, state["T0"].compose(dT[0]))
        weight_next = self._weights(poses[1], dt / 2)
        momentum = {i: Ad(dT[i]).T @ mu[i] + weight_next[i] for i in mu}  # Π_{k+1}
        p_next = self._backward(momentum, poses[0]) + self._impulse(dt / 2 * state["tau"])
        v_next = self.mass_inverse(q_next, p_next)
        tau_next = tau_next_of(q_next, v_next[6:] if self.floating else v_next)
        next_state = self._state(q_next, v_next, momentum, self._impulse(dt / 2 * state["tau"]), tau_next, dt, poses)
        return next_state, iteration
