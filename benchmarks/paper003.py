"""Paper 003 §IX on compiled plans: the inverse operational-space inertia (C-EFPA against the projection method
and sparse factorization: Table IV, Fig. 13) and constrained inverse dynamics (C-RNEA against the projected
RNEA: Table II), next to the C-ABA study of ``benchmarks/transmissions.py``.

    python -m benchmarks.paper003 [--quick]

The same systems as ``benchmarks/transmissions.py`` (geared and belt-driven chains of 2–32 links, the
Mini-Cheetah-like leg, the bundled four-, five- and six-bar) plus the PUMA 560 and the floating quadruped.

* Λ⁻¹ (``gtdyn.compile_inverse_osim``, unchecked) of the chains' tip link, the leg's shank, the loops' last link,
  the PUMA's flange and the quadruped's four feet, in the orderings of the forward graph that paper 003's
  methods are: ``cluster_efpa`` (C-EFPA: the articulated-body ordering with coupled joints as clusters), ``crba``
  (the projection method: the mass matrix, projected onto the independent coordinates, factored densely —
  Λ⁻¹ = J G (Gᵀ H G)⁻¹ Gᵀ Jᵀ), ``projection`` (gtdyn's ordering of that name: the constraints first, then the
  articulated-body ordering on what remains), ``lagrange`` (constraint forces last) and the sparse
  factorizations ``colamd`` and ``nd``.
* Inverse dynamics (``gtdyn.compile``, unchecked): ``cluster_rnea`` (C-RNEA) against ``lagrange`` (RNEA on the
  spanning tree, the transmissions' constraint forces eliminated last: the tree's torques projected onto the
  coupling, paper 003's projected RNEA) and ``colamd``.

Medians of 20 samples × 200 calls, each system's orderings interleaved, one consistent sample state; × is the
ratio to C-EFPA (C-RNEA). Writes benchmarks/results/paper003.md and paper003_scaling.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np

import gtdyn
from benchmarks.transmissions import LEG, chain, plot_scaling
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved
from gtdyn.compiled.states import sample_states
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
OSIM_ORDERINGS = ("cluster_efpa", "crba", "projection", "lagrange", "colamd", "nd")
INVERSE_ORDERINGS = ("cluster_rnea", "lagrange", "colamd")
REPEAT, INNER, WARMUP = 20, 200, 50
OVER = "over budget"  # an ordering whose compile the memory budget refuses (gtdyn.BudgetError)
# paper 003 §IX: how much slower than C-EFPA (Table IV) and than C-RNEA (Table II) its baselines ran
PAPER = {"projection vs C-EFPA (Table IV)": "+6 % to +107 %", "projected RNEA vs C-RNEA (Table II)": "+22 % to +38 %"}


def systems(folder: str, sizes) -> list[tuple[str, gtdyn.Robot, list[str], str]]:
    """(label, robot, frames, family) for every system of the study."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        for kind in ("geared", "belt"):
            for n in sizes:
                path = os.path.join(folder, f"{kind}{n}.urdf")
                with open(path, "w") as f:
                    f.write(chain(n, kind))
                out.append((f"{kind} chain", gtdyn.load_robot(path, transmissions="exact"), [f"l{n}"], kind))
        path = os.path.join(folder, "leg.urdf")
        with open(path, "w") as f:
            f.write(LEG)
        out.append(("Mini-Cheetah-like leg", gtdyn.load_robot(path, transmissions="exact"), ["shank"], "other"))
    for name in ("four_bar", "five_bar", "six_bar"):
        robot = gtdyn.load_robot(name)
        out.append((name, robot, [robot.links[-1].name], "other"))
    out.append(("PUMA 560", gtdyn.load_robot("puma560"), ["flange"], "other"))
    out.append(("quadruped (free base, 4 feet)", gtdyn.load_robot("quadruped", base="floating"),
                ["FL_foot", "FR_foot", "RL_foot", "RR_foot"], "other"))
    return out


def time_osim(robot: gtdyn.Robot, frames: list[str]) -> dict[str, tuple[float, int]]:
    """(µs per Λ⁻¹, operations of its code) per ordering, interleaved; orderings that do not apply are left out."""
    solvers, over = {}, set()
    for ordering in OSIM_ORDERINGS:
        try:
            solvers[ordering] = gtdyn.compile_inverse_osim(robot, frames, ordering=ordering, checks=False)
        except gtdyn.ArgumentError:  # e.g. an ordering that does not apply
            continue
        except gtdyn.BudgetError:  # its elimination fills in beyond the memory budget: say so in the table
            over.add(ordering)
    q = sample_states(robot, "forward", count=1, seed=5)["q"][:, 0]
    reference = solvers["cluster_efpa"](q)
    for ordering, solver in solvers.items():  # every ordering computes the same Λ⁻¹
        error = np.max(np.abs(solver(q) - reference)) / np.max(np.abs(reference))
        if not error < 1e-9:
            raise RuntimeError(f"{robot.name}: {ordering} differs from cluster_efpa by {error:.3g}")
    timings = measure_interleaved({o: (lambda s=s: s(q)) for o, s in solvers.items()}, REPEAT, INNER, WARMUP)
    return {**{o: (timings[o].median_us, solvers[o].operations["osim"] + solvers[o].operations["factor"])
               for o in solvers}, **{o: OVER for o in over}}


def time_inverse(robot: gtdyn.Robot) -> dict[str, float]:
    """µs per inverse-dynamics call per ordering, interleaved."""
    solvers, over = {}, {}
    for ordering in INVERSE_ORDERINGS:
        try:
            solvers[ordering] = gtdyn.compile(robot, "inverse", ordering=ordering, checks=False)
        except gtdyn.BudgetError:
            over[ordering] = OVER
    state = sample_states(robot, "inverse", count=1, seed=5)
    q, v, qdd = (state[s][:, 0] for s in ("q", "v", "x"))
    timings = measure_interleaved({o: (lambda s=s: s(q, v, qdd)) for o, s in solvers.items()}, REPEAT, INNER,
                                  WARMUP)
    return {**{o: timings[o].median_us for o in solvers}, **over}


def _cells(timed: dict, orderings, base: str, operations: bool = False) -> str:
    cells = []
    for o in orderings:
        if o not in timed:
            cells.append("—")
            continue
        if timed[o] is OVER:
            cells.append("over the memory budget")
            continue
        us = timed[o][0] if operations else timed[o]
        cells.append(f"{us:.2f} ({us / (timed[base][0] if operations else timed[base]):.2f}×)"
                     + (f", {timed[o][1]:,}" if operations else ""))
    return " | ".join(cells)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    sizes = (2, 4, 8, 12) if quick else (2, 4, 8, 12, 16, 24, 32)
    osim_rows, inverse_rows, scaling = [], [], {}
    with tempfile.TemporaryDirectory() as folder:
        studied = systems(folder, sizes)
        with Progress("paper 003 §IX", len(studied), enabled=True, unit="systems") as progress:
            for label, robot, frames, family in studied:
                timed = time_osim(robot, frames)
                osim_rows.append(f"| {label} | {robot.num_dofs} | {', '.join(frames)} | "
                                 + _cells(timed, OSIM_ORDERINGS, "cluster_efpa", operations=True) + " |")
                print(osim_rows[-1], file=sys.stderr, flush=True)
                if family in ("geared", "belt"):
                    scaling.setdefault(family, []).append((robot.num_dofs // 2, {o: t[0] for o, t in timed.items()
                                                                                 if t is not OVER}))
                if not robot.floating_base and (robot.transmissions or robot.loop_joints or label == "PUMA 560"):
                    inverse = time_inverse(robot)
                    inverse_rows.append(f"| {label} | {robot.num_dofs} | "
                                        + _cells(inverse, INVERSE_ORDERINGS, "cluster_rnea") + " |")
                    print(inverse_rows[-1], file=sys.stderr, flush=True)
                progress.step(label)
    text = "\n".join([
        "# Paper 003 §IX on compiled plans: C-EFPA and C-RNEA", "",
        f"`python -m benchmarks.paper003{' --quick' if quick else ''}` on "
        f"{machine_description(REPEAT, INNER, WARMUP)}. Unchecked compiled code; × is the ratio to C-EFPA "
        "(C-RNEA); every ordering's Λ⁻¹ agrees with C-EFPA's to 1e-9 at the timed state.", "",
        "## The inverse operational-space inertia Λ⁻¹ (Table IV, Fig. 13)", "",
        "µs per call (×), and the generated code's operations (the factorization and Λ⁻¹'s sweeps). crba is the "
        "projection method (mass matrix, dense factorization); colamd and nd are sparse factorizations; — : the "
        "ordering does not apply.", "",
        "| system | joints | frames | " + " | ".join(f"{o} µs (×), ops" for o in OSIM_ORDERINGS) + " |",
        "|---|---|---|" + "---|" * len(OSIM_ORDERINGS), *osim_rows, "",
        "## Constrained inverse dynamics (Table II)", "",
        "µs per call (×); lagrange is RNEA on the spanning tree with the constraint forces last (the projected RNEA).",
        "", "| system | joints | " + " | ".join(f"{o} µs (×)" for o in INVERSE_ORDERINGS) + " |",
        "|---|---|" + "---|" * len(INVERSE_ORDERINGS), *inverse_rows, "",
        "Paper 003's figures: " + "; ".join(f"{k}: {v}" for k, v in PAPER.items()) + ".", "",
        "![Λ⁻¹ per call against chain length](paper003_scaling.png)", ""])
    print(text)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "paper003.md"), "w") as f:
        f.write(text)
    plot_scaling(scaling, os.path.join(RESULTS, "paper003_scaling.png"), OSIM_ORDERINGS, "µs per Λ⁻¹ of the tip")


if __name__ == "__main__":
    main(sys.argv[1:])
