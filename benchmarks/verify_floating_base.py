"""Floating-base dynamics against Pinocchio's free flyer: inverse dynamics (``pin.rnea``) and forward dynamics
(``pin.aba``) at random states — random base pose, twist and acceleration, joints in [−1, 1] — in every named
ordering, on legged robots and humanoids of example-robot-data loaded with ``base="floating"``; then the
compiled solvers (ABA and COLAMD forward, RNEA and COLAMD inverse) at the same states; then contacts: forward
dynamics with 2, 3 and 4 feet on the ground (point contacts) and one foot flat (a surface contact), reference
path and compiled ABA, against Pinocchio's ``constraintDynamics``.

    python -m benchmarks.verify_floating_base [STATES]

Prints the worst relative error (max norm, over the base part, the joints and the contact forces together) per
robot and check; exits 1 if any exceeds 1e-9. tests/test_floating_base.py, test_contacts.py and
test_compiled_floating.py run slices of this.
"""

from __future__ import annotations

import sys
import time
import warnings

import gtsam
import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts
from gtdyn.orderings import applicable

ROOT = "cmeel.prefix/share/example-robot-data/robots"
ROBOTS = {"solo12": "solo_description/robots/solo12.urdf",
          "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "talos (full)": "talos_data/robots/talos_full_v2.urdf",
          "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
          "go1": "go1_description/urdf/go1.urdf",
          "a1": "a1_description/urdf/a1.urdf",
          "icub": "icub_description/robots/icub.urdf"}
FEET = {"solo12": ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "anymal": ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
        "hyq": ["lf_foot", "rf_foot", "lh_foot", "rh_foot"], "go1": ["FL_foot", "FR_foot", "RL_foot", "RR_foot"],
        "a1": ["FL_foot", "FR_foot", "RL_foot", "RR_foot"], "talos (full)": ["left_sole_link", "right_sole_link"]}
TOLERANCE = 1e-9


def erd(relative: str) -> str:
    from importlib.metadata import distribution

    return str(distribution("example-robot-data").locate_file(f"{ROOT}/{relative}"))


def rel_err(x, ref) -> float:
    return float(np.max(np.abs(np.asarray(x) - ref)) / max(np.max(np.abs(ref)), 1e-300))


def random_base(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    quaternion = rng.normal(size=4)
    T = np.eye(4)
    T[:3, :3] = gtsam.Rot3.Quaternion(*(quaternion / np.linalg.norm(quaternion))).matrix()
    T[:3, 3] = rng.normal(size=3)
    return T, rng.normal(size=6), rng.normal(size=6)


def compiled(name: str, robot, pin, states: int) -> dict[str, float]:
    """Compiled forward (ABA, COLAMD) and inverse (RNEA, COLAMD) solvers against Pinocchio."""
    started = time.perf_counter()
    solvers = {("forward", o): gtdyn.compile(robot, "forward", ordering=o) for o in ("aba", "colamd")}
    solvers.update({("inverse", o): gtdyn.compile(robot, "inverse", ordering=o) for o in ("rnea", "colamd")})
    rng = np.random.default_rng(2027)
    worst = {"compiled forward": 0.0, "compiled inverse": 0.0}
    for _ in range(states):
        T, twist, accel = random_base(rng)
        q, v, x = rng.uniform(-1, 1, (3, robot.num_dofs))
        want = {"forward": np.concatenate(pin.aba(q, v, x, T, twist)),
                "inverse": np.concatenate(pin.rnea(q, v, x, T, twist, accel))}
        for (problem, _), solver in solvers.items():
            given = {"base_accel": accel} if problem == "inverse" else {}
            got = np.concatenate(solver(q, v, x, base_pose=T, base_twist=twist, **given))
            worst[f"compiled {problem}"] = max(worst[f"compiled {problem}"], rel_err(got, want[problem]))
    fallbacks = sum(s.fallbacks for s in solvers.values())
    print(f"{'':14s} compiled: forward {worst['compiled forward']:.1e}, inverse {worst['compiled inverse']:.1e} "
          f"(4 solvers, {fallbacks} fallbacks; compiles {sum(s.compile_seconds for s in solvers.values()):.1f} s)  "
          f"{time.perf_counter() - started:.0f} s", flush=True)
    return worst


def contacts(name: str, robot, pin, states: int) -> dict[str, float]:
    """Forward dynamics with feet on the ground, reference path and compiled ABA, against constraintDynamics."""
    if name not in FEET:
        return {}
    feet = FEET[name]
    cases = [(f"{k} feet", feet[:k], "point") for k in range(2, len(feet) + 1) if k >= len(feet) - 2]
    cases.append(("1 foot flat", feet[:1], "surface"))
    rng = np.random.default_rng(2028)
    worst = {}
    parts = []
    for label, frames, kind in cases:
        contact_list = [gtdyn.Contact(f, kind=kind) for f in frames]
        reference = PinocchioContacts(pin, frames, kind)
        solver = gtdyn.compile(robot, "forward", ordering="aba", contacts=contact_list)
        error = 0.0
        for _ in range(states):
            T, twist, _ = random_base(rng)
            q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
            want = np.concatenate(reference(q, v, tau, T, twist))
            r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=T, base_twist=twist, contacts=contact_list)
            forces = [w.local[3:] if kind == "point" else w.local for w in r.contact_wrenches]
            error = max(error, rel_err(np.concatenate([r.base_accel, r.qdd, *forces]), want),
                        rel_err(np.concatenate(solver(q, v, tau, base_pose=T, base_twist=twist)), want))
        worst[f"contacts, {label}"] = error
        parts.append(f"{label} {error:.1e}" + (f" ({solver.fallbacks} fallbacks)" if solver.fallbacks else ""))
    print(f"{'':14s} contacts vs constraintDynamics: {', '.join(parts)}", flush=True)
    return worst


def standing(name: str, robot, pin, states: int) -> dict[str, float]:
    """Every foot on the ground (points; a humanoid's soles flat) at the robot's reference configuration (every
    joint at zero or its nearest limit: Pinocchio's neutral, a common first state) at rest, and at ``states``
    states within 0.3 rad of it: the checked compiled ABA against constraintDynamics, and its fallbacks (the
    reference path answers those: slow, not wrong)."""
    if name not in FEET:
        return {}
    kind = "surface" if name.startswith("talos") else "point"
    reference = PinocchioContacts(pin, FEET[name], kind)
    solver = gtdyn.compile(robot, "forward", ordering="aba", contacts=[gtdyn.Contact(f, kind=kind) for f in FEET[name]])
    lower = np.array([max(j.lower, -np.pi) for j in robot.joints])
    upper = np.array([min(j.upper, np.pi) for j in robot.joints])
    neutral, zeros = np.clip(0.0, lower, upper), np.zeros(robot.num_dofs)
    rng = np.random.default_rng(2029)
    error = rel_err(np.concatenate(solver(neutral, zeros, zeros)), np.concatenate(reference(neutral, zeros, zeros)))
    at_neutral = solver.fallbacks
    for _ in range(states):
        T, twist, _ = random_base(rng)
        q = np.clip(neutral + rng.uniform(-0.3, 0.3, robot.num_dofs), lower, upper)
        v, tau = rng.uniform(-1, 1, (2, robot.num_dofs))
        want = np.concatenate(reference(q, v, tau, T, twist))
        error = max(error, rel_err(np.concatenate(solver(q, v, tau, base_pose=T, base_twist=twist)), want))
    print(f"{'':14s} standing, near the reference configuration: {error:.1e} ({at_neutral} fallbacks there, "
          f"{solver.fallbacks - at_neutral} of {states} near it)", flush=True)
    return {"standing": error}


def main(states: int = 20) -> int:
    worst_overall = 0.0
    for name, relative in ROBOTS.items():
        path = erd(relative)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)  # grippers' <mimic> joints
            robot = gtdyn.load_robot(path, base="floating", transmissions="independent")  # as Pinocchio
        pin = FreeFlyerPinocchio(path, robot)
        rng = np.random.default_rng(2026)
        worst = {"inverse": 0.0, "forward": 0.0}
        started = time.perf_counter()
        for k in range(states):
            quaternion = rng.normal(size=4)
            T = np.eye(4)
            T[:3, :3] = gtsam.Rot3.Quaternion(*(quaternion / np.linalg.norm(quaternion))).matrix()
            T[:3, 3] = rng.normal(size=3)
            twist, accel = rng.normal(size=(2, 6))
            q, v, qdd, tau = rng.uniform(-1, 1, (4, robot.num_dofs))
            wrench_ref, tau_ref = pin.rnea(q, v, qdd, T, twist, accel)
            accel_ref, qdd_ref = pin.aba(q, v, tau, T, twist)
            for ordering in applicable("inverse"):
                r = gtdyn.inverse_dynamics(robot, q, v, qdd, base_pose=T, base_twist=twist, base_accel=accel,
                                           ordering=ordering)
                worst["inverse"] = max(worst["inverse"], rel_err(np.concatenate([r.base_wrench, r.tau]),
                                                                 np.concatenate([wrench_ref, tau_ref])))
            for ordering in applicable("forward"):
                r = gtdyn.forward_dynamics(robot, q, v, tau, base_pose=T, base_twist=twist, ordering=ordering)
                worst["forward"] = max(worst["forward"], rel_err(np.concatenate([r.base_accel, r.qdd]),
                                                                 np.concatenate([accel_ref, qdd_ref])))
            print(f"\r{name}: state {k + 1}/{states}", end="", file=sys.stderr, flush=True)
        print("\r", end="", file=sys.stderr)
        print(f"{name:14s} {robot.num_dofs:3d} joints  inverse {worst['inverse']:.1e} ({len(applicable('inverse'))} "
              f"orderings)  forward {worst['forward']:.1e} ({len(applicable('forward'))} orderings)  "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        worst.update(compiled(name, robot, pin, states))
        worst.update(contacts(name, robot, pin, states))
        worst.update(standing(name, robot, pin, states))
        worst_overall = max(worst_overall, *worst.values())
    print(f"worst {worst_overall:.1e} over {states} states per robot (tolerance {TOLERANCE:g})")
    return 0 if worst_overall <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:])))
