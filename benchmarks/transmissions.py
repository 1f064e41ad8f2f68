"""Paper 003 §IX on compiled plans: forward dynamics of mechanisms with transmissions and loops, timed per
ordering — C-ABA (``cluster_aba``), the Lagrange-multiplier baseline (``lagrange``), the projection baseline
(``projection``), COLAMD and nested dissection — as ratios to C-ABA; and the armature approximation's error.

    python -m benchmarks.transmissions [--quick]

Systems (written here, parameters in ``chain``):
* serial chains of 2–24 links, alternating z/y axes, each joint driven by a rotor on its parent link through a
  gear (ratio 6; the rotor geared to the joint it drives: a URDF ``<mimic>``);
* the same chains with parallel belt transmissions: every rotor on the base, rotor i driving joint i through
  belts over joints 1..i (q_rotor_i = 6 Σ_{k≤i} q_k, a ``<gtdyn:transmission>``), as in the MIT Humanoid;
* a Mini-Cheetah-like leg (``LEG``: three joints, each driven by a geared rotor, the knee's through a belt
  over the hip — a two-joint transmission; parameters documented there);
* the bundled closed loops (four-bar, five-bar, six-bar).

Unchecked compiled solvers (``checks=False``: the elimination's arithmetic, as the paper times its
algorithms), medians of 20 samples × 200 calls interleaved per system; the Python call (~1.5 µs) is in every
figure. Writes benchmarks/results/transmissions.md and a scaling plot, transmissions_scaling.png.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

import numpy as np

import gtdyn
from gtdyn.bench.report import machine_description
from gtdyn.bench.timing import measure_interleaved
from gtdyn.compiled.states import sample_states

ORDERINGS = ("cluster_aba", "lagrange", "projection", "colamd", "nd")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
RATIO, ROTOR_I, LINK = 6.0, 4e-5, (0.25, 0.6)  # gear ratio, rotor inertia about its axis (kg m²), link (m, kg)


def chain(n: int, kind: str) -> str:
    """URDF of an n-link chain whose joints are driven through geared rotors ("geared") or belts ("belt")."""
    length, mass = LINK
    parts = ['<robot name="{}" xmlns:gtdyn="https://gtdyn.dev/urdf"><link name="l0"/>'.format(f"{kind}{n}")]
    rotor = ('<link name="r{i}"><inertial><mass value="0.05"/><inertia ixx="{t}" ixy="0" ixz="0" iyy="{t}" '
             'iyz="0" izz="{s}"/></inertial></link>')
    for i in range(1, n + 1):
        axis = "0 0 1" if i % 2 else "0 1 0"
        origin = "0 0 0" if i == 1 else f"{length} 0 0"
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     f'<origin xyz="{origin}"/><axis xyz="{axis}"/>'
                     '<limit lower="-3" upper="3" effort="50" velocity="10"/></joint>')
        parts.append(f'<link name="l{i}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
                     f'<inertia ixx="0.001" ixy="0" ixz="0" iyy="{mass * length ** 2 / 12}" iyz="0" '
                     f'izz="{mass * length ** 2 / 12}"/></inertial></link>')
        mount = f"l{i - 1}" if kind == "geared" else "l0"
        drive = f'<mimic joint="j{i}" multiplier="{RATIO}"/>' if kind == "geared" else ""
        parts.append(f'<joint name="m{i}" type="revolute"><parent link="{mount}"/><child link="r{i}"/>'
                     f'<origin xyz="{0.0 if i == 1 or kind == "belt" else length / 2} {0.05 * i} 0"/>'
                     f'<axis xyz="{axis}"/><limit lower="-300" upper="300" effort="5" velocity="900"/>{drive}</joint>')
        parts.append(rotor.format(i=i, t=ROTOR_I / 2, s=ROTOR_I))
        if kind == "belt":
            drives = "".join(f'<gtdyn:drive joint="j{k}" ratio="{RATIO}"/>' for k in range(1, i + 1))
            parts.append(f'<gtdyn:transmission joint="m{i}">{drives}</gtdyn:transmission>')
    parts.append("</robot>")
    return "\n".join(parts)


LEG = """<robot name="leg" xmlns:gtdyn="https://gtdyn.dev/urdf">  <!-- Mini-Cheetah-like: abduction (x), hip (y),
  knee (y). The abduction rotor sits on the body, the hip's and the knee's on the abduction link, all geared 6:1;
  the knee's drives the knee through a 1.55:1 belt along the thigh, so it turns with the hip as well:
  q_knee_rotor = 6 (q_hip + q_knee / 1.55). Rotor spin inertia 6.3e-5 kg m²; link lengths and masses our own
  choice of the robot's order of magnitude — not its published model. -->
  <link name="body"/>
  <joint name="abad" type="revolute"><parent link="body"/><child link="abad_link"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="18" velocity="40"/></joint>
  <link name="abad_link"><inertial><origin xyz="0 0.04 0"/><mass value="0.54"/>
    <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0004"/></inertial></link>
  <joint name="hip" type="revolute"><parent link="abad_link"/><child link="thigh"/><origin xyz="0 0.06 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="18" velocity="40"/></joint>
  <link name="thigh"><inertial><origin xyz="0 0.016 -0.02"/><mass value="0.63"/>
    <inertia ixx="0.0011" ixy="0" ixz="0" iyy="0.0011" iyz="0" izz="0.0001"/></inertial></link>
  <joint name="knee" type="revolute"><parent link="thigh"/><child link="shank"/><origin xyz="0 0 -0.209"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="26" velocity="26"/></joint>
  <link name="shank"><inertial><origin xyz="0 0 -0.1"/><mass value="0.064"/>
    <inertia ixx="0.00025" ixy="0" ixz="0" iyy="0.00025" iyz="0" izz="0.00001"/></inertial></link>
  <joint name="abad_rotor" type="revolute"><parent link="body"/><child link="abad_r"/><axis xyz="1 0 0"/>
    <limit lower="-30" upper="30" effort="3" velocity="240"/><mimic joint="abad" multiplier="6"/></joint>
  <link name="abad_r"><inertial><mass value="0.055"/>
    <inertia ixx="0.000063" ixy="0" ixz="0" iyy="0.000033" iyz="0" izz="0.000033"/></inertial></link>
  <joint name="hip_rotor" type="revolute"><parent link="abad_link"/><child link="hip_r"/><origin xyz="0 0.03 0"/>
    <axis xyz="0 1 0"/><limit lower="-30" upper="30" effort="3" velocity="240"/><mimic joint="hip" multiplier="6"/></joint>
  <link name="hip_r"><inertial><mass value="0.055"/>
    <inertia ixx="0.000033" ixy="0" ixz="0" iyy="0.000063" iyz="0" izz="0.000033"/></inertial></link>
  <joint name="knee_rotor" type="revolute"><parent link="abad_link"/><child link="knee_r"/><origin xyz="0 0.09 0"/>
    <axis xyz="0 1 0"/><limit lower="-30" upper="30" effort="3" velocity="240"/></joint>
  <gtdyn:transmission joint="knee_rotor"><gtdyn:drive joint="hip" ratio="6"/>
    <gtdyn:drive joint="knee" ratio="3.870967741935484"/></gtdyn:transmission>
  <link name="knee_r"><inertial><mass value="0.055"/>
    <inertia ixx="0.000033" ixy="0" ixz="0" iyy="0.000063" iyz="0" izz="0.000033"/></inertial></link>
</robot>"""  # noqa: E501 (URDF text, kept byte for byte)


def time_orderings(robot) -> dict[str, tuple[float, int]]:
    """(µs per call, operations) per ordering, interleaved, at one consistent sample state."""
    solvers = {o: gtdyn.compile(robot, "forward", ordering=o, checks=False) for o in ORDERINGS}
    state = sample_states(robot, "forward", count=1, seed=5)
    q, v, tau = (state[s][:, 0] for s in ("q", "v", "x"))
    timings = measure_interleaved({o: (lambda s=s: s(q, v, tau)) for o, s in solvers.items()}, 20, 200, 50)
    return {o: (timings[o].median_us, sum(solvers[o].operations.values())) for o in ORDERINGS}


def armature_error(path: str, n: int) -> float:
    """Median relative q̈ error of transmissions="approximate" against "exact" over 20 states."""
    exact = gtdyn.load_robot(path, transmissions="exact")
    approx = gtdyn.load_robot(path, transmissions="approximate")
    drives = [exact.joint_names.index(name) for name in
              (approx.joint_names if n is None else [f"j{i}" for i in range(1, n + 1)])]
    state = sample_states(exact, "forward", count=20, seed=6)
    errors = []
    for k in range(20):
        q, v, tau = (state[s][:, k] for s in ("q", "v", "x"))
        want = gtdyn.forward_dynamics(exact, q, v, tau).qdd[drives]
        got = gtdyn.forward_dynamics(approx, q[drives], v[drives], tau[drives]).qdd
        errors.append(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300))
    return float(np.median(errors))


def main(argv: list[str]) -> None:
    sizes = (2, 4, 8, 12) if "--quick" in argv else (2, 4, 8, 12, 16, 24)
    rows, scaling = [], {}
    header = ["| system | joints | " + " | ".join(f"{o} µs (×)" for o in ORDERINGS) + " | armature error |",
              "|---|---|" + "---|" * len(ORDERINGS) + "---|"]
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        systems = [(f"{kind} chain", kind, n) for kind in ("geared", "belt") for n in sizes]
        systems.append(("Mini-Cheetah-like leg", "leg", None))
        systems += [(name, None, None) for name in ("four_bar", "five_bar", "six_bar")]
        for label, kind, n in systems:
            if kind:
                path = os.path.join(folder, f"{kind}{n}.urdf")
                with open(path, "w") as f:
                    f.write(LEG if kind == "leg" else chain(n, kind))
                robot = gtdyn.load_robot(path, transmissions="exact")
                error = f"{armature_error(path, n):.2%}"
            else:
                robot, error = gtdyn.load_robot(label), "—"
            print(f"{label} ({robot.num_dofs} joints): compiling {len(ORDERINGS)} solvers …", file=sys.stderr,
                  flush=True)
            timed = time_orderings(robot)
            base = timed["cluster_aba"][0]
            rows.append(f"| {label} | {robot.num_dofs} | " + " | ".join(
                f"{timed[o][0]:.2f} ({timed[o][0] / base:.2f}×)" for o in ORDERINGS) + f" | {error} |")
            print(rows[-1], file=sys.stderr, flush=True)
            if kind in ("geared", "belt"):
                scaling.setdefault(kind, []).append((n, {o: timed[o][0] for o in ORDERINGS}))
    text = "\n".join(["# Transmissions and clusters on compiled plans (paper 003 §IX)", "",
                      f"`python -m benchmarks.transmissions{' --quick' if '--quick' in argv else ''}` on "
                      f"{machine_description(20, 200, 50)}. Forward dynamics, unchecked compiled solvers; "
                      "× is the ratio to cluster_aba (C-ABA); armature error: median relative q̈ error of "
                      'transmissions="approximate" over 20 states.', "", *header, *rows, ""])
    print(text)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "transmissions.md"), "w") as f:
        f.write(text)
    plot_scaling(scaling, os.path.join(RESULTS, "transmissions_scaling.png"))


def plot_scaling(scaling: dict, path: str, orderings=ORDERINGS, ylabel: str = "µs per forward-dynamics call") -> None:
    """Per chain family, µs against links for each ordering (log-log); ``scaling[kind]``: [(links, {ordering:
    µs})]."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    for ax, (kind, points) in zip(fig.subplots(1, len(scaling)), scaling.items()):
        n = [p[0] for p in points]
        for o in orderings:
            if all(o in p[1] for p in points):
                ax.plot(n, [p[1][o] for p in points], "o-", label=o)
        ax.set(xlabel="links", ylabel=ylabel, title=f"{kind} chains", xscale="log", yscale="log")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1:])
