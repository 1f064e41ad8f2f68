"""Elimination orderings as algorithms (paper 001 §IV–VI): a registry of small named strategies, explicit
label/key lists, or callables.

A strategy is ``fn(robot, problem, graph) -> gtsam.Ordering`` over exactly the graph's unknowns.

On trees, "root→leaf" is the order of ``robot.joints`` (depth-first pre-order: every joint after its parent
joint) and "leaf→root" its reverse (every joint before its parent joint), which is how the classical
recursive algorithms visit a tree:

* ``rnea`` (inverse): all τ leaf→root, then wrenches F root→leaf, then twist accelerations V̇ leaf→root.
  Back-substitution runs in reverse: V̇ root→leaf (forward pass), F leaf→root (backward pass), τ = Sᵀ F —
  Algorithm 1 of the paper.
* ``crba`` (forward): all wrenches leaf→root, then all twist accelerations leaf→root, then all q̈: the
  wrenches fold each subtree into a composite body, leaving the dense mass-matrix system in q̈ (§V-A).
* ``aba`` (forward and hybrid): for each joint leaf→root its τ (if unknown), F, V̇ and q̈ (if unknown) in
  turn: each link's articulated inertia is formed before its parent's (§V-A; on hybrid problems this is
  Featherstone's articulated-body hybrid dynamics, with prescribed-acceleration joints passed through).

A floating base's unknown (its V̇ "A0" when it is free, its wrench "F0" when its acceleration is given) goes
where the algorithm treats the root: ``aba`` eliminates it last, after every joint (Featherstone's
floating-base ABA: the base's articulated inertia solves for its acceleration, then the forward pass);
``rnea`` puts F0 first among the wrenches, so back-substitution computes it last, at the end of the backward
pass; ``crba`` eliminates A0 last, with the q̈, so the dense system left is the floating-base mass matrix.
Contact forces go last of all, after the loop variables, like the loops' constraint wrenches.
* ``colamd`` (GTSAM's COLAMD), ``nd`` (GTSAM's METIS nested dissection), ``md`` (plain minimum degree on
  the variable graph, as the paper's Table III), ``natural`` (by key).
* ``cluster_aba``, ``cluster_rnea`` (paper 003's C-ABA and C-RNEA: each cluster of joints coupled by a
  transmission or a loop eliminated together), and its two baselines ``lagrange`` (constraint forces last) and
  ``projection`` (constraints first).

On closed loops RNEA, CRBA and ABA run on the spanning tree, and the variables of the loop-closing joints
(their wrench, and q̈ or τ where unknown) are eliminated last: the tree is eliminated with the loop wrenches as
unknown external wrenches, leaving a small system in the loop wrenches — where the constraint-embedding
methods of papers 002/003 put the loop constraint forces (and where Lagrange-multiplier methods solve for
them).
"""

from __future__ import annotations

import heapq
import weakref
from collections.abc import Callable, Sequence

import gtsam

from gtdyn import keys
from gtdyn.arguments.ordering import (
    applicable_strategy,
    called_ordering,
    checked_order,
    not_an_ordering,
    ordering_key,
    strategy_kinds,
)
from gtdyn.model.robot import Robot
from gtdyn.problem import PROBLEM_KINDS, Problem

Strategy = Callable[[Robot, Problem, gtsam.GaussianFactorGraph], gtsam.Ordering]
STRATEGIES: dict[str, Strategy] = {}
APPLIES_TO: dict[str, tuple[str, ...]] = {}


def register_ordering(name: str, fn: Strategy, problems: tuple[str, ...] = PROBLEM_KINDS) -> Strategy:
    """Make ``fn(robot, problem, graph) -> gtsam.Ordering`` (or a list of labels or keys) available as
    ``ordering=name`` for the problem kinds it applies to; ``fn`` must order exactly the graph's unknowns."""
    kinds = strategy_kinds(name, fn, problems)
    STRATEGIES[name] = fn
    APPLIES_TO[name] = kinds
    return fn


def strategy(name: str, problems: tuple[str, ...] = PROBLEM_KINDS):
    """Decorator form of ``register_ordering``, for the built-in strategies below."""
    return lambda fn: register_ordering(name, fn, problems)


def structural(name) -> bool:
    """Whether ``name`` is a built-in strategy: its ordering depends only on which variables the graph has and
    which equations connect them, never on the numbers, so it can be remembered per graph structure."""
    return isinstance(name, str) and STRATEGIES.get(name) is _BUILT_IN.get(name)


REFERENCE_DEFAULT = "colamd"  # the reference path's ordering when none is asked for

# robot -> {(strategy name, problem structure): the ordered keys}; COLAMD, METIS or minimum degree cost as much as
# a tenth of a reference call, and their answer is the same for every state of one structure.
_REMEMBERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remembered_ordering(ordering, robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """``resolve_ordering`` (default "colamd"), remembered per robot and ``problem.structure`` for built-in
    strategies; a fresh ``gtsam.Ordering`` each time, since results hand it to the user."""
    name = REFERENCE_DEFAULT if ordering is None else ordering
    if not structural(name):
        return resolve_ordering(ordering, robot, problem, graph)
    remembered = _REMEMBERED.setdefault(robot, {})
    structure = (name, problem.structure)
    if structure not in remembered:
        order = resolve_ordering(name, robot, problem, graph)
        remembered[structure] = [order.at(i) for i in range(order.size())]
    return gtsam.Ordering(remembered[structure])


def applicable(problem_kind: str) -> list[str]:
    """Names of the strategies that apply to a problem kind ('inverse', 'forward', 'hybrid')."""
    return [name for name, kinds in APPLIES_TO.items() if problem_kind in kinds]


def _ordering(key_list: list[int]) -> gtsam.Ordering:
    return gtsam.Ordering(key_list)


def _unknown(problem: Problem, known: str, j: int) -> bool:
    return j not in (problem.known_tau if known == "tau" else problem.known_qdd)


def _base_wrench(robot: Robot, problem: Problem) -> list[int]:
    """F0 if the robot has a floating base whose wrench is unknown (its acceleration is given)."""
    return [keys.wrench_key(0)] if robot.floating_base and problem.base_wrench is None else []


def _base_accel(robot: Robot, problem: Problem) -> list[int]:
    """A0 if the robot has a floating base whose acceleration is unknown (it is free)."""
    return [keys.twist_accel_key(0)] if robot.floating_base and problem.base_accel is None else []


def _contact_variables(problem: Problem, robot: Robot | None = None) -> list[int]:
    """The contacts' forces, then the transmissions' constraint forces, eliminated last: the tree is eliminated
    with them as unknown external forces, as constrained-dynamics (Lagrange-multiplier) methods solve for them
    once the unconstrained dynamics are known."""
    transmissions = [keys.transmission_key(k) for k in range(1, len(robot.transmissions) + 1)] if robot else []
    return [keys.contact_key(c.number, c.dim) for c in problem.contacts] + transmissions


def _loop_variables(robot: Robot, problem: Problem) -> list[int]:
    """The loop-closing joints' unknowns, eliminated after the spanning tree."""
    out = []
    for joint in robot.loop_joints:
        j = joint.index
        out += [keys.torque_key(j)] if _unknown(problem, "tau", j) else []
        out.append(keys.wrench_key(j))
        out += [keys.joint_accel_key(j)] if _unknown(problem, "qdd", j) else []
    return out


@strategy("rnea", problems=("inverse",))
def rnea(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """τ leaf→root, F root→leaf, V̇ leaf→root: back-substitution is RNEA (Algorithm 1)."""
    root_first = [j.index for j in robot.tree_joints]
    leaf_first = root_first[::-1]
    return _ordering([keys.torque_key(j) for j in leaf_first if _unknown(problem, "tau", j)]
                     + _base_wrench(robot, problem) + [keys.wrench_key(j) for j in root_first]
                     + [keys.twist_accel_key(j) for j in leaf_first] + _base_accel(robot, problem)
                     + _loop_variables(robot, problem) + _contact_variables(problem, robot))


@strategy("crba", problems=("forward",))
def crba(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """All F leaf→root, then all V̇ leaf→root, then all q̈ leaf→root (composite bodies, then M q̈ = τ − h)."""
    leaf_first = [j.index for j in reversed(robot.tree_joints)]
    return _ordering([keys.wrench_key(j) for j in leaf_first] + _base_wrench(robot, problem)
                     + [keys.twist_accel_key(j) for j in leaf_first]
                     + [keys.joint_accel_key(j) for j in leaf_first if _unknown(problem, "qdd", j)]
                     + _base_accel(robot, problem) + _loop_variables(robot, problem)
                     + _contact_variables(problem, robot))


@strategy("aba", problems=("forward", "hybrid"))
def aba(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Per joint leaf→root: τ (if unknown), F, V̇, q̈ (if unknown) — articulated bodies, leaves first."""
    order = []
    for joint in reversed(robot.tree_joints):
        j = joint.index
        if _unknown(problem, "tau", j):
            order.append(keys.torque_key(j))
        order += [keys.wrench_key(j), keys.twist_accel_key(j)]
        if _unknown(problem, "qdd", j):
            order.append(keys.joint_accel_key(j))
    return _ordering(order + _base_wrench(robot, problem) + _base_accel(robot, problem)
                     + _loop_variables(robot, problem) + _contact_variables(problem, robot))


def clusters(robot: Robot) -> list[list[int]]:
    """Joints coupled by a transmission or a closed loop, grouped (paper 003's clusters; each other joint is a
    cluster of its own), in ``robot.joints`` order within and across groups."""
    parent = {j.index: j.index for j in robot.joints}

    def root(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    groups = [[t.dependent, *(k for k, _ in t.terms)] for t in robot.transmissions]
    groups += [[robot.joint(name).index for name in loop] for loop in robot.loops]
    for group in groups:
        for j in group[1:]:
            parent[root(j)] = root(group[0])
    out: dict[int, list[int]] = {}
    for joint in robot.joints:
        out.setdefault(root(joint.index), []).append(joint.index)
    return list(out.values())


def _cluster_transmissions(robot: Robot, members: set[int]) -> list[int]:
    return [keys.transmission_key(k) for k, t in enumerate(robot.transmissions, start=1) if t.dependent in members]


@strategy("cluster_aba", problems=("forward", "hybrid"))
def cluster_aba(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Paper 003's C-ABA (constraint embedding, Algorithm 1) as an ordering: clusters leaf→root, each cluster's
    variables together — its joints' τ (if unknown), F and V̇, then its transmissions' constraint forces, then its
    q̈ — once its root-most joint is reached. A cluster of one joint is ABA's step for that joint."""
    cluster_of = {j: tuple(c) for c in clusters(robot) for j in c}
    tree_rank = {joint.index: k for k, joint in enumerate(robot.tree_joints)}
    order, pending = [], {c: set(c) for c in cluster_of.values()}
    for joint in reversed(robot.tree_joints):
        c = cluster_of[joint.index]
        pending[c].discard(joint.index)
        if any(j in tree_rank for j in pending[c]):
            continue  # a tree joint of the cluster nearer the root is still to come
        members = sorted(c, key=lambda j: -tree_rank.get(j, -1))  # leaf→root, loop-closing joints first
        for j in members:
            order += [keys.torque_key(j)] if _unknown(problem, "tau", j) else []
            order.append(keys.wrench_key(j))
            order += [keys.twist_accel_key(j)] if j in tree_rank else []
        order += _cluster_transmissions(robot, set(c))
        order += [keys.joint_accel_key(j) for j in members if _unknown(problem, "qdd", j)]
    return _ordering(order + _base_wrench(robot, problem) + _base_accel(robot, problem)
                     + [keys.contact_key(c.number, c.dim) for c in problem.contacts])


@strategy("cluster_rnea", problems=("inverse",))
def cluster_rnea(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Paper 003's C-RNEA as an ordering: each cluster's unknown torques with its transmissions' constraint
    forces (clusters leaf→root), then wrenches root→leaf and V̇ leaf→root, as RNEA; loop-closing joints' wrenches
    with their cluster."""
    root_first = [j.index for j in robot.tree_joints]
    rank = {j: k for k, j in enumerate(root_first)}
    groups = sorted(clusters(robot), key=lambda c: -min(rank[j] for j in c if j in rank))  # by root-most member
    order = []
    for c in groups:
        order += [keys.torque_key(j) for j in sorted(c, key=lambda j: -rank.get(j, len(rank)))
                  if _unknown(problem, "tau", j)]
        order += _cluster_transmissions(robot, set(c))
    loop_wrenches = [keys.wrench_key(j.index) for j in robot.loop_joints]
    loop_accels = [keys.joint_accel_key(j.index) for j in robot.loop_joints if _unknown(problem, "qdd", j.index)]
    return _ordering(order + _base_wrench(robot, problem) + [keys.wrench_key(j) for j in root_first]
                     + [keys.twist_accel_key(j) for j in reversed(root_first)] + _base_accel(robot, problem)
                     + loop_wrenches + loop_accels + [keys.contact_key(c.number, c.dim) for c in problem.contacts])


@strategy("lagrange")
def lagrange(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Paper 003's Lagrange-multiplier baseline: the spanning tree's recursive algorithm (ABA; RNEA for inverse
    dynamics) with every constraint force — loop wrenches, transmissions' λ, contacts — eliminated last."""
    return (rnea if problem.kind == "inverse" else aba)(robot, problem, graph)


@strategy("projection", problems=("forward", "hybrid"))
def projection(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Paper 003's projection baseline: the constraints first — each transmission's constraint force and driven
    q̈, each loop-closing joint's variables — so that what remains is the tree's dynamics projected onto the
    independent coordinates, then ABA on it."""
    first = []
    for k, t in enumerate(robot.transmissions, start=1):
        first.append(keys.transmission_key(k))
        first += [keys.joint_accel_key(t.dependent)] if _unknown(problem, "qdd", t.dependent) else []
    first += _loop_variables(robot, problem)
    tree, skip = aba(robot, problem, graph), set(first)
    return _ordering(first + [k for k in (tree.at(i) for i in range(tree.size())) if k not in skip])


@strategy("colamd")
def colamd(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """GTSAM's COLAMD (approximate minimum degree on the column structure); GTSAM's default."""
    return gtsam.Ordering.ColamdGaussianFactorGraph(graph)


@strategy("nd")
def nested_dissection(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """GTSAM's METIS nested dissection: recursive separators, post-order."""
    return gtsam.Ordering.MetisGaussianFactorGraph(graph)


@strategy("md")
def minimum_degree(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Plain minimum degree on the variable graph: repeatedly eliminate a variable with the fewest
    neighbours (ties: τ, q̈, F, V̇, then index), connecting its neighbours (fill-in)."""
    neighbours = adjacency(graph)
    tie = {"torque": 0, "joint_accel": 1, "wrench": 2, "twist_accel": 3}
    # the variable's rank after its degree; the last term, its place in the graph, settles what the others leave
    rank = {k: (tie.get(keys.kind(k), 9), keys.index(k), place) for place, k in enumerate(neighbours)}
    # a heap of (degree, rank, key), one entry each time a degree changes: an entry whose degree is no longer the
    # variable's is skipped, so each step costs a logarithm where a scan of every variable made long chains
    # quadratic (a 1000-joint chain took seconds)
    queue = [(len(around), rank[k], k) for k, around in neighbours.items()]
    heapq.heapify(queue)
    order = []
    while neighbours:
        degree, _, x = heapq.heappop(queue)
        if x not in neighbours or len(neighbours[x]) != degree:
            continue
        around = neighbours.pop(x)
        for a in around:
            neighbours[a] |= around - {a}
            neighbours[a].discard(x)
            heapq.heappush(queue, (len(neighbours[a]), rank[a], a))
        order.append(x)
    return _ordering(order)


@strategy("natural")
def natural(robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Keys in increasing numeric order (by variable symbol, then index)."""
    return gtsam.Ordering.NaturalGaussianFactorGraph(graph)


_BUILT_IN = dict(STRATEGIES)


def adjacency(graph: gtsam.GaussianFactorGraph) -> dict[int, set[int]]:
    """The variable graph of the unknowns as neighbour sets: an edge wherever two variables share a factor."""
    out: dict[int, set[int]] = {}
    for i in range(graph.size()):
        factor_keys = list(graph.at(i).keys())
        for k in factor_keys:
            out.setdefault(k, set()).update(factor_keys)
    for k, around in out.items():
        around.discard(k)
    return out


def graph_keys(graph: gtsam.GaussianFactorGraph) -> list[int]:
    return sorted(set(graph.keyVector()))


def resolve_ordering(ordering, robot: Robot, problem: Problem, graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    """Turn what the user passed as ``ordering=`` into a gtsam.Ordering over exactly the graph's unknowns."""
    if ordering is None:
        ordering = REFERENCE_DEFAULT
    if isinstance(ordering, gtsam.Ordering):
        return _checked([ordering.at(i) for i in range(ordering.size())], graph)
    if isinstance(ordering, str):
        fn = STRATEGIES[applicable_strategy(ordering, problem.kind, APPLIES_TO)]
        return resolve_ordering(fn(robot, problem, graph), robot, problem, graph)
    if callable(ordering):
        return resolve_ordering(called_ordering(ordering, robot, problem, graph), robot, problem, graph)
    if isinstance(ordering, Sequence):
        return _checked([ordering_key(x) for x in ordering], graph)
    raise not_an_ordering(ordering)


def _checked(order: list[int], graph: gtsam.GaussianFactorGraph) -> gtsam.Ordering:
    return _ordering(checked_order(order, graph_keys(graph)))
