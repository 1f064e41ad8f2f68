"""Determinacy independent of the ordering (issue 9 §1–2): a singular system raises in every ordering, an
ill-conditioned one warns in every ordering, and a well-conditioned one gives the same answer in every ordering;
over-determined data (q̈ prescribed at passive joints) that the actuated joints cannot produce is an error."""

import re
import warnings

import numpy as np
import pytest
from references import erd_path, rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.linear.elimination import SINGULAR_CONDITION, WARN_CONDITION
from gtdyn.orderings import applicable

LIMIT = '<limit lower="-3" upper="3" effort="10" velocity="5"/>'


def chain_urdf(tip_scale: float | None) -> str:
    """A spatial 3R chain; its last two links are massless (tip_scale None) or carry mass and inertia
    scaled by tip_scale (1: a 1 kg, 0.1 kg·m² link)."""
    def inertial(scale):
        if scale is None:
            return ""
        return (f'<inertial><origin xyz="0.5 0 0"/><mass value="{scale}"/><inertia ixx="{0.1 * scale}" ixy="0" '
                f'ixz="0" iyy="{0.1 * scale}" iyz="0" izz="{0.1 * scale}"/></inertial>')
    return f"""<robot name="chain"><link name="base"/>
<link name="l1">{inertial(1.0)}</link><link name="l2">{inertial(tip_scale)}</link><link name="l3">{inertial(tip_scale)}</link>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>{LIMIT}</joint>
<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="1 0 0"/><axis xyz="0 1 0"/>{LIMIT}</joint>
<joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="1 0 0"/><axis xyz="0 1 0"/>{LIMIT}</joint>
</robot>"""  # noqa: E501


def load_chain(tmp_path, tip_scale):
    path = tmp_path / f"chain_{tip_scale}.urdf"
    path.write_text(chain_urdf(tip_scale))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)  # the massless chain says so when it loads
        return gtdyn.load_robot(path)


STATE = (np.array([0.3, -0.4, 0.7]), np.array([0.5, -1.0, 2.0]), np.array([1.0, -2.0, 0.5]))


def test_massless_links_raise_in_every_ordering(tmp_path):
    """The issue's case: colamd answered q̈ ≈ [0, 436.3, −8190.0] and md [0, 0, 0]; now all raise alike."""
    robot = load_chain(tmp_path, None)
    q, v, tau = STATE
    for elimination in ("qr", "constrained"):
        for ordering in applicable("forward"):
            with pytest.raises(gtdyn.IndeterminateSystemError) as info:
                gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering, elimination=elimination)
            assert {"a2", "a3"} <= set(info.value.free_variables) and "a1" not in info.value.free_variables, ordering
            assert "link l2" in str(info.value) and "joint j3" in str(info.value)
    # inverse dynamics stays determined: the massless links need no torque
    tau = gtdyn.inverse_dynamics(robot, q, v, STATE[2]).tau
    assert np.all(np.isfinite(tau))


@pytest.mark.parametrize("tip_scale, verdict", [(1e-3, "ok"), (1e-10, "warn"), (1e-16, "raise")])
def test_nearly_massless_links_get_one_verdict_in_every_ordering(tmp_path, tip_scale, verdict):
    """Tip links 1e-3, 1e-10, 1e-16 of the first link's mass and inertia: condition ~1e4, ~1e11, ~1e17."""
    robot = load_chain(tmp_path, tip_scale)
    q, v, tau = STATE
    answers = {}
    for ordering in applicable("forward"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                r = gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering)
                answers[ordering] = r.qdd
                outcome = "warn" if any(issubclass(w.category, gtdyn.IllConditionedWarning) for w in caught) else "ok"
                assert (r.condition > WARN_CONDITION) == (outcome == "warn")
            except gtdyn.IndeterminateSystemError as e:
                outcome = "raise"
                assert e.condition > SINGULAR_CONDITION
        assert outcome == verdict, ordering
        if outcome == "warn":
            message = str(next(w.message for w in caught if issubclass(w.category, gtdyn.IllConditionedWarning)))
            assert re.search(r"link l[23]|joint j[23]", message) and "link l1" not in message
    if verdict == "ok":  # well-conditioned: every ordering gives the same answer to round-off
        for ordering, qdd in answers.items():
            assert rel_err(qdd, answers["colamd"]) < 1e-10, ordering


def test_icub_head_is_indeterminate_not_a_confident_number():
    """iCub at q = 0: a head of zero inertia (Pinocchio's mass matrix has κ ≈ 1.8e17). The neck q̈ came out as
    419 (colamd), 3144 (aba) or 660 (crba) rad/s²; now every ordering names the neck joints."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(erd_path("icub_description/robots/icub.urdf"))
    zero = np.zeros(robot.num_dofs)
    for ordering in ("crba", "aba", "colamd"):
        with pytest.raises(gtdyn.IndeterminateSystemError) as info:
            gtdyn.forward_dynamics(robot, zero, zero, zero, ordering=ordering)
        assert "a25" in info.value.free_variables and "neck_yaw" in str(info.value), ordering


def test_condition_estimate_tracks_the_true_condition_number():
    """The estimate is 1/σ_min of the column-equilibrated equations, a lower bound within a small factor; the
    dense SVD here is the check. The same estimate in every ordering (to round-off)."""
    robot = gtdyn.load_robot("puma560")
    rng = np.random.default_rng(3)
    q, v, tau = rng.uniform(-1, 1, (3, 6))
    estimates = []
    for ordering in applicable("forward"):
        r = gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering)
        estimates.append(r.condition)
    A, _ = r.graph.jacobian()
    s = np.linalg.svd(A / np.linalg.norm(A, axis=0), compute_uv=False)
    true = s[0] / s[-1]
    assert all(true / 10 < e <= true * 1.0000001 * s[0] for e in estimates), (estimates, true)
    assert max(estimates) / min(estimates) < 1 + 1e-6


def test_prescribed_passive_motion_the_actuators_cannot_produce():
    """The issue's case: rr with only j1 actuated cannot give both joints q̈ = 1. The error names j2 and the q̈
    the dynamics give it (checked by hybrid dynamics, which solves for it)."""
    rr = gtdyn.load_robot("rr").with_actuated(["j1"])
    q, v = np.array([0.3, -0.2]), np.array([0.1, 0.2])
    achievable = gtdyn.hybrid_dynamics(rr, q, v, qdd={"j1": 1.0}, tau={}).qdd[1]
    for ordering in applicable("inverse"):
        with pytest.raises(gtdyn.ArgumentError, match=r"^qdd: .*passive joints j2 \(asked 1, the dynamics give "
                           + re.escape(f"{achievable:.6g}")):
            gtdyn.inverse_dynamics(rr, q, v, [1.0, 1.0], ordering=ordering)
    # the achievable motion is accepted, and the torque it needs reproduces it
    r = gtdyn.inverse_dynamics(rr, q, v, [1.0, achievable])
    assert r.tau[1] == 0.0
    assert rel_err(gtdyn.forward_dynamics(rr, q, v, r.tau).qdd, [1.0, achievable]) < 1e-10


def test_well_posed_robots_agree_with_pinocchio_and_report_their_condition():
    path = erd_path("ur_description/urdf/ur5_robot.urdf")
    robot = gtdyn.load_robot(path)
    ref = PinocchioModel(path, robot)
    q, v, tau = np.random.default_rng(9).uniform(-1, 1, (3, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtdyn.IllConditionedWarning)
        r = gtdyn.forward_dynamics(robot, q, v, tau)
    assert rel_err(r.qdd, ref.aba(q, v, tau)) < 1e-10
    assert 1 < r.condition < 1e4  # κ(M) ≈ 3e2 for the UR5; the equations' own κ is of that order


def test_no_two_orderings_disagree_without_a_warning_or_an_error():
    """The issue's rule as a property: random trees (prismatic joints, off-diagonal inertias) whose links'
    masses and inertias are scaled by factors from 1 down to 1e-16, so that some are nearly or numerically
    massless. For every robot, forward dynamics in every ordering either raises IndeterminateSystemError in all
    of them, or returns in all of them; results returned without an IllConditionedWarning agree to 1e-9."""
    import dataclasses

    from gtdyn.model.build import build_robot
    from gtdyn.model.random import random_description

    verdicts = set()
    for seed in range(24):
        rng = np.random.default_rng(7000 + seed)
        description = random_description(rng, n=4, tree=True, prismatic=0.3)
        scales = [1.0] + [10.0 ** -rng.choice([0, 0, 3, 9, 11, 13, 16]) for _ in description.links[1:]]
        links = tuple(dataclasses.replace(ls, mass=ls.mass * k, inertia=ls.inertia * k)
                      for ls, k in zip(description.links, scales))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)
            robot = build_robot(dataclasses.replace(description, links=links))
        q, v, tau = rng.uniform(-1, 1, (3, robot.num_dofs))
        outcomes, quiet = {}, {}
        for ordering in applicable("forward"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    qdd = gtdyn.forward_dynamics(robot, q, v, tau, ordering=ordering).qdd
                    warned = any(issubclass(w.category, gtdyn.IllConditionedWarning) for w in caught)
                    outcomes[ordering] = "warns" if warned else "ok"
                    if not warned:
                        quiet[ordering] = qdd
                except gtdyn.IndeterminateSystemError:
                    outcomes[ordering] = "raises"
        if "raises" in outcomes.values():  # one ordering's verdict is every ordering's
            assert set(outcomes.values()) == {"raises"}, (seed, outcomes)
        for ordering, qdd in quiet.items():
            first = next(iter(quiet.values()))
            assert rel_err(qdd, first) < 1e-9, (seed, ordering)
        verdicts.update(outcomes.values())
    assert verdicts == {"ok", "warns", "raises"}  # the scales reach all three verdicts


def test_free_variables_of_numbers_an_svd_cannot_take_is_empty_not_a_numpy_error():
    """An overflowing state can leave inf and NaN in the equations; naming the free variables then falls back on
    the condition estimate's weak direction instead of raising LinAlgError from deep inside numpy (a falling
    Talos integrated with too large a step did this)."""
    import gtsam

    from gtdyn.linear.elimination import free_variables

    graph = gtsam.GaussianFactorGraph()
    graph.push_back(gtsam.JacobianFactor(1, np.array([[np.inf, 1.0], [1.0, np.nan]]), np.zeros(2),
                                         gtsam.noiseModel.Unit.Create(2)))
    assert free_variables(graph, {1: np.ones(2)}) == []
