"""The compiled mass matrix against Pinocchio's CRBA: ``gtdyn.compile_mass_matrix`` (inverse dynamics in the RNEA
ordering, each column traced on its unit push: ``gtdyn.compiled.quantities``) and ``pin.crba`` on the same
configuration, interleaved in one process, on the arms, Talos (fixed and floating) and Solo-12
(floating); the compiled bias forces h(q, q̇) (``gtdyn.compile_bias_forces``) against
``pin.nonLinearEffects``; and the compiled centre of mass, its Jacobian, the centroidal momentum and the kinetic and
potential energies (``gtdyn.compile_center_of_mass``) against ``pin.centerOfMass``, ``pin.jacobianCenterOfMass``,
``pin.computeCentroidalMomentum``, ``pin.computeKineticEnergy`` and ``pin.computePotentialEnergy``; and one frame's
placement and Jacobian (``gtdyn.compile_frames``, local axes) against ``pin.computeFrameJacobian`` (the forward
kinematics and the frame's Jacobian).

    python -m benchmarks.quantities

Per call from Python: ``mass(q)`` (checked, and ``checks=False``) against ``pin.crba(model, data, q)`` with
Pinocchio's configuration vector prepared outside the timing (its CRBA fills the upper triangle; ours returns
the whole symmetric matrix). Batches of 1000 states: ``mass.batch(Q)`` per state against a Python loop over
``pin.crba`` (Pinocchio has no parallel CRBA). Medians of paired samples. The cold compile (no cache) and the
code's size: the ``mass`` function's operations (the columns), and the whole program's. Accuracy: the largest
relative difference from Pinocchio's M over the batch. h: one checked call against ``pin.nonLinearEffects``
at a random q̇. c, J_c, h_G, T and U: one call each against Pinocchio's (whose Jacobian call computes c too); one
frame's T and J (``FRAME``) by one call each side. Writes benchmarks/results/quantities.md.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

import gtdyn
from benchmarks.derivatives import load  # robots by name, and their URDF paths
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved, paired_ratio
from gtdyn.progress import Progress

REPEAT, INNER, WARMUP, BATCH = 40, 50, 50, 1000
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "quantities.md")
CASES = [("puma560", False), ("ur5", False), ("panda", False), ("talos", False), ("talos", True), ("solo12", True)]
FRAME = {"puma560": "flange", "ur5": "tool0", "panda": "panda_hand", "talos": "gripper_left_base_link",
         "solo12": "FL_FOOT"}  # the frame whose placement and Jacobian are timed


def robot_and_reference(name: str, floating: bool):
    """The gtdyn robot and Pinocchio's model of the same file (a free flyer on a floating base)."""
    robot, path = load(name, floating=floating)
    return robot, (FreeFlyerPinocchio if floating else PinocchioModel)(path, robot)


def pinocchio_mass(ref, q) -> np.ndarray:
    """Pinocchio's M in gtdyn's coordinates (a floating base's [ω; v] first), symmetric."""
    if isinstance(ref, FreeFlyerPinocchio):
        M = ref.pin.crba(ref.model, ref.data, ref.configuration(q))
        M = np.triu(M) + np.triu(M, 1).T
        order = ref.velocity_order()
        return M[np.ix_(order, order)]
    return ref.mass_matrix(q)


def measure(name: str, floating: bool) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot, ref = robot_and_reference(name, floating)
    started = time.perf_counter()
    mass = gtdyn.compile_mass_matrix(robot, use_cache=False)
    compile_s = time.perf_counter() - started
    unchecked = gtdyn.compile_mass_matrix(robot, checks=False)
    rng = np.random.default_rng(0)
    Q = rng.uniform(-0.5, 0.5, (BATCH, robot.num_dofs))
    q = Q[0]
    pin, model, data = ref.pin, ref.model, ref.data
    configuration = ref.configuration(q)
    configurations = [ref.configuration(row) for row in Q]

    def pinocchio_loop():
        for c in configurations:
            pin.crba(model, data, c)

    single = measure_interleaved({"ours": lambda: mass(q), "unchecked": lambda: unchecked(q),
                                  "pin": lambda: pin.crba(model, data, configuration)}, REPEAT, INNER, WARMUP)
    bias = gtdyn.compile_bias_forces(robot)
    v = rng.uniform(-1, 1, robot.num_dofs)
    base = {"base_twist": np.zeros(6)} if floating else {}
    velocity = ref.tangent(v, np.zeros(6)) if floating else ref.tangent(v)
    h = measure_interleaved({"ours": lambda: bias(q, v, **base),
                             "pin": lambda: pin.nonLinearEffects(model, data, configuration, velocity)},
                            REPEAT, INNER, WARMUP)
    com = gtdyn.compile_center_of_mass(robot)
    pose = {"base_pose": np.eye(4)} if floating else {}
    c = measure_interleaved({"ours": lambda: com(q, **pose), "jacobian": lambda: com.jacobian(q, **pose),
                             "pin": lambda: pin.centerOfMass(model, data, configuration),
                             "pin jacobian": lambda: pin.jacobianCenterOfMass(model, data, configuration),
                             "momentum": lambda: com.momentum(q, v, **pose, **base),
                             "pin momentum": lambda: pin.computeCentroidalMomentum(model, data, configuration,
                                                                                   velocity),
                             "kinetic": lambda: com.kinetic_energy(q, v, **pose, **base),
                             "pin kinetic": lambda: pin.computeKineticEnergy(model, data, configuration, velocity),
                             "potential": lambda: com.potential_energy(q, **pose),
                             "pin potential": lambda: pin.computePotentialEnergy(model, data, configuration)},
                            REPEAT, INNER, WARMUP)
    frame, frame_id = gtdyn.compile_frames(robot, FRAME[name]), model.getFrameId(FRAME[name])
    f = measure_interleaved({"ours": lambda: frame.placement_jacobian(q, **pose),
                             "pin": lambda: pin.computeFrameJacobian(model, data, configuration, frame_id,
                                                                     pin.ReferenceFrame.LOCAL)},
                            REPEAT, INNER, WARMUP)
    batch = measure_interleaved({"ours": lambda: mass.batch(Q), "unchecked": lambda: unchecked.batch(Q),
                                 "pin": pinocchio_loop}, REPEAT // 4, 1, 2)
    ours = mass.batch(Q)
    error = max(np.max(np.abs(M - pinocchio_mass(ref, row))) / np.max(np.abs(pinocchio_mass(ref, row)))
                for M, row in zip(ours, Q))
    return dict(robot=f"{name}{' (floating)' if floating else ''}", nv=robot.nv, compile=compile_s,
                mass_ops=mass.operations["mass"], ops=sum(mass.operations.values()),
                pin_us=single["pin"].median_us, call=paired_ratio(single["ours"], single["pin"]),
                call_us=single["ours"].median_us, unchecked=paired_ratio(single["unchecked"], single["pin"]),
                batch=paired_ratio(batch["ours"], batch["pin"]),
                batch_unchecked=paired_ratio(batch["unchecked"], batch["pin"]),
                batch_us=batch["ours"].median_us / BATCH, error=error, fallbacks=mass.fallbacks,
                bias=paired_ratio(h["ours"], h["pin"]), bias_us=h["ours"].median_us, pin_bias_us=h["pin"].median_us,
                com=paired_ratio(c["ours"], c["pin"]), com_us=c["ours"].median_us,
                com_jacobian=paired_ratio(c["jacobian"], c["pin jacobian"]), com_jacobian_us=c["jacobian"].median_us,
                momentum=paired_ratio(c["momentum"], c["pin momentum"]), momentum_us=c["momentum"].median_us,
                kinetic=paired_ratio(c["kinetic"], c["pin kinetic"]), kinetic_us=c["kinetic"].median_us,
                potential=paired_ratio(c["potential"], c["pin potential"]), potential_us=c["potential"].median_us,
                frame=paired_ratio(f["ours"], f["pin"]), frame_us=f["ours"].median_us)


def main() -> None:
    rows = []
    with Progress("quantities", len(CASES), enabled=True, after=0.0, every=0.0, unit="robots") as report:
        for k, (name, floating) in enumerate(CASES):
            rows.append(measure(name, floating))
            report.at(k + 1)
    lines = ["# Compiled whole-body quantities against Pinocchio: M, h, c, J_c, h_G and the energies", "",
             f"`python -m benchmarks.quantities`; {machine_description(REPEAT, INNER, WARMUP)}", "",
             __doc__.split("\n\n", 2)[2].strip(), "",
             "| robot | nv | compile s | `mass` operations / program | Pinocchio µs | call µs | call checked / "
             "unchecked × `pin.crba` | batch µs per state | batch checked / unchecked × `pin.crba` loop | "
             "largest relative difference | fallbacks | h µs / Pinocchio µs (×) | c µs (×) | J_c µs (×) | h_G µs (×) | "
             "T µs (×) | U µs (×) | frame T, J µs (×) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['nv']} | {r['compile']:.2f} | {r['mass_ops']:,} / {r['ops']:,} | "
                     f"{r['pin_us']:.2f} | {r['call_us']:.2f} | {r['call']:.2f}× / {r['unchecked']:.2f}× | "
                     f"{r['batch_us']:.2f} | {r['batch']:.2f}× / {r['batch_unchecked']:.2f}× | {r['error']:.1e} | "
                     f"{r['fallbacks']} | {r['bias_us']:.2f} / {r['pin_bias_us']:.2f} ({r['bias']:.2f}×) | "
                     f"{r['com_us']:.2f} ({r['com']:.2f}×) | {r['com_jacobian_us']:.2f} ({r['com_jacobian']:.2f}×) | "
                     f"{r['momentum_us']:.2f} ({r['momentum']:.2f}×) | {r['kinetic_us']:.2f} ({r['kinetic']:.2f}×) | "
                     f"{r['potential_us']:.2f} ({r['potential']:.2f}×) | {r['frame_us']:.2f} ({r['frame']:.2f}×) |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
