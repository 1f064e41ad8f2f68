"""The reference path: a ``Query`` solved by one linear factor graph, eliminated in a chosen ordering.

Kinematics from q and q̇ (poses, twists), the loops' check and planar factors, the linear dynamics graph with the
given quantities known, elimination into a ``gtsam.GaussianBayesNet``, back-substitution and the verdicts
(determinacy, consistency, overflow). Redundant contacts or actuators get their least-norm values.
"""

from __future__ import annotations

import dataclasses

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.arguments import choice
from gtdyn.arguments.query import Query
from gtdyn.dynamics.graph import dynamics_graph
from gtdyn.dynamics.memory import check_solve_memory
from gtdyn.dynamics.result import DynamicsResult, assemble_result
from gtdyn.dynamics.verdicts import BACKWARD_ERROR_TOLERANCE, backward_error, check_finite, inconsistent, row_count
from gtdyn.equations import external_wrench
from gtdyn.errors import ArgumentError, IndeterminateSystemError
from gtdyn.kinematics.forward import KinematicState, forward_kinematics
from gtdyn.kinematics.loops import check_closed, loop_plane_normal
from gtdyn.linear.elimination import METHODS, eliminate, squared_column_norms
from gtdyn.model.robot import Robot
from gtdyn.orderings import remembered_ordering
from gtdyn.problem import Problem


def solve_query(query: Query, *, ordering=None, elimination: str = "qr", planar=None) -> DynamicsResult:
    """Solve ``query`` (from ``gtdyn.arguments.query.ask``) in ``ordering`` (a strategy name, a list of labels or
    keys, or a callable; default COLAMD). ``elimination``: "qr" or "constrained"; ``planar``: None detects planar
    loops, True requires them, False never adds the planar factor."""
    choice("elimination", elimination, METHODS)
    if not (planar is None or isinstance(planar, (bool, np.bool_))):
        raise ArgumentError(f"planar: expected None, True or False, got {planar!r}")
    robot = query.robot
    with np.errstate(all="ignore"):  # overflow becomes non-finite numbers, caught by name in the verdicts
        kin = kinematics_of(query)
    query = dataclasses.replace(query, problem=with_loop_factors(robot, kin, query.problem, planar),
                                external_wrenches=wrenches_in_com(query, kin), aligned_wrenches=())
    # More actuators than a loop's degrees of freedom, or more contacts than the motion determines: the
    # least-norm contact forces, then the least-norm torques, by soft minimum-norm factors on the hard
    # equations (which needs GTSAM's constrained elimination).
    while True:
        try:
            return _eliminate_and_solve(query, kin, ordering, elimination)
        except IndeterminateSystemError as e:
            problem = query.problem
            free = {keys.kind(keys.parse_label(label)) for label in e.free_variables}
            if free & {"contact_force", "contact_wrench"} and not problem.minimum_contact:
                problem = dataclasses.replace(problem, minimum_contact=tuple(c.number for c in problem.contacts))
            elif "torque" in free and not problem.minimum_torque:
                problem = dataclasses.replace(problem, minimum_torque=tuple(
                    j.index for j in robot.joints if j.index not in problem.known_tau))
            else:
                raise
            query = query.with_problem(problem)
            elimination = "constrained"


def kinematics_of(query: Query) -> KinematicState:
    """Poses and twists of every body at the query's state (a floating base's from its pose and twist)."""
    base = () if query.base is None else (query.base.pose, query.base.twist)
    return forward_kinematics(query.robot, query.q, query.v, *base)


def wrenches_in_com(query: Query, kin: KinematicState) -> dict[int, np.ndarray]:
    """Every external wrench in its link's CoM frame: those given in world-aligned axes at a frame's origin turned
    and moved now that the frame's orientation is known, the local ones as they were moved at the boundary
    (``external_wrenches_in_com``); both by ``gtdyn.equations.external_wrench``."""
    out = dict(query.external_wrenches)
    for i, fTcom, F in query.aligned_wrenches:
        out[i] = out.get(i, np.zeros(6)) + external_wrench(fTcom, F, kin.wT[i].compose(fTcom.inverse()))
    return out


def template_graph(query: Query) -> tuple[Query, gtsam.GaussianFactorGraph]:
    """The query with its loops' planar factors, and its linear dynamics graph: what compiled plans and
    benchmarks eliminate symbolically or time (only its structure and ordering are kept)."""
    kin = kinematics_of(query)
    query = dataclasses.replace(query, problem=with_loop_factors(query.robot, kin, query.problem),
                                external_wrenches=wrenches_in_com(query, kin), aligned_wrenches=())
    return query, dynamics_graph(query.robot, kin, query.problem, query.gravity, query.external_wrenches)


def with_loop_factors(robot: Robot, kin: KinematicState, problem: Problem, planar=None) -> Problem:
    """Check that the state closes every loop, and give planar loops their planar factor (``planar``: None
    detects, True requires, False skips). A tree's problem is returned unchanged."""
    if not robot.loop_joints:
        return problem
    check_closed(robot, kin)
    return dataclasses.replace(problem, planar=_planar_loops(robot, kin, planar))


def _planar_loops(robot: Robot, kin, planar) -> dict[int, np.ndarray]:
    if planar is False:
        return {}
    out = {}
    for joint, loop in zip(robot.loop_joints, robot.loops):
        normal = loop_plane_normal(robot, kin, loop)
        if normal is None and planar is True:
            raise ArgumentError(f"planar: the loop {', '.join(loop)} is not planar")
        if normal is not None:
            out[joint.index] = normal
    return out


def _eliminate_and_solve(query: Query, kin: KinematicState, ordering, elimination: str) -> DynamicsResult:
    robot, problem = query.robot, query.problem
    with np.errstate(all="ignore"):
        graph = dynamics_graph(robot, kin, problem, query.gravity, query.external_wrenches,
                               constrained=elimination == "constrained")
        hard = graph  # the exact equations, unit-weighted: for the column scaling and the consistency check
        if elimination == "constrained" or problem.minimum_torque or problem.minimum_contact:
            exact = dataclasses.replace(problem, minimum_torque=(), minimum_contact=())
            hard = dynamics_graph(robot, kin, exact, query.gravity, query.external_wrenches)
    norms = squared_column_norms(hard)
    inputs = query.inputs()
    check_finite(norms, inputs)
    order = remembered_ordering(ordering, robot, problem, graph)
    check_solve_memory(query, graph, order, ordering)
    eliminated = eliminate(graph, order, method=elimination, column_norms=norms,
                           owner=lambda key: keys.owner(robot, key))
    try:
        solution = eliminated.solve(graph)
        values = solution.vector()
    except RuntimeError:  # GTSAM refuses to back-substitute non-finite numbers
        values = np.array([np.nan])
    check_finite({0: values}, inputs)  # a determined system whose right-hand side overflowed
    if row_count(hard) > sum(keys.dim(k) for k in norms):  # more equations than unknowns: the data must satisfy all
        error = backward_error(hard, norms, solution)
        if error > BACKWARD_ERROR_TOLERANCE:
            def solve_free(free: Problem) -> np.ndarray:
                return _eliminate_and_solve(query.with_problem(free), kin, None, "qr").qdd

            raise inconsistent(robot, kin, problem, error, solve_free)
    return assemble_result(robot, problem, kin, graph, eliminated, order, solution)
