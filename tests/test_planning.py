"""Kinodynamic trajectory optimization (issue 22, first part): every knot of an optimized trajectory obeys the
dynamics by Pinocchio's rnea (not gtdyn's solver) and the collocation rule, the limits hold as constraints,
passive joints carry no torque, and the effort beats a quintic rest-to-rest interpolation of the same motion."""

import dataclasses
import warnings

import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import PinocchioModel
from gtdyn.planning.replan import held_acceleration

pytestmark = pytest.mark.usefixtures("private_cache")
START, GOAL = np.array([0.0, 0.0]), np.array([1.0, -0.5])
TOL = 1e-6  # the check on dynamics and collocation; the optimizer meets them to 1e-8 (its tolerance)


@pytest.fixture(scope="module")
def rr():
    robot = gtdyn.load_robot("rr")
    return robot, PinocchioModel(robot.source, robot)


def collocation_residual(plan) -> float:
    h = np.diff(plan.t)[:, None]
    if plan.collocation == "trapezoidal":
        dq = plan.q[1:] - plan.q[:-1] - h / 2 * (plan.v[:-1] + plan.v[1:])
        dv = plan.v[1:] - plan.v[:-1] - h / 2 * (plan.qdd[:-1] + plan.qdd[1:])
    else:
        dq = plan.q[1:] - plan.q[:-1] - h * plan.v[:-1]
        dv = plan.v[1:] - plan.v[:-1] - h * plan.qdd[:-1]
    return float(max(np.max(np.abs(dq)), np.max(np.abs(dv))))


@pytest.mark.parametrize("collocation", ["trapezoidal", "euler"])
def test_a_rest_to_rest_motion_obeys_pinocchios_dynamics_at_every_knot(rr, collocation):
    robot, ref = rr
    plan = gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, goal_v=np.zeros(2), steps=30, dt=0.05,
                                     collocation=collocation)
    assert plan.converged and plan.violation <= 1e-8 and len(plan.t) == 31
    for k in range(31):
        assert rel_err(plan.tau[k], ref.rnea(plan.q[k], plan.v[k], plan.qdd[k])) < TOL
    assert collocation_residual(plan) < TOL
    assert np.max(np.abs(plan.q[0] - START)) < 1e-8 and np.max(np.abs(plan.v[0])) < 1e-8
    assert np.max(np.abs(plan.q[-1] - GOAL)) < 1e-8 and np.max(np.abs(plan.v[-1])) < 1e-8
    # less effort than a quintic rest-to-rest interpolation of the same motion (its torques by Pinocchio)
    s = plan.t[:, None] / plan.t[-1]
    q = START + (10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5) * (GOAL - START)
    v = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / plan.t[-1] * (GOAL - START)
    a = (60 * s - 180 * s ** 2 + 120 * s ** 3) / plan.t[-1] ** 2 * (GOAL - START)
    quintic = sum(0.05 * np.sum(ref.rnea(q[k], v[k], a[k]) ** 2) for k in range(31))
    assert sum(0.05 * np.sum(plan.tau[k] ** 2) for k in range(31)) < quintic


def test_a_torque_limit_is_a_constraint_met_to_the_tolerance(rr):
    robot, ref = rr
    tight = dataclasses.replace(robot, joints=tuple(dataclasses.replace(j, effort=4.0) for j in robot.joints))
    plan = gtdyn.optimize_trajectory(tight, q0=START, goal_q=GOAL, goal_v=np.zeros(2), steps=30, dt=0.05)
    free = gtdyn.optimize_trajectory(tight, q0=START, goal_q=GOAL, goal_v=np.zeros(2), steps=30, dt=0.05,
                                     limits=False)
    assert np.max(np.abs(free.tau)) > 5.0  # the limit matters
    assert plan.converged and np.max(np.abs(plan.tau)) <= 4.0 + 1e-8 and np.max(np.abs(plan.tau)) > 4.0 - 1e-6
    assert max(rel_err(plan.tau[k], ref.rnea(plan.q[k], plan.v[k], plan.qdd[k])) for k in range(31)) < TOL


def test_passive_joints_carry_no_torque():
    robot = gtdyn.load_robot("rrr").with_actuated(["j1", "j3"])
    plan = gtdyn.optimize_trajectory(robot, q0=[0.3, 0.2, 0.1], steps=20, dt=0.02)
    ref = PinocchioModel(robot.source, robot)
    assert plan.converged and np.max(np.abs(plan.tau[:, 1])) < 1e-9
    for k in range(21):  # the passive joint's zero torque is what Pinocchio needs for this motion too
        assert rel_err(plan.tau[k], ref.rnea(plan.q[k], plan.v[k], plan.qdd[k])) < TOL


CART_POLE = """<robot name="cart_pole">
  <link name="rail"/>
  <joint name="slider" type="prismatic"><parent link="rail"/><child link="cart"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="30" velocity="10"/></joint>
  <link name="cart"><inertial><mass value="1.0"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial></link>
  <joint name="hinge" type="continuous"><parent link="cart"/><child link="pole"/><axis xyz="0 1 0"/>
    <limit effort="0" velocity="20"/></joint>
  <link name="pole"><inertial><origin xyz="0 0 -0.5"/><mass value="0.2"/>
    <inertia ixx="0.0167" ixy="0" ixz="0" iyy="0.0167" iyz="0" izz="0.0001"/></inertial></link>
</robot>"""


def test_a_cart_pole_swings_its_passive_pole_up(tmp_path):
    """The classic underactuated swing-up: only the cart is pushed (≤ 30 N, within ±2 m), the pole hangs from a
    passive hinge and must end upright at rest."""
    path = tmp_path / "cart_pole.urdf"
    path.write_text(CART_POLE)
    robot = gtdyn.load_robot(str(path)).with_actuated(["slider"])
    plan = gtdyn.optimize_trajectory(robot, q0=[0, 0], goal_q=[0, np.pi], goal_v=[0, 0], steps=60, dt=0.05)
    assert plan.converged and abs(plan.q[-1, 1] - np.pi) < 1e-8
    assert np.max(np.abs(plan.tau[:, 1])) < 1e-9 and np.max(np.abs(plan.tau[:, 0])) <= 30 + 1e-8
    assert np.max(np.abs(plan.q[:, 0])) <= 2 + 1e-8
    ref = PinocchioModel(str(path), robot)
    assert max(rel_err(plan.tau[k], ref.rnea(plan.q[k], plan.v[k], plan.qdd[k])) for k in range(61)) < TOL
    assert collocation_residual(plan) < TOL


def test_impossible_requests_are_named_and_a_short_run_says_it_stopped(rr):
    robot, _ = rr
    with pytest.raises(gtdyn.ArgumentError, match="^goal_q: joint 'j1' at 4 is outside its limits"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=[4.0, 0.0], steps=10, dt=0.05)
    with pytest.raises(gtdyn.ArgumentError, match="^steps: expected a whole number ≥ 1"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, steps=0, dt=0.05)
    with pytest.raises(gtdyn.ArgumentError, match="^q0"):
        gtdyn.optimize_trajectory(robot, q0=[np.nan, 0.0], goal_q=GOAL, steps=10, dt=0.05)
    with pytest.raises(gtdyn.ArgumentError, match="^collocation: 'rk4' is not one of"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, steps=10, dt=0.05, collocation="rk4")
    with pytest.raises(gtdyn.ArgumentError, match="optimize_trajectory does not cover closed loops"):
        gtdyn.optimize_trajectory(gtdyn.load_robot("four_bar"), q0=np.zeros(4), steps=5, dt=0.05)
    with pytest.raises(gtdyn.ArgumentError, match=r"^qdd0: expected a vector of length 2, got shape \(3,\)"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, steps=10, dt=0.05, qdd0=[0.0, 0.0, 0.0])
    with pytest.raises(gtdyn.ArgumentError, match="^base_accel0: 'rr' has a fixed base"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, steps=10, dt=0.05, base_accel0=np.zeros(6))
    with pytest.raises(gtdyn.ArgumentError, match="^real_time_steps: expected a whole number ≥ 1"):
        gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, steps=10, dt=0.05, real_time_steps=0)
    from gtdyn.planning import Replanner
    with pytest.raises(gtdyn.ArgumentError, match="^iterations: expected a whole number ≥ 1"):
        Replanner(robot, goal_q=GOAL, steps=10, dt=0.05, iterations=0.5)
    with pytest.raises(gtdyn.ArgumentError, match="^hold_acceleration: expected True or False, got 'yes'"):
        Replanner(robot, goal_q=GOAL, steps=10, dt=0.05, hold_acceleration="yes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = gtdyn.optimize_trajectory(robot, q0=START, goal_q=GOAL, goal_v=np.zeros(2), steps=30, dt=0.05,
                                         max_iterations=1)
    assert not plan.converged and plan.iterations == 1
    assert any(issubclass(w.category, gtdyn.ConvergenceWarning) for w in caught)


def test_frame_goals_in_task_space(rr):
    """The tip through a via point at knot 10 and to a final position; positions checked by frame_placement (itself
    checked against Pinocchio in test_frames.py), the dynamics by Pinocchio's rnea."""
    robot, ref = rr
    goals = [gtdyn.FrameGoal("tip", position=[1.2, 0.8, 0.0]),
             gtdyn.FrameGoal("tip", position=[0.5, 1.2, 0.0], knot=10)]
    plan = gtdyn.optimize_trajectory(robot, q0=START, goal_v=np.zeros(2), steps=20, dt=0.05, frame_goals=goals)
    assert plan.converged
    assert np.max(np.abs(gtdyn.frame_placement(robot, plan.q[-1], "tip").translation() - [1.2, 0.8, 0.0])) < 1e-8
    assert np.max(np.abs(gtdyn.frame_placement(robot, plan.q[10], "tip").translation() - [0.5, 1.2, 0.0])) < 1e-8
    assert max(rel_err(plan.tau[k], ref.rnea(plan.q[k], plan.v[k], plan.qdd[k])) for k in range(21)) < TOL


def test_bad_frame_goals_are_named(rr):
    robot, _ = rr
    cases = ((gtdyn.FrameGoal("hand", position=[1, 0, 0]), r"frame_goals\[0\]: unknown link or frame 'hand'"),
             (gtdyn.FrameGoal("tip"), r"frame_goals\[0\]: give a position, a rotation or both"),
             (gtdyn.FrameGoal("tip", position=[1, 0, 0], knot=11), r"frame_goals\[0\].knot: expected a knot"),
             (gtdyn.FrameGoal("tip", position=[1, 0]), r"frame_goals\[0\].position"),
             (gtdyn.FrameGoal("tip", rotation=np.ones((3, 3))), r"frame_goals\[0\].rotation"))
    for goal, message in cases:
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.optimize_trajectory(robot, q0=START, steps=10, dt=0.05, frame_goals=[goal])


def test_the_plan_command_writes_what_the_library_plans(tmp_path, capsys):
    from gtdyn.cli import main

    code = main(["plan", "rr", "--q0", "0,0", "--goal", "1.0,-0.5", "--steps", "30", "--out", str(tmp_path / "rr")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "converged after" in out and (tmp_path / "rr.png").is_file()
    table = np.loadtxt(tmp_path / "rr.csv", delimiter=",", skiprows=1)
    plan = gtdyn.optimize_trajectory(gtdyn.load_robot("rr"), q0=START, goal_q=GOAL, goal_v=np.zeros(2), steps=30,
                                     dt=0.05)
    assert table.shape == (31, 9) and np.max(np.abs(table[:, 7:] - plan.tau)) < 1e-12
    code = main(["plan", "rr", "--q0", "0,0", "--goal", "9,0"])
    assert code == 1 and "--goal: joint 'j1' at 9 is outside its limits" in capsys.readouterr().err


@pytest.mark.parametrize("hold", [True, False])
def test_replanning_from_a_measured_state_starts_from_the_last_plan(rr, hold):
    """After the first step (a measured state a little off the plan), the warm-started replan reaches the same
    plan as a cold start from that state, to the optimizers' tolerance: with the acceleration under way held (the
    cold start given it as ``qdd0``) or free (a receding horizon's default)."""
    from gtdyn.planning import Replanner

    robot, _ = rr
    replanner = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, hold_acceleration=hold)
    first = replanner.plan(START)
    q, v = first.q[1] + 1e-3, first.v[1] * 0.99
    warm = replanner.replan(q, v)
    cold = gtdyn.optimize_trajectory(robot, q0=q, v0=v, goal_q=GOAL, goal_v=np.zeros(2), steps=30, dt=0.05,
                                     qdd0=held_acceleration(first) if hold else None)
    assert warm.converged and cold.converged and replanner.last is warm
    # both stop when the merit falls by less than 1e-12 of itself: their q agree to ~1e-7 (seen 2e-9 to 7e-7)
    assert np.max(np.abs(warm.q[0] - q)) < 1e-8 and np.max(np.abs(warm.q - cold.q)) < 1e-6
    held = np.max(np.abs(warm.qdd[0] - first.qdd[1]))  # rr: both joints actuated, torques inside their limits
    assert held < 1e-8 if hold else held > 1e-3  # free, the first acceleration moves


def test_a_fixed_horizon_replan_plans_the_knots_left_to_the_same_goal_time(rr):
    """``horizon="fixed"`` (STEAP's replanning): after the first step the replan covers the 29 steps left, so the
    goal keeps its time; warm-started from the last plan's tail it reaches the plan a cold start of that tail
    problem reaches, to the optimizers' tolerance (as the receding replan above), and every knot obeys Pinocchio's
    dynamics. Once the steps are used up, ``replan`` says so."""
    from gtdyn.planning import Replanner

    robot, ref = rr
    replanner = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, horizon="fixed")
    first = replanner.plan(START)
    q, v = first.q[1] + 1e-3, first.v[1] * 0.99
    warm = replanner.replan(q, v)
    cold = gtdyn.optimize_trajectory(robot, q0=q, v0=v, goal_q=GOAL, goal_v=np.zeros(2), steps=29, dt=0.05,
                                     qdd0=held_acceleration(first))
    assert warm.converged and cold.converged and len(warm.t) == 30 and replanner.executed == 1
    assert np.max(np.abs(warm.q[0] - q)) < 1e-8 and np.max(np.abs(warm.q - cold.q)) < 1e-6
    assert np.max(np.abs(warm.q[-1] - GOAL)) < 1e-8 and np.max(np.abs(warm.v[-1])) < 1e-8
    for k in range(30):
        assert rel_err(warm.tau[k], ref.rnea(warm.q[k], warm.v[k], warm.qdd[k])) < TOL
    assert collocation_residual(warm) < TOL
    short = Replanner(robot, goal_q=GOAL, steps=3, dt=0.5, horizon="fixed")
    plan = short.plan(START)
    for knots in (3, 2):
        plan = short.replan(plan.q[1], plan.v[1])
        assert len(plan.t) == knots and plan.converged
    with pytest.raises(gtdyn.ArgumentError, match="^replan: the fixed horizon of 3 steps is used up"):
        short.replan(plan.q[1], plan.v[1])
    with pytest.raises(gtdyn.ArgumentError, match="^horizon: 'moving' is not one of receding, fixed"):
        Replanner(robot, goal_q=GOAL, steps=3, dt=0.2, horizon="moving")


def test_a_fixed_horizon_replan_holds_only_the_accelerations_it_can(tmp_path):
    """The cart-pole replanned from a state a little off its plan: holding the pole's acceleration too would ask
    its passive hinge for torque (it did: every replan stopped with a violation of ~1e-3), so only the cart's is
    held; the replan converges, the hinge carries no torque and the cart's first q̈ is the last plan's. A joint
    whose torque rides its limit at that knot is left free as well."""
    from gtdyn.planning import Replanner

    path = tmp_path / "cart_pole.urdf"
    path.write_text(CART_POLE)
    robot = gtdyn.load_robot(str(path)).with_actuated(["slider"])
    replanner = Replanner(robot, goal_q=[0, np.pi], steps=60, dt=0.05, horizon="fixed")
    first = replanner.plan([0.0, 0.0])
    held = held_acceleration(first)
    assert held[0] == first.qdd[1, 0] and np.isnan(held[1])
    again = replanner.replan(first.q[1] + 1e-3, first.v[1] - 1e-3)
    assert again.converged and np.max(np.abs(again.tau[:, 1])) < 1e-9 and again.qdd[0, 0] == pytest.approx(
        first.qdd[1, 0], abs=1e-9)
    ref = PinocchioModel(str(path), robot)
    assert max(rel_err(again.tau[k], ref.rnea(again.q[k], again.v[k], again.qdd[k])) for k in range(60)) < TOL
    riding = dataclasses.replace(first, tau=np.where(np.arange(2) == 0, 30.0, first.tau))  # the cart at its 30 N
    assert np.all(np.isnan(held_acceleration(riding)))


def test_a_real_time_replan_takes_at_most_its_steps_and_says_how_far_it_is(rr):
    """``iterations=k`` (a real-time iteration): one step from the last plan's tail leaves the constraints unmet —
    the plan says so (``converged`` False, a ConvergenceWarning) and its ``violation`` is the largest residual that
    Pinocchio's dynamics, the collocation rule and the boundary show; three steps meet the tolerance, at the cost a
    replan solved to the optimum reaches, up to the polish it skips."""
    from gtdyn.errors import ConvergenceWarning
    from gtdyn.planning import Replanner

    robot, ref = rr

    def replanned(**options):
        replanner = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, horizon="fixed", **options)
        first = replanner.plan(START)
        return replanner.replan(first.q[1] + 1e-3, first.v[1] * 0.99), first

    with pytest.warns(ConvergenceWarning, match="constraint violated by"):
        one, first = replanned(iterations=1)
    q, v = first.q[1] + 1e-3, first.v[1] * 0.99
    shown = max([float(np.max(np.abs(one.tau[k] - ref.rnea(one.q[k], one.v[k], one.qdd[k])))) for k in range(30)]
                + [collocation_residual(one), *np.abs(one.q[0] - q), *np.abs(one.v[0] - v),
                   *np.abs(one.q[-1] - GOAL), *np.abs(one.v[-1])])
    assert one.iterations == 1 and not one.converged and one.violation > 1e-8
    # the same residual, by Pinocchio rather than the compiled solver: equal to rounding (both ~1e-5, seen 4.6e-5)
    assert abs(shown - one.violation) < 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        three, _ = replanned(iterations=3)
    optimum, _ = replanned()
    assert three.converged and three.iterations <= 3 and three.violation <= 1e-8
    # a feasible point near the optimum: the cost gap is second order in the distance (seen 3e-10 of the cost)
    assert abs(three.cost - optimum.cost) < 1e-6 * optimum.cost


def test_a_prepared_replan_is_one_gauss_newton_step_from_the_measured_state(rr):
    """``prepare()`` before the measurement, ``replan(q, v)`` after it (the feedback): the plan starts at the
    measured state exactly (the start rows are hard and linear), reports as its violation the largest residual that
    Pinocchio's dynamics and the collocation rule show, and is the one-step real-time iteration's plan up to second
    order (each linearized at points 1e-3 apart); a replan after it is an ordinary one again."""
    from gtdyn.planning import Replanner

    robot, ref = rr

    def replanned(prepare: bool):
        replanner = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, horizon="fixed", iterations=1,
                              tolerance=1e-3)
        first = replanner.plan(START)
        if prepare:
            replanner.prepare()
            assert replanner.prepared is not None
        return replanner.replan(first.q[1] + 1e-3, first.v[1] * 0.99), first, replanner

    fed, first, replanner = replanned(prepare=True)
    one_step, _, _ = replanned(prepare=False)
    q, v = first.q[1] + 1e-3, first.v[1] * 0.99
    assert len(fed.t) == 30 and replanner.executed == 1 and replanner.prepared is None
    assert np.max(np.abs(fed.q[0] - q)) < 1e-12 and np.max(np.abs(fed.v[0] - v)) < 1e-12
    shown = max([float(np.max(np.abs(fed.tau[k] - ref.rnea(fed.q[k], fed.v[k], fed.qdd[k])))) for k in range(30)]
                + [collocation_residual(fed), *np.abs(fed.q[-1] - GOAL), *np.abs(fed.v[-1])])
    assert fed.converged and 1e-8 < fed.violation <= 1e-3 and abs(shown - fed.violation) < 1e-9
    # the same step but for where it was linearized: 1e-3 apart, so they differ by ~1e-6 (seen 1.5e-5 N m in τ)
    assert np.max(np.abs(fed.q - one_step.q)) < 1e-6 and np.max(np.abs(fed.tau - one_step.tau)) < 1e-3
    again = replanner.replan(fed.q[1], fed.v[1])
    assert again.iterations == 1 and len(again.t) == 29
    # with iterations=3 the feedback is the first of three steps at most: the rest meet the tolerance
    more = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, horizon="fixed", iterations=3)
    more.plan(START)
    more.prepare()
    finished = more.replan(q, v)
    assert finished.converged and finished.violation <= 1e-8 and 1 < finished.iterations <= 3


def test_what_a_prepared_replan_refuses(rr):
    from gtdyn.planning import Replanner

    robot, _ = rr
    replanner = Replanner(robot, goal_q=GOAL, steps=30, dt=0.05, horizon="fixed")
    with pytest.raises(gtdyn.ArgumentError, match="^prepare: nothing planned yet"):
        replanner.prepare()
    first = replanner.plan(START)
    replanner.prepare()
    with pytest.raises(gtdyn.ArgumentError, match="^q"):
        replanner.replan([np.nan, 0.0], first.v[1])
    replanner.prepare()
    with pytest.raises(gtdyn.ArgumentError, match="^q: joint 'j1' at 4 is outside its limits"):
        replanner.replan([4.0, 0.0], first.v[1])
    floating = Replanner(gtdyn.load_robot("quadruped", base="floating"), steps=4, dt=0.05)
    floating.last = first  # anything planned: the refusal is the base's
    with pytest.raises(gtdyn.ArgumentError, match="^prepare: 'quadruped' floats"):
        floating.prepare()


def test_a_fixed_horizon_moves_contact_runs_and_frame_goals_with_its_first_knot():
    """``options_after``: after two executed steps of a 21-knot plan a run [0, 8) becomes [0, 6), [13, 21) becomes
    [11, 19), a run over by then ([0, 2)) is gone and one under way ([1, 5)) is clipped to start at the new first
    knot; a frame goal at knot 10 moves to 8, one at knot 2 (now the measured first knot) is dropped and one
    counted from the end keeps its knot."""
    from gtdyn.planning.replan import options_after

    goals = [gtdyn.FrameGoal("l1", position=[0, 0, 0], knot=10), gtdyn.FrameGoal("l1", position=[0, 0, 0], knot=2),
             gtdyn.FrameGoal("l1", position=[0, 0, 0], knot=-3)]
    options = {"contacts": {"a": [(0, 8), (13, 21)], "b": [(0, 2)], "c": [(1, 5)]}, "frame_goals": goals,
               "friction": 0.5}
    after = options_after(options, 2, 21)
    assert after["contacts"] == {"a": [(0, 6), (11, 19)], "b": [], "c": [(0, 3)]}
    assert [g.knot for g in after["frame_goals"]] == [8, -3] and after["friction"] == 0.5
    assert options["contacts"]["a"] == [(0, 8), (13, 21)] and options["frame_goals"][0].knot == 10  # not changed


def test_a_robots_planning_solver_is_compiled_once_and_the_kept_ones_are_few():
    """A replanning loop calls ``optimize_trajectory`` at every step: its compiled solver is kept per robot and
    options (loading it from the disk cache each time cost more than a real-time step), for the last
    ``KEPT_SOLVERS`` of them only."""
    from gtdyn.planning.optimize import KEPT_SOLVERS, planning_solver

    planning_solver.cache_clear()
    robot = gtdyn.load_robot("rr")
    solver = planning_solver(robot, (0.0, 0.0, -9.81), None)
    assert planning_solver(robot, (0.0, 0.0, -9.81), None) is solver
    assert planning_solver(robot, (0.0, 0.0, -1.62), None) is not solver  # the moon's gravity: another solver
    assert planning_solver(gtdyn.load_robot("rr"), (0.0, 0.0, -9.81), None) is not solver
    for _ in range(KEPT_SOLVERS):
        planning_solver(gtdyn.load_robot("rr"), (0.0, 0.0, -9.81), None)
    assert planning_solver.cache_info().currsize == KEPT_SOLVERS
    assert planning_solver(robot, (0.0, 0.0, -9.81), None) is not solver  # let go, compiled (loaded) again
