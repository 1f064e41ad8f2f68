"""Compiled floating-base solvers against Pinocchio, per call, interleaved in one run: forward dynamics (ABA)
against the free flyer's ``pin.aba``, inverse dynamics (RNEA) against ``pin.rnea``, and forward dynamics with
feet on the ground against ``pin.constraintDynamics`` (exact, no proximal regularisation) — each gtdyn solver
checked (refinement, condition estimate, certificate) and unchecked (``checks=False``, Pinocchio's contract);
and forward dynamics of 1,000 states in one ``batch`` call against ``pin.abaInParallel``, one thread each.

    python -m benchmarks.floating [ROBOT ...]        # solo12 anymal talos (default)

Medians of 30 samples × 200 calls after 100 warm-up calls, all solvers of a robot interleaved; gtdyn is timed
through its Python call (arguments in, tuple out), Pinocchio on vectors already in its order. Writes
benchmarks/results/floating.md.
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.metadata import distribution

import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved

ROBOTS = {"solo12": ("solo_description/robots/solo12.urdf", ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "point"),
          "anymal": ("anymal_b_simple_description/robots/anymal.urdf", ["LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"],
                     "point"),
          "talos": ("talos_data/robots/talos_full_v2.urdf", ["left_sole_link", "right_sole_link"], "surface")}
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "floating.md")


def robot_rows(name: str) -> list[str]:
    relative, feet, kind = ROBOTS[name]
    path = str(distribution("example-robot-data")
               .locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base="floating", transmissions="independent")  # as Pinocchio
    ref = FreeFlyerPinocchio(path, robot)
    contacts = [gtdyn.Contact(f, kind=kind) for f in feet]
    print(f"{name}: compiling 6 solvers …", file=sys.stderr, flush=True)
    solvers = {}
    for checks in (True, False):  # batches state by state (lanes=False): the floating base's cost, not the lanes'
        solvers["forward", checks] = gtdyn.compile(robot, "forward", ordering="aba", checks=checks, lanes=False)
        solvers["inverse", checks] = gtdyn.compile(robot, "inverse", ordering="rnea", checks=checks)
        solvers["contacts", checks] = gtdyn.compile(robot, "forward", ordering="aba", checks=checks, contacts=contacts)
    rng = np.random.default_rng(0)
    q, v, x = rng.uniform(-1, 1, (3, robot.num_dofs))
    twist, accel = rng.normal(size=(2, 6))
    T = np.eye(4)
    pin, model, data = ref.pin, ref.model, ref.data
    qp, vp, xp, ap = ref.configuration(q, T), ref.tangent(v, twist), ref.tangent(x), ref.tangent(x, accel)
    constrained = PinocchioContacts(ref, feet, kind)
    fns = {}
    for checks in (True, False):
        label = "checked" if checks else "unchecked"
        fns[f"forward {label}"] = lambda s=solvers["forward", checks]: s(q, v, x, base_pose=T, base_twist=twist)
        fns[f"inverse {label}"] = lambda s=solvers["inverse", checks]: s(q, v, x, base_pose=T, base_twist=twist,
                                                                        base_accel=accel)
        fns[f"contacts {label}"] = lambda s=solvers["contacts", checks]: s(q, v, x, base_pose=T, base_twist=twist)
    fns["pin aba"] = lambda: pin.aba(model, data, qp, vp, xp)
    fns["pin rnea"] = lambda: pin.rnea(model, data, qp, vp, ap)
    fns["pin constraintDynamics"] = lambda: constrained.solve(qp, vp, xp)
    print(f"{name}: timing {len(fns)} functions, interleaved …", file=sys.stderr, flush=True)
    us = {k: t.median_us for k, t in measure_interleaved(fns, 30, 200, 100).items()}
    batch = batch_row(name, robot, ref, solvers["forward", True], solvers["forward", False])
    contact_text = f"{len(feet)} {kind} contacts"
    rows = []
    for problem, reference, what in (("forward", "pin aba", "forward (ABA)"), ("inverse", "pin rnea", "inverse (RNEA)"),
                                     ("contacts", "pin constraintDynamics", f"forward, {contact_text} (ABA)")):
        rows.append(f"| {name} ({robot.num_dofs} + 6) | {what} | {us[f'{problem} checked']:.2f} "
                    f"({us[f'{problem} checked'] / us[reference]:.2f}×) | {us[f'{problem} unchecked']:.2f} "
                    f"({us[f'{problem} unchecked'] / us[reference]:.2f}×) | {reference} {us[reference]:.2f} |")
    return rows + [batch]


def batch_row(name: str, robot, ref, checked, unchecked, count: int = 1000) -> str:
    """µs per state of ``batch`` on one thread against ``pin.abaInParallel`` on one thread, same states."""
    rng = np.random.default_rng(1)
    Q, V, X = rng.uniform(-1, 1, (3, count, robot.num_dofs))
    twists = rng.normal(size=(count, 6))
    poses = np.tile(np.eye(4), (count, 1, 1))
    pin = ref.pin
    qs = np.array([ref.configuration(Q[k]) for k in range(count)]).T
    vs = np.array([ref.tangent(V[k], twists[k]) for k in range(count)]).T
    ts = np.array([ref.tangent(X[k]) for k in range(count)]).T
    out = np.zeros((ref.model.nv, count))
    pool = pin.ModelPool(ref.model, 1)
    fns = {"checked": lambda: checked.batch(Q, V, X, base_pose=poses, base_twist=twists),
           "unchecked": lambda: unchecked.batch(Q, V, X, base_pose=poses, base_twist=twists),
           "pin": lambda: pin.abaInParallel(1, pool, qs, vs, ts, out)}
    us = {k: t.median_us / count for k, t in measure_interleaved(fns, 15, 1, 2).items()}
    return (f"| {name} ({robot.num_dofs} + 6) | forward (ABA), batch of {count}, 1 thread, per state | "
            f"{us['checked']:.2f} ({us['checked'] / us['pin']:.2f}×) | {us['unchecked']:.2f} "
            f"({us['unchecked'] / us['pin']:.2f}×) | pin abaInParallel {us['pin']:.2f} |")


def main(names: list[str]) -> None:
    header = ["| robot (dof) | problem | gtdyn checked µs (× Pinocchio) | gtdyn unchecked µs (×) | Pinocchio µs |",
              "|---|---|---|---|---|"]
    rows = [row for name in names for row in robot_rows(name)]
    text = "\n".join(["# Compiled floating-base solvers against Pinocchio", "",
                      f"`python -m benchmarks.floating {' '.join(names)}` on {machine_description(30, 200, 100)}.", "",
                      *header, *rows, ""])
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:] or list(ROBOTS))
