"""Long chains (issue 25, item 1): how many digits a forward solve's q̈ keep as a uniform chain grows, what κ and
``DynamicsResult.error_estimate()`` say about it, and what Pinocchio's own round trip shows.

    python -m benchmarks.verify_long_chains            # 25 … 2,000 links (~2 min here)
    python -m benchmarks.verify_long_chains --quick    # up to 200 links

Each chain (``gtdyn.model.random.uniform_chain_description``: 0.1 m, 0.1 kg links, axes alternating y and z) at
a random state q, q̇, q̈ ∈ [−1, 1]: τ by RNEA (accurate to ~1e-15 — its own estimate), then q̈ back by forward
dynamics in ABA and COLAMD; the error is max|q̈ − q̈_true| / max|q̈_true|. Pinocchio does the same round trip
(``rnea`` then ``aba``) on the same URDF, up to 200 links (its Data allocates nv³ tensors). The property checked
at every length: the estimate is within a factor of ten of the worst ordering's error (each ordering is one
draw of rounding; where that error is above the 1e-14 floor of double precision). Writes
benchmarks/results/verify_long_chains.md and .png; exits 1 if the property fails.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile

import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.bench.report import machine
from gtdyn.io.urdf_writer import write_urdf
from gtdyn.model.build import build_robot
from gtdyn.model.random import uniform_chain_description
from gtdyn.progress import Progress

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
LENGTHS = (25, 50, 100, 200, 500, 1000, 2000)
ORDERINGS = ("aba", "colamd")
FACTOR, FLOOR = 10.0, 1e-14
# Pinocchio's Data holds second-order tensors of nv³ doubles (d2tau_dqdq and its kin): 8 GB at 500 links
PINOCCHIO_UP_TO = 200


def relative(x, truth) -> float:
    return float(np.max(np.abs(np.asarray(x) - truth)) / np.max(np.abs(truth)))


def measure(n: int, folder: str) -> dict:
    description = uniform_chain_description(n)
    robot = build_robot(description)
    path = write_urdf(description, os.path.join(folder, f"chain{n}.urdf"))
    rng = np.random.default_rng(0)
    q, v, qdd = rng.uniform(-1, 1, (3, n))
    inverse = gtdyn.inverse_dynamics(robot, q, v, qdd, ordering="rnea")
    row = {"n": n, "inverse_estimate": inverse.error_estimate()}
    for ordering in ORDERINGS:
        forward = gtdyn.forward_dynamics(robot, q, v, inverse.tau, ordering=ordering)
        row[ordering] = relative(forward.qdd, qdd)
        row[f"{ordering}_estimate"] = forward.error_estimate()
        row["condition"] = forward.condition
    row["pinocchio"] = float("nan")
    if n <= PINOCCHIO_UP_TO:
        pin = PinocchioModel(path, robot)
        row["pinocchio"] = relative(pin.aba(q, v, pin.rnea(q, v, qdd)), qdd)
    worst = max(row[o] for o in ORDERINGS)  # each ordering is one draw of rounding; a user can meet the worst
    row["ok"] = worst < FLOOR or worst / FACTOR < row["aba_estimate"] < worst * FACTOR
    return row


def write(rows: list[dict], quick: bool) -> None:
    lines = ["# Long chains: digits of q̈, κ and the error estimate (issue 25, item 1)", "",
             f"`python -m benchmarks.verify_long_chains{' --quick' if quick else ''}`; "
             f"{datetime.date.today().isoformat()}; {machine([f'gtdyn {gtdyn.__version__}'])}", "",
             "Forward∘inverse round trip at one random state; errors are max|q̈ − q̈_true| / max|q̈_true|. κ: the "
             "condition estimate of the column-equilibrated equations (what the verdicts read); estimate: "
             "`DynamicsResult.error_estimate()` of the forward solve (same in every ordering, to rounding).", "",
             "| links | κ | κ·ε | estimate | ABA error | COLAMD error | Pinocchio rnea→aba | τ estimate | within 10× |",
             "|---|---|---|---|---|---|---|---|---|"]
    eps = np.finfo(float).eps
    for r in rows:
        lines.append(f"| {r['n']} | {r['condition']:.2g} | {r['condition'] * eps:.1e} | {r['aba_estimate']:.1e} | "
                     f"{r['aba']:.1e} | {r['colamd']:.1e} | {r['pinocchio']:.1e} | {r['inverse_estimate']:.1e} | "
                     f"{'yes' if r['ok'] else 'NO'} |")
    lines += ["", f"{sum(r['ok'] for r in rows)} of {len(rows)} lengths: the estimate within 10× of the worst "
              "ordering's error. κ stays near 4e5 at every length — the equations are not ill-conditioned; the q̈ "
              "are small beside the wrenches at the chain's base, which a normwise κ cannot see and the estimate "
              "does. Pinocchio's round trip loses digits alike: the sensitivity is the chain's, not the method's "
              f"(Pinocchio only up to {PINOCCHIO_UP_TO} links: its Data allocates nv³ second-order tensors, 8 GB "
              "at 500)."]
    with open(os.path.join(RESULTS, "verify_long_chains.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows)


def plot(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.loglog(n, [r["aba_estimate"] for r in rows], "k-", lw=2, label="error_estimate()")
    for key, style in (("aba", "o--"), ("colamd", "s--"), ("pinocchio", "^:")):
        ax.loglog(n, [r[key] for r in rows], style, label={"aba": "gtdyn ABA", "colamd": "gtdyn COLAMD",
                                                            "pinocchio": "Pinocchio rnea→aba"}[key])
    ax.loglog(n, [r["condition"] * np.finfo(float).eps for r in rows], "-", color="0.6", label="κ·ε")
    ax.set_xlabel("links in the chain")
    ax.set_ylabel("relative error of q̈")
    ax.set_title("Long uniform chains: a forward∘inverse round trip")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "verify_long_chains.png"), dpi=120)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="chains up to 200 links")
    args = parser.parse_args(argv)
    lengths = [n for n in LENGTHS if n <= 200] if args.quick else list(LENGTHS)
    rows = []
    with tempfile.TemporaryDirectory() as folder, Progress("long chains", len(lengths), enabled=True,
                                                          unit="chain") as progress:
        for n in lengths:
            rows.append(measure(n, folder))
            progress.step(f"{n} links")
    write(rows, args.quick)
    print(open(os.path.join(RESULTS, "verify_long_chains.md")).read())
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
