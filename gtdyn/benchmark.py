"""Benchmarks: orderings timed against each other, against the paper's tables and against Pinocchio.

For a robot, a problem (inverse / forward / hybrid) and a state, each applicable ordering is measured as:

* ``elim_us``: elimination alone — the linear graph and the ordering are prepared once, then
  ``eliminateSequential`` is timed, as the paper times it (Tables I–II), with Householder QR (our default);
* ``elim_constrained_us``: the same with GTSAM's elimination of ``Constrained`` factors;
* ``solve_us``: end to end — one ``*_dynamics`` call (kinematics, graph building, ordering, elimination,
  back-substitution and result);
* ``edges``, ``fill_in``, ``ops``: the DAG's measures (``gtdyn.dag.metrics``).

Pinocchio (if installed) solves the same problem in the same process: ``rnea`` (inverse), ``aba`` and
``crba`` + Cholesky (forward), and for hybrid the same three passes as Featherstone's method (rnea, crba and
a Cholesky solve of the forward-dynamics block). Every time is a median over ``repeat`` samples after
``warmup`` calls, each sample the mean of ``inner`` back-to-back calls; spread is the interquartile range.
Ratios are taken between medians of the same run. Nothing here is hard-coded: every number is measured.
"""

from __future__ import annotations

import csv
import datetime
import os
import platform
import sys
import textwrap
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import gtsam
import numpy as np

import gtdyn
from gtdyn.dag import metrics
from gtdyn.dynamics import forward_problem, hybrid_problem, inverse_problem, with_loop_factors
from gtdyn.description import JointSpec, LinkSpec, RobotDescription
from gtdyn.graph import Problem, dynamics_graph
from gtdyn.kinematics import forward_kinematics
from gtdyn.orderings import applicable, resolve_ordering
from gtdyn.build import build_robot
from gtdyn.robot import Robot

PROBLEMS = ("inverse", "forward", "hybrid")
BASELINE = {"inverse": "rnea", "forward": "aba", "hybrid": "aba"}  # the paper's reference rows


@dataclass(frozen=True)
class Timing:
    """Per-call seconds of each sample."""

    samples: tuple[float, ...]

    @property
    def median_us(self) -> float:
        return float(np.median(self.samples) * 1e6)

    @property
    def iqr_us(self) -> float:
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float((q3 - q1) * 1e6)


def measure(fn: Callable[[], object], repeat: int, inner: int, warmup: int) -> Timing:
    """Warm up, then ``repeat`` samples of ``inner`` back-to-back calls each."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return Timing(tuple(samples))


@dataclass
class Row:
    robot: str
    dofs: int
    problem: str
    method: str  # an ordering name, "featherstone (3 passes)", or "pinocchio …"
    timings: dict[str, Timing] = field(default_factory=dict)
    measures: dict[str, float] = field(default_factory=dict)
    max_error: float = float("nan")  # against the state's reference solution (max norm, relative)


@dataclass(frozen=True)
class State:
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray  # inverse dynamics of (q, v, qdd): the reference answer for every problem
    known_qdd: dict[str, float]  # hybrid split: first half q̈ given, rest τ given
    known_tau: dict[str, float]


def benchmark_state(robot: Robot, seed: int = 0) -> State:
    """A reproducible random state; its reference torques come from our RNEA ordering and are checked
    against Pinocchio by the tests."""
    rng = np.random.default_rng(seed)
    n = robot.num_dofs
    q, v, qdd = rng.uniform(-np.pi, np.pi, n), rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
    act = robot.actuated_joint_names
    if robot.loop_joints:  # random actuated joints near the rest assembly; the others close the loops
        s = gtdyn.close_loops(robot, {k: rng.uniform(-0.2, 0.2) for k in act}, {k: rng.uniform(-1, 1) for k in act},
                              {k: rng.uniform(-2, 2) for k in act})
        q, v, qdd = s.q, s.v, s.qdd
    tau = gtdyn.inverse_dynamics(robot, q, v, qdd, ordering="rnea").tau
    half, index = len(act) // 2, robot.joint_names.index
    return State(q, v, qdd, tau, {k: qdd[index(k)] for k in act[:half]}, {k: tau[index(k)] for k in act[half:]})


def _problem(robot: Robot, state: State, kind: str) -> Problem:
    if kind == "inverse":
        return inverse_problem(robot, state.qdd)
    if kind == "forward":
        return forward_problem(robot, state.tau)
    return hybrid_problem(robot, state.known_qdd, state.known_tau)


def _solve(robot: Robot, state: State, kind: str, ordering, elimination="qr"):
    if kind == "inverse":
        return gtdyn.inverse_dynamics(robot, state.q, state.v, state.qdd, ordering=ordering, elimination=elimination)
    if kind == "forward":
        return gtdyn.forward_dynamics(robot, state.q, state.v, state.tau, ordering=ordering, elimination=elimination)
    return gtdyn.hybrid_dynamics(robot, state.q, state.v, state.known_qdd, state.known_tau, ordering=ordering,
                                 elimination=elimination)


def _error(result, state: State) -> float:
    scale = max(np.max(np.abs(state.tau)), np.max(np.abs(state.qdd)), 1e-300)
    return float(max(np.max(np.abs(result.qdd - state.qdd)), np.max(np.abs(result.tau - state.tau))) / scale)


def bench_orderings(robot: Robot, kind: str, state: State, orderings: Iterable[str] | None = None, repeat: int = 30,
                    inner: int = 5, warmup: int = 5, end_to_end: bool = True, progress=None) -> list[Row]:
    """One Row per applicable ordering (or those named) for one problem."""
    orderings = list(orderings) if orderings is not None else applicable(kind)
    kin = forward_kinematics(robot, state.q, state.v)
    problem = with_loop_factors(robot, kin, _problem(robot, state, kind))
    gravity = np.array(gtdyn.GRAVITY)
    graph_qr = dynamics_graph(robot, kin, problem, gravity)
    graph_hard = dynamics_graph(robot, kin, problem, gravity, constrained=True)
    rows = []
    for name in orderings:
        if progress:
            progress(f"{robot.name} {kind} {name}")
        ordering = resolve_ordering(name, robot, problem, graph_qr)
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.timings["elim_us"] = measure(lambda: graph_qr.eliminateSequential(ordering, gtsam.EliminateQR), repeat, inner, warmup)
        row.timings["elim_constrained_us"] = measure(lambda: graph_hard.eliminateSequential(ordering), repeat, inner, warmup)
        if end_to_end:
            row.timings["solve_us"] = measure(lambda: _solve(robot, state, kind, name), repeat, inner, warmup)
        result = _solve(robot, state, kind, name)
        row.max_error = _error(result, state)
        row.measures = {k: float(v) for k, v in metrics(result.graph, result.elimination_ordering).items()
                        if k in ("edges", "fill_in", "ops", "largest_clique")}
        rows.append(row)
    if kind == "hybrid":
        if progress:
            progress(f"{robot.name} hybrid featherstone")
        row = Row(robot.name, robot.num_dofs, kind, "featherstone (3 passes)")
        three = lambda: gtdyn.featherstone_hybrid_dynamics(robot, state.q, state.v, state.known_qdd, state.known_tau)
        row.timings["solve_us"] = measure(three, repeat, inner, warmup)
        row.max_error = _error(three(), state)
        rows.append(row)
    return rows


def bench_pinocchio(robot: Robot, path: str, kind: str, state: State, repeat: int = 30, inner: int = 50,
                    warmup: int = 20) -> list[Row]:
    """Pinocchio on the same URDF and state; empty if Pinocchio is not installed, or for other files (closed
    loops need constraint dynamics, which this comparison does not cover)."""
    try:
        import pinocchio as pin
    except ImportError:
        return []
    if not path.lower().endswith(".urdf") or robot.loop_joints:
        return []
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    idx_v = np.array([model.joints[model.getJointId(n)].idx_v for n in robot.joint_names])
    idx_q = [(model.joints[model.getJointId(n)].idx_q, model.joints[model.getJointId(n)].nq) for n in robot.joint_names]
    q = pin.neutral(model)
    for (i, nq), x in zip(idx_q, state.q):
        q[i:i + nq] = [x] if nq == 1 else [np.cos(x), np.sin(x)]

    def vec(x):
        out = np.zeros(model.nv)
        out[idx_v] = x
        return out

    v, a, tau = vec(state.v), vec(state.qdd), vec(state.tau)

    def crba_forward():
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(model, data, q, v)
        return np.linalg.solve(M, tau - h)  # LAPACK (Cholesky would need SciPy; M is small and dense)

    def three_pass():
        given = np.zeros(model.nv, dtype=bool)
        for name in state.known_qdd:
            given[model.joints[model.getJointId(name)].idx_v] = True
        bias = pin.rnea(model, data, q, v, np.where(given, a, 0.0))
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        free = ~given
        qdd = a.copy()
        qdd[free] = np.linalg.solve(M[np.ix_(free, free)], tau[free] - bias[free])
        return qdd, pin.rnea(model, data, q, v, qdd)

    cases = {"inverse": [("pinocchio rnea", lambda: pin.rnea(model, data, q, v, a))],
             "forward": [("pinocchio aba", lambda: pin.aba(model, data, q, v, tau)),
                         ("pinocchio crba+solve", crba_forward)],
             "hybrid": [("pinocchio rnea+crba+solve (3 passes)", three_pass)]}[kind]
    rows = []
    for name, fn in cases:
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.timings["solve_us"] = measure(fn, repeat, inner, warmup)
        out = fn()
        qdd_pin = out[0] if isinstance(out, tuple) else (out if kind == "forward" else a)
        tau_pin = out[1] if isinstance(out, tuple) else (out if kind == "inverse" else tau)
        scale = max(np.max(np.abs(state.tau)), np.max(np.abs(state.qdd)))
        row.max_error = float(max(np.max(np.abs(np.asarray(qdd_pin)[idx_v] - state.qdd)),
                                  np.max(np.abs(np.asarray(tau_pin)[idx_v] - state.tau))) / scale)
        rows.append(row)
    return rows


# -- scaling -------------------------------------------------------------------------------------------


def serial_chain(n: int, seed: int = 0) -> Robot:
    """An n-joint revolute chain with random link inertias and joint axes (a seeded generator)."""
    rng = np.random.default_rng(seed)
    links = [LinkSpec("base")]
    joints = []
    for i in range(1, n + 1):
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        inertia = R @ np.diag(rng.uniform(0.02, 0.1, 3) + 0.05) @ R.T
        com = np.eye(4)
        com[:3, 3] = [0.15, 0.0, 0.0]
        links.append(LinkSpec(f"link{i}", float(rng.uniform(0.5, 3.0)), inertia, com, True))
        origin = np.eye(4)
        origin[:3, 3] = [0.3 if i > 1 else 0.0, 0.0, 0.0]
        axis = rng.normal(size=3)
        joints.append(JointSpec(f"j{i}", "revolute", links[-2].name, f"link{i}", origin, axis / np.linalg.norm(axis)))
    return build_robot(RobotDescription(f"chain{n}", tuple(links), tuple(joints)))


def bench_scaling(robots: list[Robot], problems=("inverse", "forward"), repeat: int = 15, inner: int = 2,
                  warmup: int = 3, progress=None) -> list[Row]:
    """Elimination time and DAG measures of every applicable ordering on each robot (no end-to-end)."""
    rows = []
    for robot in robots:
        state = benchmark_state(robot)
        for kind in problems:
            rows += bench_orderings(robot, kind, state, repeat=repeat, inner=inner, warmup=warmup,
                                    end_to_end=False, progress=progress)
    return [r for r in rows if not r.method.startswith("featherstone")]


# -- reporting -----------------------------------------------------------------------------------------


def machine_description(repeat: int, inner: int, warmup: int) -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}", f"gtsam {_version('gtsam')}",
                f"gtdyn {gtdyn.__version__}"]
    try:
        import pinocchio

        versions.append(f"pinocchio {pinocchio.__version__}")
    except ImportError:
        versions.append("pinocchio not installed")
    return (f"{datetime.date.today().isoformat()}; {cpu}, {os.cpu_count()} cores, {platform.system()} "
            f"{platform.release()}; {', '.join(versions)}; medians of {repeat} samples × {inner} calls after "
            f"{warmup} warm-up calls")


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def markdown_table(rows: list[Row], kind: str) -> str:
    """A table like the paper's Tables I–II, with ratios to the RNEA (inverse) or ABA (forward, hybrid) row."""
    rows = [r for r in rows if r.problem == kind]
    base = next((r for r in rows if r.method == BASELINE[kind]), None)
    base_elim = base.timings["elim_us"].median_us if base else float("nan")
    base_solve = base.timings["solve_us"].median_us if base and "solve_us" in base.timings else float("nan")
    lines = [f"| {kind} dynamics, {rows[0].robot} | elimination µs (IQR) | ratio to {BASELINE[kind].upper()} "
             f"| constrained elim. µs | end-to-end µs (IQR) | ratio | DAG edges | fill-in | ops | max rel. error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(key, base_value):
            if key not in r.timings:
                return "–", "–"
            t = r.timings[key]
            return f"{t.median_us:.1f} ({t.iqr_us:.1f})", f"{t.median_us / base_value:.3g}"
        elim, elim_ratio = cell("elim_us", base_elim)
        solve, solve_ratio = cell("solve_us", base_solve)
        hard = f"{r.timings['elim_constrained_us'].median_us:.1f}" if "elim_constrained_us" in r.timings else "–"
        m = r.measures
        lines.append(f"| {r.method} | {elim} | {elim_ratio} | {hard} | {solve} | {solve_ratio} | "
                     f"{m.get('edges', '–') if not m else int(m['edges'])} | {int(m['fill_in']) if m else '–'} | "
                     f"{int(m['ops']) if m else '–'} | {r.max_error:.1e} |")
    return "\n".join(lines) + "\n"


def write_csv(rows: list[Row], path: str, samples_path: str | None = None) -> None:
    """Summary figures per row; optionally every raw sample (µs) in a second file."""
    keys = sorted({k for r in rows for k in r.timings})
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["robot", "dofs", "problem", "method"] + [f"{k}_median" for k in keys] + [f"{k}_iqr" for k in keys]
                   + ["edges", "fill_in", "ops", "largest_clique", "max_rel_error"])
        for r in rows:
            w.writerow([r.robot, r.dofs, r.problem, r.method]
                       + [f"{r.timings[k].median_us:.3f}" if k in r.timings else "" for k in keys]
                       + [f"{r.timings[k].iqr_us:.3f}" if k in r.timings else "" for k in keys]
                       + [r.measures.get(k, "") for k in ("edges", "fill_in", "ops", "largest_clique")]
                       + [f"{r.max_error:.3e}"])
    if samples_path:
        with open(samples_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["robot", "problem", "method", "measure", "sample", "us"])
            for r in rows:
                for k, t in r.timings.items():
                    for i, s in enumerate(t.samples):
                        w.writerow([r.robot, r.problem, r.method, k, i, f"{s * 1e6:.3f}"])


def bar_chart(rows: list[Row], path: str, title: str) -> None:
    """Median time per method (elimination alone, and end to end), with IQR whiskers, one panel per problem."""
    from matplotlib.figure import Figure

    kinds = [k for k in PROBLEMS if any(r.problem == k for r in rows)]
    fig = Figure(figsize=(5.2 * len(kinds), 4.4))
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    for ax, kind in zip(axes, kinds):
        sub = [r for r in rows if r.problem == kind]
        y = np.arange(len(sub))
        for offset, key, colour, label in ((-0.2, "elim_us", "#2196f3", "elimination"),
                                           (0.2, "solve_us", "#ff9800", "end to end")):
            med = [r.timings[key].median_us if key in r.timings else 0 for r in sub]
            iqr = [r.timings[key].iqr_us if key in r.timings else 0 for r in sub]
            ax.barh(y + offset, med, height=0.38, xerr=iqr, color=colour, label=label)
        ax.set_yticks(y, [r.method for r in sub], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("µs (median, IQR whiskers)")
        ax.set_title(f"{kind} dynamics", fontsize=10)
        ax.invert_yaxis()
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(textwrap.fill(title, 150), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def scaling_plot(rows: list[Row], path: str, title: str) -> None:
    """Elimination time and DAG edges against the number of joints, log axes, one curve per ordering."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    kinds = [k for k in PROBLEMS if any(r.problem == k for r in rows)]
    fig = Figure(figsize=(5.2 * len(kinds), 8.0))
    axes = fig.subplots(2, len(kinds), squeeze=False)
    for col, kind in enumerate(kinds):
        sub = [r for r in rows if r.problem == kind and r.robot.startswith("chain")]
        for method in dict.fromkeys(r.method for r in sub):
            pts = sorted((r.dofs, r.timings["elim_us"].median_us, r.measures["edges"]) for r in sub if r.method == method)
            n, t, e = zip(*pts)
            axes[0][col].plot(n, t, marker="o", label=method)
            axes[1][col].plot(n, e, marker="o", label=method)
        sizes = sorted({r.dofs for r in sub})
        for row, label in ((0, "elimination µs (median)"), (1, "DAG edges")):
            ax = axes[row][col]
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sizes, [str(n) for n in sizes])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("joints in a serial chain")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        axes[0][col].set_title(f"{kind} dynamics", fontsize=10)
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


class Progress:
    """A one-line progress bar on stderr: [#####.....] 12/40 label."""

    def __init__(self, total: int, stream=None, width: int = 30):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream or sys.stderr

    def __call__(self, label: str) -> None:
        self.done += 1
        filled = int(self.width * min(self.done, self.total) / self.total)
        bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} {label:<40.40s}"
        if self.stream.isatty():  # redraw in place
            self.stream.write("\r" + bar + ("\n" if self.done >= self.total else ""))
        else:  # a log: one line per step
            self.stream.write(bar.rstrip() + "\n")
        self.stream.flush()
