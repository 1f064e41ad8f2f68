"""The conformance check of issue 9 §1: a robot file either raises a typed ModelError, or at random states
within its joint limits inverse and forward dynamics in every named ordering agree with Pinocchio (1e-8
relative where Pinocchio's mass matrix has κ < 1e10), or every ordering raises or warns the same typed error.

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


def _state(robot, rng):
    q = np.array([rng.uniform(j.lower, j.upper) if np.isfinite(j.lower) and np.isfinite(j.upper)
                  else rng.uniform(-np.pi, np.pi) for j in robot.joints])
    return q, rng.uniform(-1, 1, robot.num_dofs), rng.uniform(-2, 2, robot.num_dofs)


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
    rng = np.random.default_rng(seed)
    classes: dict[str, set] = {"inverse": set(), "forward": set()}
    kappas = []
    for _ in range(states):
        q, v, a = _state(robot, rng)
        kappa = np.linalg.cond(ref.mass_matrix(q))
        kappas.append(kappa)
        tau = ref.rnea(q, v, a)
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
