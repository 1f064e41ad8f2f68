"""The conformance check of issue 9 §1: a robot file either raises a typed ModelError, or at random states
within its joint limits inverse and forward dynamics in every named ordering agree with Pinocchio (1e-8
relative where Pinocchio's mass matrix has κ < 1e10), or every ordering raises or warns the same typed error.

Robots whose ``<mimic>`` joints gtdyn couples (the default) are drawn at states that keep the couplings — the
free joints within their limits, each driven joint following its drives — and compared with Pinocchio's
unconstrained model projected onto the coupling, q = G x + offset: τ = Gᵀ(M q̈ + h) on the free joints (zero on
the driven ones), q̈ = G (Gᵀ M G)⁻¹ Gᵀ (τ − h) (issue 25, item 8: drawn as if independent, those robots only
ever raised).

``check_robot`` classifies one URDF; ``tests/verify_conformance.py`` runs it over every URDF that
example-robot-data ships and ``tests/test_conformance.py`` over a representative few.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.orderings import applicable

TOL = 1e-8
KAPPA_LIMIT = 1e10


@dataclass
class Outcome:
    path: str
    dofs: int = 0
    verdict: str = ""  # agrees | model error | raises | warns | FAIL
    detail: str = ""
    kappa: float = float("nan")
    worst: float = 0.0  # largest relative error against Pinocchio among results returned without warning
    notes: list[str] = field(default_factory=list)


class Coupling:
    """q = G x + offset: the free joints x of a robot's transmissions (G the identity without any)."""

    def __init__(self, robot):
        n = robot.num_dofs
        driven = {t.dependent - 1: t for t in robot.transmissions}
        self.free = [j for j in range(n) if j not in driven]
        self.G, self.offset = np.zeros((n, len(self.free))), np.zeros(n)
        for c, j in enumerate(self.free):
            self.G[j, c] = 1.0
        for j, t in driven.items():
            for drive, ratio in t.terms:
                self.G[j, self.free.index(drive - 1)] = ratio
            self.offset[j] = t.offset

    def state(self, robot, rng):
        """q, q̇, q̈ keeping the couplings, the free joints' q within their limits (within a turn)."""
        joints = [robot.joints[j] for j in self.free]
        # a range wider than a turn (iris's rotors: ±1e16 rad) is a continuous joint's: one turn of it
        x = np.array([rng.uniform(j.lower, j.upper) if j.upper - j.lower <= 2 * np.pi
                      else rng.uniform(-np.pi, np.pi) for j in joints])
        return (self.G @ x + self.offset, self.G @ rng.uniform(-1, 1, len(joints)),
                self.G @ rng.uniform(-2, 2, len(joints)))

    def inverse(self, M, h, qdd):
        tau = np.zeros(len(self.offset))
        tau[self.free] = self.G.T @ (M @ qdd + h)
        return tau

    def forward(self, M, h, tau):
        return self.G @ np.linalg.solve(self.G.T @ M @ self.G, self.G.T @ (tau - h))


def _run(fn):
    """('ok', result) | ('warn', result) | ('raise', exception class name); anything untyped propagates."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = fn()
        except (gtdyn.IndeterminateSystemError, gtdyn.ArgumentError) as e:
            return "raise", type(e).__name__
    warned = any(issubclass(w.category, gtdyn.IllConditionedWarning) for w in caught)
    return ("warn" if warned else "ok"), r


def check_robot(path: str, states: int = 3, seed: int = 0) -> Outcome:
    out = Outcome(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            robot = gtdyn.load_robot(path)
        except gtdyn.ModelError as e:
            out.verdict, out.detail = "model error", str(e).replace(path, "").strip(": ")[:120]
            return out
    out.notes = sorted({w.category.__name__ for w in caught})
    out.dofs = robot.num_dofs
    if robot.num_dofs == 0:
        out.verdict, out.detail = "agrees", "no moving joints"
        return out
    ref = PinocchioModel(path, robot)
    coupling = Coupling(robot)
    if robot.transmissions:
        out.notes.append(f"{len(robot.transmissions)} coupled")
    rng = np.random.default_rng(seed)
    classes: dict[str, set] = {"inverse": set(), "forward": set()}
    kappas = []
    for _ in range(states):
        q, v, a = coupling.state(robot, rng)
        M, h = ref.mass_matrix(q), ref.nonlinear_effects(q, v)
        kappa = np.linalg.cond(coupling.G.T @ M @ coupling.G)
        kappas.append(kappa)
        tau = coupling.inverse(M, h, a)
        checks = {"inverse": (lambda o: gtdyn.inverse_dynamics(robot, q, v, a, ordering=o), lambda r: r.tau, tau),
                  "forward": (lambda o: gtdyn.forward_dynamics(robot, q, v, tau, ordering=o), lambda r: r.qdd, a)}
        for problem, (solve, pick, expected) in checks.items():
            for ordering in applicable(problem):
                kind, value = _run(lambda: solve(ordering))
                classes[problem].add(kind if kind != "raise" else f"raise {value}")
                if kind == "ok":
                    err = rel_err(pick(value), expected)
                    out.worst = max(out.worst, err)
                    if err > TOL and kappa < KAPPA_LIMIT:
                        out.verdict = "FAIL"
                        out.detail = f"{problem} {ordering}: relative error {err:.2g} with κ(M) = {kappa:.2g}"
                        return out
    out.kappa = max(kappas)
    for problem, seen in classes.items():
        if len(seen) > 1 and seen != {"ok", "warn"}:  # mixed verdicts between orderings or states
            out.verdict, out.detail = "FAIL", f"{problem}: orderings disagree: {sorted(seen)}"
            return out
    seen = classes["inverse"] | classes["forward"]
    if any(s.startswith("raise") for s in seen):
        out.verdict = "raises"
        out.detail = "; ".join(f"{p}: {', '.join(sorted(s))}" for p, s in classes.items())
    elif "warn" in seen:
        out.verdict = "warns"
    else:
        out.verdict = "agrees"
    return out
