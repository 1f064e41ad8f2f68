"""Benchmarks: orderings timed against each other, against the paper's tables and against Pinocchio.

For a robot, a problem (inverse / forward / hybrid) and a state, each applicable ordering is measured as:

* ``elim_us``: elimination alone — the linear graph and the ordering are prepared once, then
  ``eliminateSequential`` is timed, as the paper times it (Tables I–II), with Householder QR (our default);
* ``elim_constrained_us``: the same with GTSAM's elimination of ``Constrained`` factors;
* ``solve_us``: end to end — one ``*_dynamics`` call (kinematics, graph building, ordering, elimination,
  back-substitution and result);
* ``edges``, ``fill_in``, ``ops``: the DAG's measures (``gtdyn.analysis.metrics``).

Pinocchio (if installed) solves the same problem in the same process: ``rnea`` (inverse), ``aba`` and
``crba`` + Cholesky (forward), and for hybrid the same three passes as Featherstone's method (rnea, crba and
a Cholesky solve of the forward-dynamics block). Every time is a median over ``repeat`` samples after
``warmup`` calls, each sample the mean of ``inner`` back-to-back calls; spread is the interquartile range.
Ratios are taken between medians of the same run. Nothing here is hard-coded: every number is measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import gtsam
import numpy as np

from gtdyn.analysis.metrics import metrics
from gtdyn.arguments.query import ask
from gtdyn.bench.timing import Timing, measure
from gtdyn.dynamics.graph import dynamics_graph
from gtdyn.dynamics.reference import kinematics_of, template_graph
from gtdyn.dynamics.solve import inverse_dynamics, solve
from gtdyn.dynamics.three_pass import featherstone_hybrid_dynamics
from gtdyn.kinematics.loop_closure import close_loops, independent_joints
from gtdyn.model.robot import Robot
from gtdyn.orderings import applicable, resolve_ordering
from gtdyn.problem import PROBLEM_KINDS

PROBLEMS = PROBLEM_KINDS
BASELINE = {"inverse": "rnea", "forward": "aba", "hybrid": "aba"}  # the paper's reference rows


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

    def given(self, kind: str) -> dict:
        """The ``qdd``/``tau`` arguments of ``gtdyn.solve`` for a problem kind at this state."""
        return {"inverse": {"qdd": self.qdd}, "forward": {"tau": self.tau},
                "hybrid": {"qdd": self.known_qdd, "tau": self.known_tau}}[kind]


def benchmark_state(robot: Robot, seed: int = 0) -> State:
    """A reproducible random state within the joint limits that keeps every coupling; its reference torques come
    from our RNEA ordering and are checked against Pinocchio by the tests."""
    rng = np.random.default_rng(seed)
    n = robot.num_dofs
    # within the joint limits (clipped to ±π), as every state gtdyn generates
    lower = np.array([max(j.lower, -np.pi) for j in robot.joints])
    upper = np.array([min(j.upper, np.pi) for j in robot.joints])
    q, v, qdd = rng.uniform(lower, upper, n), rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
    act = robot.actuated_joint_names
    if robot.loop_joints:
        # random independent joints (actuated first) near the rest assembly; the others close the loops
        free = independent_joints(robot, act)
        s = close_loops(robot, {k: rng.uniform(-0.2, 0.2) for k in free}, {k: rng.uniform(-1, 1) for k in free},
                        {k: rng.uniform(-2, 2) for k in free})
        q, v, qdd = s.q, s.v, s.qdd
    robot.follow_drives(q, v, qdd)
    tau = inverse_dynamics(robot, q, v, qdd, ordering="rnea").tau
    half, index = len(act) // 2, robot.joint_names.index
    return State(q, v, qdd, tau, {k: qdd[index(k)] for k in act[:half]}, {k: tau[index(k)] for k in act[half:]})


def _solve(robot: Robot, state: State, kind: str, ordering, elimination="qr"):
    return solve(robot, kind, state.q, state.v, **state.given(kind), ordering=ordering, elimination=elimination)


def _error(result, state: State) -> float:
    scale = max(np.max(np.abs(state.tau)), np.max(np.abs(state.qdd)), 1e-300)
    return float(max(np.max(np.abs(result.qdd - state.qdd)), np.max(np.abs(result.tau - state.tau))) / scale)


def bench_orderings(robot: Robot, kind: str, state: State, orderings: Iterable[str] | None = None, repeat: int = 30,
                    inner: int = 5, warmup: int = 5, end_to_end: bool = True, progress=None) -> list[Row]:
    """One Row per applicable ordering (or those named) for one problem."""
    orderings = list(orderings) if orderings is not None else applicable(kind)
    query, graph_qr = template_graph(ask(robot, kind, state.q, state.v, **state.given(kind)))
    problem = query.problem
    graph_hard = dynamics_graph(robot, kinematics_of(query), problem, query.gravity, constrained=True)
    rows = []
    for name in orderings:
        if progress:
            progress(f"{robot.name} {kind} {name}")
        ordering = resolve_ordering(name, robot, problem, graph_qr)
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.timings["elim_us"] = measure(lambda: graph_qr.eliminateSequential(ordering, gtsam.EliminateQR),
                                         repeat, inner, warmup)
        row.timings["elim_constrained_us"] = measure(lambda: graph_hard.eliminateSequential(ordering),
                                                     repeat, inner, warmup)
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
        def three():
            return featherstone_hybrid_dynamics(robot, state.q, state.v, state.known_qdd, state.known_tau)

        row.timings["solve_us"] = measure(three, repeat, inner, warmup)
        row.max_error = _error(three(), state)
        rows.append(row)
    return rows


# -- scaling -------------------------------------------------------------------------------------------


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


