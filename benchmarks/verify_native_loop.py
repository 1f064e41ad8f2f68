"""The native time loop against the Python loop, bit for bit, on more robots, methods and torque sources and on
longer runs than the suite affords: fixed-base arms and Talos, floating bases (Solo-12, Talos with a free flyer),
rigid contacts (Solo-12 and the bundled quadruped on four feet), an external wrench, and ``simulate_batch`` in
lanes against ``simulate`` alone.

    python -m benchmarks.verify_native_loop

Each case runs ``gtdyn.simulate`` twice, through the native loop and with it switched off (``native_loop.applies``
answering False: every step through the Python stepper), and compares every per-sample array of the two
trajectories (q, q̇, q̈, τ and what the robot has of base pose, twist, acceleration and contact forces) for exact
equality. A batch case compares each row of ``simulate_batch(..., lanes=True)`` with ``simulate`` alone. Writes
benchmarks/results/verify_native_loop.md; exits 1 if any array differs.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import warnings
from importlib.metadata import distribution

import numpy as np

import gtdyn
from gtdyn.bench.report import machine
from gtdyn.progress import Progress
from gtdyn.simulation import native_loop

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "verify_native_loop.md")
FIELDS = ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel", "contact_forces")
STEPS = 2000
SOLO_FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
SOLO_STANCE = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
QUADRUPED_FEET = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
QUADRUPED_STANCE = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)


def erd(relative: str) -> str:
    return str(distribution("example-robot-data")
               .locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))


def load(name: str, base: str = "fixed"):
    paths = {"talos": erd("talos_data/robots/talos_reduced.urdf"), "solo12": erd("solo_description/robots/solo12.urdf"),
             "ur5": erd("ur_description/urdf/ur5_robot.urdf"), "panda": erd("panda_description/urdf/panda.urdf")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        return gtdyn.load_robot(paths.get(name, name), base=base, transmissions="independent")  # as Pinocchio


def torques(robot, kind: str, steps: int, target):
    """A run's torque source: none, a vector, a row per step, a PD controller or a Python callable."""
    n, rng = robot.num_dofs, np.random.default_rng(7)
    inertia = np.diag(gtdyn.mass_matrix(robot, target)) if not robot.floating_base else np.full(n, 0.05)
    return {"none": None, "vector": 0.01 * np.ones(n), "rows": 0.01 * rng.normal(size=(steps, n)),
            "pd": gtdyn.PDController(robot, 25 * inertia, 5 * inertia, target),
            "callable": lambda t, q, v: 25 * inertia * (target - q) - 5 * inertia * v}[kind]


def cases() -> list[tuple[str, object, dict]]:
    """(label, robot, ``simulate`` arguments) per case."""
    out = []
    rng = np.random.default_rng(2026)
    for name in ("puma560", "ur5", "panda"):
        robot = load(name)
        q0 = rng.uniform(-0.5, 0.5, robot.num_dofs)
        kinds = ("none", "vector", "rows", "pd", "callable") if name == "puma560" else ("pd", "rows")
        for method in native_loop.METHODS:
            for kind in kinds:
                out.append((f"{name}, {method}, {kind}", robot, dict(q0=q0, v0=np.zeros(robot.num_dofs), method=method,
                                                                      tau=torques(robot, kind, STEPS, q0))))
    puma = load("puma560")
    out.append(("puma560, a held wrench on link3 (world-aligned), rk4, pd", puma,
                dict(q0=np.full(6, 0.1), v0=np.zeros(6), method="rk4", tau=torques(puma, "pd", STEPS, np.full(6, 0.1)),
                     external_wrenches={"link3": [0.002, 0.0, -0.004, 0.02, 0.04, 0.01]}, wrench_axes="world_aligned")))
    talos = load("talos")
    q0 = rng.uniform(-0.2, 0.2, talos.num_dofs)
    out.append(("talos, semi_implicit_euler, pd", talos, dict(q0=q0, v0=np.zeros(talos.num_dofs),
                                                             tau=torques(talos, "pd", STEPS, q0))))
    solo = load("solo12", "floating")
    twist = [0.3, -0.2, 0.4, 0.2, 0.0, -0.1]
    for method in native_loop.METHODS:
        for kind in ("none", "pd", "callable"):
            out.append((f"solo12 floating, {method}, {kind}", solo,
                        dict(q0=SOLO_STANCE, v0=rng.uniform(-0.5, 0.5, 12), method=method, base_twist=twist,
                             tau=torques(solo, kind, STEPS, SOLO_STANCE))))
    free_talos = load("talos", "floating")
    out.append(("talos floating, semi_implicit_euler, none", free_talos,
                dict(q0=rng.uniform(-0.2, 0.2, free_talos.num_dofs), v0=np.zeros(free_talos.num_dofs),
                     base_twist=twist, gravity=np.zeros(3))))
    for method in native_loop.METHODS:
        out.append((f"solo12 on four feet, {method}, pd", solo,
                    dict(q0=SOLO_STANCE, v0=np.zeros(12), method=method, contacts=[gtdyn.Contact(f) for f in SOLO_FEET],
                         tau=gtdyn.PDController(solo, 5.0, 0.2, SOLO_STANCE))))
    for checks in (True, False):  # at the reference configuration: the solver's twin answers (gtdyn.compiled.rescue)
        out.append((f"solo12 on four straight legs, semi_implicit_euler, pd{'' if checks else ', checks=False'}", solo,
                    dict(q0=np.zeros(12), v0=np.zeros(12), contacts=[gtdyn.Contact(f) for f in SOLO_FEET],
                         tau=gtdyn.PDController(solo, 5.0, 0.2, np.zeros(12)), checks=checks)))
    quadruped = load("quadruped", "floating")
    out.append(("quadruped on four feet, semi_implicit_euler, pd", quadruped,
                dict(q0=QUADRUPED_STANCE, v0=np.zeros(12), contacts=[gtdyn.Contact(f) for f in QUADRUPED_FEET],
                     tau=gtdyn.PDController(quadruped, 20.0, 1.0, QUADRUPED_STANCE))))
    return out


def both(robot, kwargs: dict):
    """(native, Python) trajectories of one run, and whether the native loop ran."""
    ran, original = [], native_loop.run_loop

    def counted(*args, **kw):
        ran.append(True)
        return original(*args, **kw)

    native_loop.run_loop = counted
    try:
        native = gtdyn.simulate(robot, dt=1e-3, steps=STEPS, progress=False, **kwargs)
    finally:
        native_loop.run_loop = original
    applies, native_loop.applies = native_loop.applies, (lambda *a, **k: False)
    try:
        python = gtdyn.simulate(robot, dt=1e-3, steps=STEPS, progress=False, **kwargs)
    finally:
        native_loop.applies = applies
    return native, python, bool(ran)


def differing(a, b) -> list[str]:
    """The per-sample arrays of trajectories (or batches) ``a`` and ``b`` that are not equal bit for bit."""
    return [f for f in FIELDS if getattr(a, f) is not None and not np.array_equal(getattr(a, f), getattr(b, f))]


def batch_cases() -> list[tuple[str, object, np.ndarray, dict]]:
    solo = load("solo12", "floating")
    rng = np.random.default_rng(5)
    stances = SOLO_STANCE + rng.uniform(-0.02, 0.02, (8, 12))
    puma = load("puma560")
    return [("puma560, 8 runs in lanes, rk4, pd", puma, rng.uniform(-0.5, 0.5, (8, 6)),
             dict(method="rk4", tau=torques(puma, "pd", STEPS, np.zeros(6)))),
            ("solo12 floating, 8 runs in lanes, semi_implicit_euler, none", solo, stances,
             dict(base_twist=[0.3, -0.2, 0.4, 0.2, 0.0, -0.1])),
            ("solo12 on four feet, 8 runs in lanes, semi_implicit_euler, pd", solo, stances,
             dict(contacts=[gtdyn.Contact(f) for f in SOLO_FEET], tau=gtdyn.PDController(solo, 5.0, 0.2, SOLO_STANCE))),
            # at and a few nanoradians from straight legs: every lane asks the solver's twin (gtdyn.compiled.rescue)
            ("solo12 on four straight legs, 8 runs in lanes, semi_implicit_euler, pd", solo,
             np.outer(rng.uniform(-1e-8, 1e-8, 8), np.ones(12)) * (np.arange(8) > 0)[:, None],
             dict(contacts=[gtdyn.Contact(f) for f in SOLO_FEET],
                  tau=gtdyn.PDController(solo, 5.0, 0.2, np.zeros(12))))]


def main() -> int:
    started = time.perf_counter()
    rows, failures = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
        singles, batches = cases(), batch_cases()
        with Progress("verify_native_loop", len(singles) + len(batches), enabled=True, after=0.0, every=0.0,
                      unit="cases") as report:
            for k, (label, robot, kwargs) in enumerate(singles):
                native, python, ran = both(robot, kwargs)
                bad = differing(native, python) + ([] if ran else ["(the native loop did not run)"])
                failures += bool(bad)
                rows.append(f"| {label} | {STEPS} | {'native' if ran else '—'} | {', '.join(bad) or 'none'} |")
                report.at(k + 1)
            for k, (label, robot, Q0, kwargs) in enumerate(batches):
                V0 = np.zeros_like(Q0)
                batch = gtdyn.simulate_batch(robot, Q0, V0, dt=1e-3, steps=STEPS, lanes=True, **kwargs)
                bad = sorted({f for i in range(len(Q0)) for f in differing(
                    batch[i], gtdyn.simulate(robot, Q0[i], V0[i], dt=1e-3, steps=STEPS, progress=False, **kwargs))})
                failures += bool(bad)
                rows.append(f"| {label} | {STEPS} | lanes | {', '.join(bad) or 'none'} |")
                report.at(len(singles) + k + 1)
    seconds = time.perf_counter() - started
    verdict = f"{len(rows)} cases, {failures} with an array that differs; {seconds:.0f} s"
    text = "\n".join(["# The native time loop against the Python loop, bit for bit", "",
                      f"`python -m benchmarks.verify_native_loop`; {datetime.date.today().isoformat()}; "
                      f"{machine([f'gtdyn {gtdyn.__version__}'])}", "", __doc__.split("\n\n", 2)[2].strip(), "",
                      "| case | steps | loop | arrays that differ |", "|---|---|---|---|", *rows, "", verdict, ""])
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
