"""The result of one dynamics solve: the solution by joint and link, and the elimination that produced it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gtsam
import numpy as np

from gtdyn import keys
from gtdyn.equations import contact_selector
from gtdyn.kinematics.forward import KinematicState
from gtdyn.linear.elimination import Elimination, output_error_estimate
from gtdyn.model import base_frame
from gtdyn.model.robot import Robot
from gtdyn.problem import Contact, PlacedContact, Problem

if TYPE_CHECKING:  # networkx is imported only when a DAG is asked for
    import networkx as nx


@dataclass(frozen=True, eq=False)
class ContactWrench:
    """What the environment applies at one contact: ``local`` is the wrench [m; f] in the contact frame (a
    point contact's moment is zero), ``world`` the same wrench in a frame at the contact point with the world's
    axes (Pinocchio's LOCAL_WORLD_ALIGNED)."""

    contact: Contact
    local: np.ndarray
    world: np.ndarray


@dataclass(frozen=True, eq=False)
class DynamicsResult:
    """The solution of one dynamics problem, with the elimination that produced it.

    Vectors are in ``robot.joint_names`` order. ``wrenches[joint]`` is the wrench [m; f] that the joint's
    parent exerts on its child, in the child's CoM frame; ``twist_accels[link]`` is V̇ in the link's CoM
    frame; ``ordering`` lists the eliminated variables' labels in elimination order. ``condition`` estimates
    the condition number of the (column-equilibrated) equations (see ``gtdyn.linear.elimination``): above 1e8 the
    solve warned with ``IllConditionedWarning``; ``error_estimate()`` estimates the relative error of the asked
    quantities themselves.

    A floating base's ``base_accel`` ([ω̇; v̇], the derivative of its body twist) and ``base_wrench`` ([m; f],
    what its environment applies besides ``external_wrenches``) are in the root link frame, given or solved
    for; ``twist_accels`` and ``twists`` include it (in its CoM frame). Both are None for a fixed base.
    ``contact_wrenches`` has one ``ContactWrench`` per contact, in the order given; ``least_norm`` labels the
    variables that the equations leave free and that were given their least-norm values (redundant contacts,
    redundantly actuated loops).
    """

    robot: Robot
    problem: str  # "inverse", "forward" or "hybrid"
    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    wrenches: dict[str, np.ndarray]
    twist_accels: dict[str, np.ndarray]
    twists: dict[str, np.ndarray]
    graph: gtsam.GaussianFactorGraph
    bayes_net: gtsam.GaussianBayesNet
    elimination_ordering: gtsam.Ordering
    condition: float = float("nan")
    base_accel: np.ndarray | None = None
    base_wrench: np.ndarray | None = None
    contact_wrenches: tuple[ContactWrench, ...] = ()
    least_norm: tuple[str, ...] = ()
    elimination: Elimination | None = field(default=None, repr=False)  # for ``error_estimate``
    solution: gtsam.VectorValues | None = field(default=None, repr=False)

    def error_estimate(self) -> float:
        """The relative error that rounding leaves in the asked quantities themselves — the unknown q̈ (and a free
        base's acceleration), τ (and a base's wrench), the contact forces, each judged on its own scale
        (``gtdyn.linear.elimination.output_error_estimate``; two more solves). ``condition`` speaks for the
        equations as a whole; a small answer beside large unknowns can be far less accurate than κ·ε suggests:
        the q̈ of a 200-link chain at a random state, κ ≈ 4e5, is good to ~1e-7 only (in every ordering, and in
        Pinocchio's ABA), which this estimates as 3.5e-7. NaN for a result made without its elimination."""
        if self.elimination is None or self.solution is None:
            return float("nan")
        return output_error_estimate(self.elimination.qr_net, self.graph, self.solution,
                                     asked_groups(set(self.graph.keyVector())))

    @property
    def ordering(self) -> list[str]:
        o = self.elimination_ordering
        return [keys.label(o.at(i)) for i in range(o.size())]

    def dag(self) -> nx.DiGraph:
        """The elimination DAG (``gtdyn.analysis.elimination_dag``): a networkx.DiGraph whose edge p → x means
        back-substitution computes x from p. Draw it with ``gtdyn.plot.draw_dag``, measure it with
        ``gtdyn.analysis.metrics_of(result)``, write it with ``gtdyn.analysis.to_dot``."""
        from gtdyn.analysis.dag import elimination_dag

        return elimination_dag(self.graph, self.elimination_ordering)

    def bayes_tree(self) -> nx.DiGraph:
        """The clique tree of multifrontal elimination in the same ordering (``gtdyn.analysis.bayes_tree_dag``).
        This eliminates the whole graph again, multifrontally: it costs as much as the solve itself."""
        from gtdyn.analysis.dag import bayes_tree_dag

        return bayes_tree_dag(self.graph.eliminateMultifrontal(self.elimination_ordering), self.elimination_ordering)

    def packed(self, layout) -> list[np.ndarray]:
        """The parts ``layout`` (``gtdyn.problem.answer_layout``) names, as a compiled solver returns them: a point
        contact's force alone, a surface contact's whole wrench."""
        values = {"base_accel": self.base_accel, "base_wrench": self.base_wrench, "qdd": self.qdd, "tau": self.tau}
        if any(name == "contacts" for name, _ in layout):
            values["contacts"] = np.concatenate([w.local[3:] if w.contact.kind == "point" else w.local
                                                 for w in self.contact_wrenches])
        return [values[name] for name, _ in layout]

    def __repr__(self) -> str:
        rows = "\n".join(f"  {n:>12s}  q̈ = {a: .6g}  τ = {t: .6g}"
                         for n, a, t in zip(self.robot.joint_names, self.qdd, self.tau))
        return f"DynamicsResult({self.problem} dynamics of '{self.robot.name}', ordering {self.ordering}):\n{rows}"


def assemble_result(robot: Robot, problem: Problem, kin: KinematicState, graph, eliminated: Elimination, order,
            x: gtsam.VectorValues) -> DynamicsResult:
    def scalar(known: Mapping[int, float], key_fn, j: int) -> float:
        return known[j] if j in known else float(x.at(key_fn(j))[0])

    idx = range(1, robot.num_dofs + 1)
    bodies = (robot.base, *robot.links) if robot.floating_base else robot.links
    base_accel = base_wrench = None
    if robot.floating_base:  # back from the base's CoM frame to its root link frame
        base_accel = (problem.base_accel if problem.base_accel is not None
                      else base_frame.twist_to_link(robot) @ x.at(keys.twist_accel_key(0)))
        base_wrench = (problem.base_wrench if problem.base_wrench is not None
                       else base_frame.wrench_to_link(robot) @ x.at(keys.wrench_key(0)))
    return DynamicsResult(
        robot=robot,
        problem=problem.kind,
        q=kin.q,
        v=kin.v,
        qdd=np.array([scalar(problem.known_qdd, keys.joint_accel_key, j) for j in idx]),
        tau=np.array([scalar(problem.known_tau, keys.torque_key, j) for j in idx]),
        wrenches={joint.name: np.array(x.at(keys.wrench_key(joint.index))) for joint in robot.joints},
        twist_accels={link.name: (np.array(x.at(keys.twist_accel_key(link.index))) if link.index or
                                  problem.base_accel is None else base_frame.twist_to_com(robot) @ problem.base_accel)
                      for link in bodies},
        twists={link.name: kin.V[link.index] for link in bodies},
        graph=graph,
        bayes_net=eliminated.bayes_net,
        elimination_ordering=order,
        condition=eliminated.condition,
        elimination=eliminated,
        solution=x,
        base_accel=base_accel,
        base_wrench=base_wrench,
        contact_wrenches=tuple(_contact_wrench(c, kin, x) for c in problem.contacts),
        least_norm=tuple(keys.label(k) for k in [keys.contact_key(c.number, c.dim) for c in problem.contacts
                                                 if c.number in problem.minimum_contact]
                         + [keys.torque_key(j) for j in problem.minimum_torque]),
    )


def _contact_wrench(contact: PlacedContact, kin: KinematicState, x: gtsam.VectorValues) -> ContactWrench:
    local = contact_selector(contact.dim) @ x.at(keys.contact_key(contact.number, contact.dim))
    R = kin.wT[contact.body].compose(contact.iTc).rotation().matrix()
    return ContactWrench(contact.contact, local, np.concatenate([R @ local[:3], R @ local[3:]]))


def asked_groups(unknowns) -> list[list[int]]:
    """The answer's unknowns by kind, each judged on its own scale: accelerations (q̈, a free base's V̇), torques
    and forces (τ, a free base's wrench), contact forces."""
    base = {keys.twist_accel_key(0): "motion", keys.wrench_key(0): "force"}
    kind_of = {"a": "motion", "t": "force", "C": "contact", "c": "contact"}
    groups: dict[str, list[int]] = {"motion": [], "force": [], "contact": []}
    for key in sorted(unknowns):
        kind = base.get(key) or kind_of.get(keys.label(key)[0])
        if kind:
            groups[kind].append(key)
    return [group for group in groups.values() if group]
