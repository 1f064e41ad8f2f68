"""Floating-base dynamics against Pinocchio's free flyer: inverse dynamics (``pin.rnea``) and forward dynamics
(``pin.aba``) at random states — random base pose, twist and acceleration, joints in [−1, 1] — in every named
ordering, on legged robots and humanoids of example-robot-data loaded with ``base="floating"``.

    python -m benchmarks.verify_floating_base [STATES]

Prints the worst relative error (max norm, over the base part and the joints together) per robot and problem;
exits 1 if any exceeds 1e-9. tests/test_floating_base.py runs a slice of this.
"""

from __future__ import annotations

import sys
import time
import warnings

import gtsam
import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio
from gtdyn.orderings import applicable

ROOT = "cmeel.prefix/share/example-robot-data/robots"
ROBOTS = {"solo12": "solo_description/robots/solo12.urdf",
          "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "talos (full)": "talos_data/robots/talos_full_v2.urdf",
          "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
          "go1": "go1_description/urdf/go1.urdf",
          "a1": "a1_description/urdf/a1.urdf",
          "icub": "icub_description/robots/icub.urdf"}
TOLERANCE = 1e-9


def erd(relative: str) -> str:
    from importlib.metadata import distribution

    return str(distribution("example-robot-data").locate_file(f"{ROOT}/{relative}"))


def rel_err(x, ref) -> float:
    return float(np.max(np.abs(np.asarray(x) - ref)) / max(np.max(np.abs(ref)), 1e-300))


def main(states: int = 20) -> int:
    worst_overall = 0.0
    for name, relative in ROBOTS.items():
        path = erd(relative)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)  # grippers' <mimic> joints
            robot = gtdyn.load_robot(path, base="floating")
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
        worst_overall = max(worst_overall, *worst.values())
    print(f"worst {worst_overall:.1e} over {states} states per robot (tolerance {TOLERANCE:g})")
    return 0 if worst_overall <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:])))
