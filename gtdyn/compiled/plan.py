"""The symbolic elimination: the equations of ``gtdyn.dynamics.graph`` written on traced values, then Gaussian
elimination in the given ordering, done once, with the pivots chosen while the code is written.

Elimination works on the rows of the exact equations. Eliminating a variable x (6 columns for V̇ or F, one
for q̈ or τ) takes the rows that still involve x, picks one pivot row per column and subtracts multiples of it
from the others: a multiplier ``l = a_ic / a_pc`` and a row update ``row_i ← row_i − l · row_p``. The pivot rows
become x's conditional (back-substitution computes x from them); the other rows, now free of x, stay for the
variables eliminated later — the new factor of the elimination DAG. Identity blocks (eq. 5 on V̇_c, eq. 6 on
F_in) make substitutions with no arithmetic at all: RNEA and ABA fall out of the orderings, not of special code.

Pivots are fixed here, so they must be good at every state, not just one. Each candidate is scored by its
smallest ratio, over several random states, to the largest candidate in its column (threshold partial
pivoting, made state-independent): a constant ±1, or the articulated inertia Sᵀ Iᴬ S of ABA, scores well
everywhere; an entry that passes through zero as a joint turns scores badly. Among candidates within
``THRESHOLD`` of the best, constants come first, then entries that keep one sign over the samples (one that
takes both signs vanishes somewhere between them, the states being connected and the entry continuous: a
floating base's coupling that a symmetric stance zeroes, say), then rows with fewer entries (less fill). What a
fixed choice cannot promise, the run-time checks of ``gtdyn.compiled.codegen`` verify.

The robot's reference configuration (every joint at zero: ``gtdyn.compiled.states.build_states``) is where
symmetry zeroes entries that random states never do: a straight leg zeroes its foot's contact rows, the pivots
random states like best for its q̈. A plan notes when one of its pivots vanishes there (``vanishing``); a plan
built with ``reference`` scores its candidates there too, so none of its pivots vanishes there, though the ones
it takes instead may be smaller elsewhere (``gtdyn.compiled.rescue`` keeps such a plan for the states the first
cannot take). Near that state the first plan's pivot is small and its answer loses digits, which the unchecked
call would not see: the generated code guards each such pivot (``guarded``; ``gtdyn.compiled.guards``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gtdyn import keys
from gtdyn.compiled import trace
from gtdyn.compiled.states import SAMPLES
from gtdyn.dynamics.graph import constrained_contacts, coupled_transmissions, dynamics_equations
from gtdyn.linear.system import Key
from gtdyn.model.robot import Robot
from gtdyn.problem import Problem

THRESHOLD = 0.1  # a pivot at least a tenth of the best candidate's state-independent score
VANISHES = 1e-8  # at the reference configuration, a candidate this small beside the largest there is zero


@dataclass
class Row:
    """One exact equation row: Σ_key coef[key] · x_key = rhs; ``label`` says which equation it came from."""

    coef: dict[int, np.ndarray]
    rhs: object
    label: str


@dataclass
class Plan:
    """The symbolic elimination of one graph in one ordering.

    ``rows``: the original rows (for residuals and column norms), then their current state in ``work``;
    ``tape``: the row operations (i, p, l) in order; ``pivots``: (key, component, row) in elimination order;
    ``parents[key]``: the variables x's conditional really uses; ``reference``, ``guarded``: see the module.
    """

    order: list[int]
    rows: list[Row]
    work: list[dict[int, np.ndarray]] = field(default_factory=list)
    tape: list[tuple[int, int, object]] = field(default_factory=list)
    pivots: list[tuple[int, int, int]] = field(default_factory=list)
    parents: dict[int, set] = field(default_factory=dict)
    reference: bool = False  # pivots scored at the reference configuration too
    guarded: list = field(default_factory=list)  # (pivot, its smallest magnitude at the samples): zero there

    @property
    def vanishing(self) -> bool:
        """Whether some pivot is zero at the reference configuration."""
        return bool(self.guarded)

    @property
    def unknowns(self) -> list[int]:
        """The unknowns by key, as the reference path numbers them (``gtsam.VectorValues`` order)."""
        return sorted(self.order)


def off_pivot(row: dict, key: int, c: int):
    """((variable, component), coefficient) of a pivot row's entries other than its pivot, structural zeros left out."""
    for other, block in row.items():
        for k, coefficient in enumerate(block):
            if (other, k) != (key, c) and (trace.is_sym(coefficient) or coefficient != 0):
                yield (other, k), coefficient


def equation_labels(robot: Robot, problem: Problem) -> list[str]:
    """A label per equation of ``dynamics_equations``, in its order."""
    out = []
    for joint in robot.joints:
        out += [f"eq. 5, joint {joint.name}", f"eq. 7, joint {joint.name}"]
    bodies = (robot.base, *robot.links) if robot.floating_base else robot.links
    out += [f"eq. 6, link {link.name}" for link in bodies]
    out += [f"contact {c.number}, {c.contact.kind} on {c.contact.link}" for c in constrained_contacts(problem)]
    out += [f"transmission {t.name}" for t in coupled_transmissions(robot, problem)]
    out += [f"planar, joint {robot.joints[j - 1].name}" for j in problem.planar]
    return out


def traced_rows(robot: Robot, kin, problem: Problem, gravity, external_wrenches=None) -> list[Row]:
    """The exact equations as rows of traced coefficients (structurally zero entries left out);
    ``external_wrenches`` as ``dynamics_equations`` takes them, traced."""
    if problem.minimum_torque or problem.minimum_contact:
        raise ValueError("soft minimum-norm rows are solved by the reference path")
    rows = []
    equations = dynamics_equations(robot, kin, problem, gravity, external_wrenches)
    for (eq, roles, _), label in zip(equations, equation_labels(robot, problem), strict=True):
        rhs = np.asarray(eq.rhs, dtype=object)
        blocks = {}
        for name, coefficient in eq.coefficients.items():
            role = roles[name]
            coefficient = np.asarray(coefficient, dtype=object).reshape(len(rhs), -1)
            if isinstance(role, Key):
                blocks[int(role)] = coefficient
            else:
                rhs = rhs - coefficient @ np.atleast_1d(np.asarray(role, dtype=object))
        for r in range(len(rhs)):
            coef = {key: block[r].copy() for key, block in blocks.items() if not _zero(block[r])}
            rows.append(Row(coef, rhs[r], label if len(rhs) == 1 else f"{label}, row {r + 1}"))
    return rows


def _zero(entries) -> bool:
    return all(not trace.is_sym(e) and e == 0 for e in entries)


def eliminate(rows: list[Row], order: list[int], on_step=None, reference: bool = False) -> Plan:
    """Gaussian elimination of ``rows`` in ``order`` with pivots chosen as the module docstring says (``reference``:
    scored at the reference configuration too); ``on_step(x, rows)`` is told each variable and the labels of the
    rows that hold it, before its arithmetic."""
    plan = Plan(list(order), rows, [{k: b.copy() for k, b in r.coef.items()} for r in rows], reference=reference)
    active = set(range(len(rows)))
    for x in order:
        if on_step is not None:
            on_step(x, [rows[i].label for i in sorted(active) if x in plan.work[i]])
        stack = [i for i in sorted(active) if x in plan.work[i]]
        mine = []
        for c in range(keys.dim(x)):
            candidates = [i for i in stack if i not in mine and x in plan.work[i] and not _zero([plan.work[i][x][c]])]
            if not candidates:  # structurally singular: no pivot, the generated code solves it as NaN
                continue
            p = _choose(plan, candidates, x, c)
            mine.append(p)
            plan.pivots.append((x, c, p))
            pivot_row = plan.work[p]
            for i in candidates:
                if i == p:
                    continue
                row = plan.work[i]
                multiplier = trace.div(row[x][c], pivot_row[x][c])
                plan.tape.append((i, p, multiplier))
                for key, block in pivot_row.items():
                    updated = row[key] - block * multiplier if key in row else -(block * multiplier)
                    row[key] = updated
                row[x][c] = 0.0  # exactly eliminated
                for key in [k for k, block in row.items() if _zero(block)]:
                    del row[key]
        parents = set()
        for p in mine:
            parents.update(k for k in plan.work[p] if k != x)
            active.discard(p)
        plan.parents[x] = parents
        for i in stack:  # x's remaining entries are exact zeros now
            if i not in mine and x in plan.work[i]:
                del plan.work[i][x]
    return plan


def _choose(plan: Plan, candidates: list[int], x: int, c: int) -> int:
    entries = [plan.work[i][x][c] for i in candidates]
    values = np.array([np.broadcast_to(trace.value(e), _samples(entries)) for e in entries])
    k = _best(plan, candidates, entries, values if plan.reference else values[:, :SAMPLES])
    if values.shape[1] > SAMPLES and _scores(values[:, SAMPLES:])[k] <= VANISHES:  # zero at the reference
        plan.guarded.append((entries[k], float(np.min(np.abs(values[k, :SAMPLES])))))  # configuration
    return candidates[k]


def _best(plan: Plan, candidates: list[int], entries: list, values: np.ndarray) -> int:
    scores = _scores(values)
    best = scores.max()
    crosses_zero = (values > 0).any(axis=1) & (values < 0).any(axis=1)
    eligible = [k for k in range(len(candidates)) if scores[k] >= THRESHOLD * best]
    return min(eligible, key=lambda k: (trace.is_sym(entries[k]), bool(crosses_zero[k]),
                                        sum(len(b) for b in plan.work[candidates[k]].values()), -scores[k]))


def _scores(values: np.ndarray) -> np.ndarray:
    """Each candidate's (row's) smallest ratio, over the states (columns), to the largest candidate there; a state
    where every candidate vanishes (the system singular there) tells none apart and is left out."""
    magnitudes = np.abs(values)
    largest = np.max(magnitudes, axis=0)
    seen = largest > 0
    with np.errstate(all="ignore"):
        ratios = magnitudes[:, seen] / largest[seen]
    return np.nan_to_num(np.min(ratios, axis=1, initial=1.0))


def _samples(entries) -> tuple[int, ...]:
    for e in entries:
        if trace.is_sym(e):
            return np.shape(e.val)
    return (1,)
