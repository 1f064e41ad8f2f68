"""The inverse operational-space inertia Λ⁻¹ = J M⁻¹ Jᵀ (``gtdyn.operational_space_inverse_inertia``, issue 23)
against independent references, in every ordering and both methods:

* Pinocchio's J M⁻¹ Jᵀ (LOCAL ``getFrameJacobian``, ``computeMinverse``) on the PUMA 560, the UR5, Talos
  (talos_reduced: both grippers and both soles together, on a fixed base and on its free flyer) and Solo-12 on its
  free flyer (four feet), at random states (joints within their limits, a random base pose); and Pinocchio's
  ``computeDelassusMatrix`` (6D contacts at the frames; Solo-12: 3D, the feet's linear blocks) at the same states;
* on transmissions and a loop, J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ of the unconstrained model projected onto the coupling, with G
  written by hand and M, J from Pinocchio (tests/test_operational.py's ``transmission_case`` and
  ``geared_four_bar_case``): the geared rotor, a belt, a differential, a fully geared 3-link chain, and the geared
  four-bar (forward solves and compiled: the reference path's elimination refuses closed loops).

``gtdyn.compile_inverse_osim`` (checked) runs in the orderings ``COMPILED`` on all of them.

Orderings: every one ``gtdyn.orderings.applicable("forward")`` lists, and paper 003's names "efpa" and
"cluster_efpa". The error is max|Λ⁻¹ − reference| / max|reference|; tolerance 1e-9.

    python -m benchmarks.verify_operational [STATES]      (default 5 random states per robot)

Writes benchmarks/results/verify_operational.md; exits 1 if any error exceeds the tolerance.
tests/test_operational.py runs a slice of this (the PUMA in ten orderings, the UR5 in three, Solo-12 by EFPA, the
belt and the geared four-bar).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import gtdyn
from benchmarks.derivatives import load, states
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.bench.report import machine_description
from gtdyn.orderings import applicable
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from references import random_base, rel_err  # noqa: E402  (the tests' own references, one copy)
from test_operational import (  # noqa: E402
    geared_four_bar_case,
    pinocchio_delassus,
    pinocchio_inverse_inertia,
    transmission_case,
)

TOLERANCE = 1e-9
METHODS = ("elimination", "forward solves", "compiled")
COMPILED = ("efpa", "cluster_efpa", "crba", "colamd")  # gtdyn.compile_inverse_osim: a few orderings (compiles take s)
ORDERINGS = applicable("forward") + ["efpa", "cluster_efpa"]
TALOS = ["gripper_left_base_link", "gripper_right_base_link", "left_sole_link", "right_sole_link"]
# (label, example-robot-data name for benchmarks.derivatives.load, floating base, frames, Delassus contact kind)
ROBOTS = [("PUMA 560", "puma560", False, ["flange", "link3"], "surface"),
          ("UR5", "ur5", False, ["tool0", "forearm_link"], "surface"),
          ("Talos (fixed base)", "talos", False, TALOS, "surface"),
          ("Talos (free flyer)", "talos", True, TALOS, "surface"),
          ("Solo-12 (free flyer)", "solo12", True, ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "point")]
TRANSMISSIONS = ["geared", "belt", "differential", "geared chain"]


def against_pinocchio(label, name, floating, frames, kind, count, seed, progress) -> tuple[dict, float]:
    """Worst error per (ordering, method) over ``count`` random states, and the worst against the Delassus matrix."""
    robot, path = load(name, floating)
    ref = (FreeFlyerPinocchio if floating else PinocchioModel)(path, robot)
    rng = np.random.default_rng(seed)
    worst = {(ordering, method): 0.0 for ordering in ORDERINGS for method in METHODS[:2]}
    compiled = {ordering: gtdyn.compile_inverse_osim(robot, frames, ordering=ordering) for ordering in COMPILED}
    worst.update({(ordering, "compiled"): 0.0 for ordering in COMPILED})
    delassus = 0.0
    for k, (q, _, _) in enumerate(states(robot, count, seed=seed)):
        pose = random_base(rng)[0] if floating else None
        config = ref.configuration(q, pose) if floating else ref.configuration(q)
        want = pinocchio_inverse_inertia(ref, config, frames)
        for ordering, method in worst:
            got = compiled[ordering](q) if method == "compiled" else gtdyn.operational_space_inverse_inertia(
                robot, q, frames, base_pose=pose, ordering=ordering, method=method)
            worst[ordering, method] = max(worst[ordering, method], rel_err(got, want))
            if ordering == ORDERINGS[0] and method == "elimination":
                D, rows = pinocchio_delassus(ref, config, frames, kind)
                delassus = max(delassus, rel_err(got[np.ix_(rows, rows)], D))
        progress.step(f"{label}: state {k + 1}/{count}")
    return worst, delassus


def projected(count, progress) -> dict:
    """Worst error per (case, ordering, method) against J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ."""
    worst = {}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for case in TRANSMISSIONS + ["geared four-bar"]:
            methods = ("forward solves", "compiled") if case == "geared four-bar" else METHODS
            for k in range(count):
                if case == "geared four-bar":
                    crank = np.random.default_rng(k).uniform(-1.2, 1.2)
                    robot, q, frames, want = geared_four_bar_case(folder, crank)
                else:
                    robot, q, frames, want = transmission_case(folder, case, seed=k)
                for ordering in ORDERINGS:
                    for method in methods:
                        if method == "compiled" and ordering not in COMPILED:
                            continue
                        got = gtdyn.compile_inverse_osim(robot, frames, ordering=ordering)(q) \
                            if method == "compiled" else gtdyn.operational_space_inverse_inertia(
                                robot, q, frames, ordering=ordering, method=method)
                        key = (case, ordering, method)
                        worst[key] = max(worst.get(key, 0.0), rel_err(got, want))
            progress.step(case)
    return worst


def write(rows, transmission_rows, count, seconds) -> None:
    mark = lambda e: "ok" if e <= TOLERANCE else "**over**"  # noqa: E731
    lines = ["# Operational-space inverse inertia Λ⁻¹ = J M⁻¹ Jᵀ: verification", "",
             f"`python -m benchmarks.verify_operational {count}`; "
             + machine_description(1, 1, 0).split("; medians")[0] + f"; {seconds:.0f} s", "",
             f"Relative error max|Λ⁻¹ − ref| / max|ref|, worst over {count} random states per robot (joints within "
             "their limits, a random base pose), tolerance 1e-9. Orderings: " + ", ".join(ORDERINGS)
             + " — each by elimination and by forward solves; compiled (`gtdyn.compile_inverse_osim`, checked) in "
             + ", ".join(COMPILED) + ". Pinocchio: J M⁻¹ Jᵀ from LOCAL `getFrameJacobian` "
             "and `computeMinverse`; Delassus: `computeDelassusMatrix` (μ = 0) for contacts at the frames, 6D "
             "(3D at Solo-12's feet: the linear blocks), against the elimination in the first ordering.", "",
             "## Worst per robot", "",
             "| robot | nv | frames | elimination | forward solves | compiled | Delassus | |",
             "|---|---|---|---|---|---|---|---|"]
    for label, n, frames, worst, delassus in rows:
        by_method = {m: max(e for (_, method), e in worst.items() if method == m) for m in METHODS}
        lines.append(f"| {label} | {n} | {', '.join(frames)} | {by_method['elimination']:.1e} | "
                     f"{by_method['forward solves']:.1e} | {by_method['compiled']:.1e} | {delassus:.1e} | "
                     f"{mark(max(*by_method.values(), delassus))} |")
    lines += ["", "## Per ordering (elimination / forward solves / compiled)", "",
              "| ordering | " + " | ".join(label for label, *_ in rows) + " |", "|---|" + "---|" * len(rows)]
    for ordering in ORDERINGS:
        lines.append(f"| {ordering} | " + " | ".join(
            " / ".join(f"{worst[ordering, m]:.1e}" if (ordering, m) in worst else "—" for m in METHODS)
            for *_, worst, _ in rows) + " |")
    cases = list(dict.fromkeys(case for case, _, _ in transmission_rows))
    lines += ["", "## Transmissions and a loop: against J G (Gᵀ M G)⁻¹ Gᵀ Jᵀ", "",
              "M and the LOCAL frame Jacobians J of the unconstrained model from Pinocchio, G = ∂q/∂q_ind by hand "
              "(tests/test_operational.py: `transmission_case`, `geared_four_bar_case`; the four-bar's G from the "
              "parallelogram's geometry, checked against Pinocchio's loop-closure Jacobian). The geared four-bar "
              "by forward solves and compiled (the reference path's elimination refuses closed loops).", "",
              "| case | frames | elimination | forward solves | compiled | |", "|---|---|---|---|---|---|"]
    frames_of = {"geared": "l2, rotor", "belt": "tip, rotor1", "differential": "tip, rotor1, rotor2",
                 "geared chain": "l3, r3, r2", "geared four-bar": "coupler, rocker, rotor"}
    for case in cases:
        errors = {m: [e for (c, _, method), e in transmission_rows.items() if c == case and method == m]
                  for m in METHODS}
        cells = [f"{max(errors[m]):.1e}" if errors[m] else "—" for m in METHODS]
        worst = max(max(v) for v in errors.values() if v)
        lines.append(f"| {case} | {frames_of[case]} | {' | '.join(cells)} | {mark(worst)} |")
    with open(os.path.join(RESULTS, "verify_operational.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main(count: int = 5) -> int:
    started = time.perf_counter()
    rows = []
    with warnings.catch_warnings(), Progress("verify_operational", len(ROBOTS) * count + len(TRANSMISSIONS) + 1,
                                             enabled=True) as progress:
        warnings.simplefilter("ignore", gtdyn.ModelWarning)  # Talos's grippers' <mimic> joints, read independent
        for seed, (label, name, floating, frames, kind) in enumerate(ROBOTS):
            t = time.perf_counter()
            worst, delassus = against_pinocchio(label, name, floating, frames, kind, count, seed, progress)
            n = load(name, floating)[0].num_dofs + (6 if floating else 0)
            rows.append((label, n, frames, worst, delassus))
            print(f"{label:22s} worst {max(worst.values()):.1e} (Delassus {delassus:.1e})  "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
        transmission_rows = projected(count, progress)
    seconds = time.perf_counter() - started
    write(rows, transmission_rows, count, seconds)
    worst = max(max(max(w.values()), d) for *_, w, d in rows)
    worst_projected = max(transmission_rows.values())
    print(f"worst {worst:.1e} against Pinocchio, {worst_projected:.1e} against the projected reference "
          f"(tolerance {TOLERANCE:g}); {seconds:.0f} s; wrote {os.path.join(RESULTS, 'verify_operational.md')}")
    return 0 if max(worst, worst_projected) <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:])))
