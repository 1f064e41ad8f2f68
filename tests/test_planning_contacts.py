"""Trajectory optimization of a floating robot with contact phases (issue 22, item 3), checked against
Pinocchio: at every knot the generalized forces [0 (the free base); τ] equal Pinocchio's RNEA of the knot's motion
minus the contact forces' Σ Jᵀ f (its own frame Jacobians), the feet stand still on the ground while in contact
(Pinocchio's frame placements), the forces stay in their friction pyramids, and the base follows the collocation
rule on SE(3). The quadruped jump (stance, flight, landing) is in the heavy set and benchmarks/planning.py."""

import gtsam
import numpy as np
import pytest
from references import rel_err

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio
from gtdyn.planning.replan import held_acceleration

pytestmark = pytest.mark.usefixtures("private_cache")
TOL = 1e-6  # the check on dynamics and collocation; the optimizer meets them to 1e-8 (its tolerance)
FEET = ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
FRICTION = 0.7


@pytest.fixture(scope="module")
def quadruped():
    robot = gtdyn.load_robot("quadruped", base="floating")
    return robot, FreeFlyerPinocchio(robot.source, robot)


def standing(robot):
    """The bent-knee standing pose of urdf/quadruped.urdf and the base pose that puts its feet on z = 0."""
    q = np.zeros(robot.num_dofs)
    for leg, sign in (("FL", 1), ("FR", 1), ("RL", -1), ("RR", -1)):
        q[robot.joint_names.index(f"{leg}_HFE")] = 0.8 * sign
        q[robot.joint_names.index(f"{leg}_KFE")] = -1.6 * sign
    T = np.eye(4)
    T[2, 3] = 0.4 * np.cos(0.8)
    return q, T


def check_plan(plan, ref, stances):
    """Every knot against Pinocchio; the feet in contact still and on the ground; the forces in their cones; the
    base's collocation on SE(3). ``stances``: {foot: [(a, b), …]}."""
    pin = ref.pin
    for k in range(len(plan.t)):
        config = ref.configuration(plan.q[k], plan.base_pose[k])
        generalized = pin.rnea(ref.model, ref.data, config, ref.tangent(plan.v[k], plan.base_twist[k]),
                               ref.tangent(plan.qdd[k], plan.base_accel[k]))
        pin.computeJointJacobians(ref.model, ref.data, config)
        pin.framesForwardKinematics(ref.model, ref.data, config)
        for foot, forces in plan.contact_forces.items():
            J = pin.getFrameJacobian(ref.model, ref.data, ref.model.getFrameId(foot),
                                     pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            generalized = generalized - J[:3].T @ forces[k]
        base, tau = ref.base_part(generalized), ref.joint_order(generalized)
        scale = max(np.max(np.abs(generalized)), 1.0)
        assert np.max(np.abs(base)) / scale < TOL, k  # nothing but the feet pushes the base
        assert rel_err(plan.tau[k], tau) < TOL, k
    for foot, runs in stances.items():
        frame = ref.model.getFrameId(foot)
        for a, b in runs:
            points = []
            for k in range(a, b):
                pin.framesForwardKinematics(ref.model, ref.data, ref.configuration(plan.q[k], plan.base_pose[k]))
                points.append(ref.data.oMf[frame].translation.copy())
            assert np.max(np.abs(np.array(points) - points[0])) < TOL and abs(points[0][2]) < TOL
        f = plan.contact_forces[foot]
        assert np.all(f[:, 2] >= -TOL)
        assert np.all(np.abs(f[:, :2]) <= FRICTION * f[:, 2:] + TOL)
    h = np.diff(plan.t)
    for k in range(len(h)):
        step = gtsam.Pose3.Logmap(gtsam.Pose3(np.linalg.inv(plan.base_pose[k]) @ plan.base_pose[k + 1]))
        assert np.max(np.abs(step - h[k] / 2 * (plan.base_twist[k] + plan.base_twist[k + 1]))) < TOL
        assert np.max(np.abs(plan.base_twist[k + 1] - plan.base_twist[k]
                             - h[k] / 2 * (plan.base_accel[k] + plan.base_accel[k + 1]))) < TOL


def test_a_quadruped_rises_on_its_four_feet(quadruped):
    """Standing, the torso rises 3 cm in 0.4 s and stops: the feet push, stand still and stay in their cones."""
    robot, ref = quadruped
    q0, T0 = standing(robot)
    goal = T0.copy()
    goal[2, 3] += 0.03
    stances = {foot: [(0, 9)] for foot in FEET}
    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_v=np.zeros(12), steps=8, dt=0.05, base_pose=T0,
                                     goal_base_pose=goal, goal_base_twist=np.zeros(6), contacts=stances,
                                     friction=FRICTION)
    assert plan.converged and plan.violation < 1e-8
    assert np.allclose(plan.base_pose[-1], goal, atol=1e-8) and np.allclose(plan.base_pose[0], T0, atol=1e-12)
    check_plan(plan, ref, stances)
    weight = 9.81 * (robot.base.mass + sum(link.mass for link in robot.links))
    support = sum(plan.contact_forces[f][:, 2] for f in FEET)
    assert support[0] > weight and support[-1] < weight  # they push it up, then let it stop


def test_a_thrown_quadruped_follows_the_ballistic_parabola(quadruped):
    """No contacts: thrown up at 2 m/s, the torso's height is z₀ + 2 t − g t²/2 at every knot (the trapezoidal rule
    integrates a constant acceleration exactly), its orientation stays, and no joint needs a torque."""
    robot, _ = quadruped
    q0, T0 = standing(robot)
    plan = gtdyn.optimize_trajectory(robot, q0=q0, steps=8, dt=0.05, base_pose=T0,
                                     base_twist=[0, 0, 0, 0, 0, 2.0])
    assert plan.converged and plan.contact_forces == {}
    t = plan.t
    # the plan meets each collocation row to the solve's tolerance, 1e-8; over 8 steps the heights may add them up
    np.testing.assert_allclose(plan.base_pose[:, 2, 3], T0[2, 3] + 2.0 * t - 0.5 * 9.81 * t ** 2, rtol=0, atol=1e-7)
    np.testing.assert_allclose(plan.base_pose[:, :3, :3], np.broadcast_to(np.eye(3), (9, 3, 3)), atol=1e-7)
    # no torque is needed: the optimum is τ = 0, reached to the solve's stopping rule (a relative merit change of
    # 1e-12, not an exact zero), which leaves ~1e-8 N m
    assert np.max(np.abs(plan.tau)) < 1e-6


def test_a_floating_warm_start_and_a_replan_from_the_state_one_step_on(quadruped):
    """The rise, warm-started from its own converged plan (base poses, twists, accelerations, torques, contact
    forces and multipliers), converges again in fewer iterations to the same cost; then replanned by a
    ``Replanner`` from the state one step on (the velocities measured 1 % off), warm-started from the plan moved one
    knot on: it starts at the measured state, every knot passes the Pinocchio checks, and it reaches the cost a
    cold start from that state reaches."""
    from gtdyn.planning import Replanner

    robot, ref = quadruped
    q0, T0 = standing(robot)
    goal = T0.copy()
    goal[2, 3] += 0.03
    stances = {foot: [(0, 9)] for foot in FEET}
    options = dict(goal_v=np.zeros(12), goal_base_pose=goal, goal_base_twist=np.zeros(6), contacts=stances,
                   friction=FRICTION)
    replanner = Replanner(robot, steps=8, dt=0.05, hold_acceleration=True, **options)
    cold = replanner.plan(q0, base_pose=T0)
    warm = gtdyn.optimize_trajectory(robot, q0=q0, base_pose=T0, steps=8, dt=0.05, initial=cold, **options)
    assert cold.converged and warm.converged and warm.iterations < cold.iterations
    # both stop when a step lowers the merit by less than 1e-12 of itself; their costs agree to ~1e-8 (seen 1.4e-8)
    assert abs(warm.cost - cold.cost) < 1e-6 * cold.cost
    check_plan(warm, ref, stances)
    q, v, T, V = cold.q[1], 0.99 * cold.v[1], cold.base_pose[1], 0.99 * cold.base_twist[1]
    again = replanner.replan(q, v, base_pose=T, base_twist=V)
    assert again.converged and replanner.last is again
    assert np.max(np.abs(again.base_pose[0] - T)) < 1e-12 and np.max(np.abs(again.q[0] - q)) < 1e-12
    assert np.max(np.abs(again.base_twist[0] - V)) < 1e-12 and np.max(np.abs(again.v[0] - v)) < 1e-12
    # the joints' accelerations under way held (asked for: a receding horizon's default frees them); the base's
    # follows from the dynamics
    held = held_acceleration(cold)
    assert not np.any(np.isnan(held)) and np.max(np.abs(again.qdd[0] - held)) < 1e-8
    assert np.allclose(again.base_pose[-1], goal, atol=1e-8)
    check_plan(again, ref, stances)
    fresh = gtdyn.optimize_trajectory(robot, q0=q, v0=v, base_pose=T, base_twist=V, steps=8, dt=0.05,
                                      qdd0=held, **options)
    # as good as a cold start from that state, up to which stationary point each stops at: the valley is flat, and
    # rounding-level changes in the derivatives moved the two stops from 5e-7 to 1.3e-4 of the cost apart, each a
    # point where neither the full nor the tangential Gauss–Newton step lowers the merit (probed), so 1e-3
    assert fresh.converged and abs(again.cost - fresh.cost) < 1e-3 * fresh.cost


def test_a_fixed_horizon_replan_on_a_floating_base(quadruped):
    """The rise replanned with ``horizon="fixed"`` from the state one step on (velocities 1 % off): the 7 steps
    left, from the plan's tail, with the stances moved to the new knots ([0, 9) → [0, 8)); it starts at the
    measured state, ends at the goal at the first plan's time, passes the Pinocchio checks, and reaches the cost a
    cold start of the same problem reaches (up to which stationary point each stops at, as above)."""
    from gtdyn.planning import Replanner

    robot, ref = quadruped
    q0, T0 = standing(robot)
    goal = T0.copy()
    goal[2, 3] += 0.03
    options = dict(goal_v=np.zeros(12), goal_base_pose=goal, goal_base_twist=np.zeros(6), friction=FRICTION)
    replanner = Replanner(robot, steps=8, dt=0.05, horizon="fixed", contacts={foot: [(0, 9)] for foot in FEET},
                          **options)
    first = replanner.plan(q0, base_pose=T0)
    q, v, T, V = first.q[1], 0.99 * first.v[1], first.base_pose[1], 0.99 * first.base_twist[1]
    again = replanner.replan(q, v, base_pose=T, base_twist=V)
    stances = {foot: [(0, 8)] for foot in FEET}
    assert again.converged and len(again.t) == 8
    assert np.max(np.abs(again.base_pose[0] - T)) < 1e-12 and np.max(np.abs(again.v[0] - v)) < 1e-12
    assert np.allclose(again.base_pose[-1], goal, atol=1e-8)
    check_plan(again, ref, stances)
    fresh = gtdyn.optimize_trajectory(robot, q0=q, v0=v, base_pose=T, base_twist=V, steps=7, dt=0.05,
                                      contacts=stances, qdd0=held_acceleration(first), **options)
    assert fresh.converged and abs(again.cost - fresh.cost) < 1e-3 * fresh.cost


def pinocchio_placement(ref, plan, k: int, frame: str) -> np.ndarray:
    ref.pin.framesForwardKinematics(ref.model, ref.data, ref.configuration(plan.q[k], plan.base_pose[k]))
    return ref.data.oMf[ref.model.getFrameId(frame)].homogeneous.copy()


@pytest.mark.parametrize("frame, stances, goal", [
    ("torso", {foot: [(0, 9)] for foot in FEET}, dict(position=[0.02, 0.0, 0.4 * np.cos(0.8) + 0.03],
                                                         rotation=np.eye(3))),
    pytest.param("RR_foot", {foot: [(0, 9)] for foot in FEET[:3]}, dict(position=[-0.25, -0.15, 0.05]),
                 marks=pytest.mark.heavy)])
def test_frame_goals_on_a_floating_base(quadruped, frame, stances, goal):
    """Task-space goals at the last knot: the torso moved 2 cm forward and 3 cm up on its four feet, and (heavy
    set) the rear right foot lifted to a point while the other three stand — reached, by Pinocchio's placements."""
    robot, ref = quadruped
    q0, T0 = standing(robot)
    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_v=np.zeros(12), steps=8, dt=0.05, base_pose=T0,
                                     goal_base_twist=np.zeros(6), contacts=stances, friction=FRICTION,
                                     frame_goals=[gtdyn.FrameGoal(frame, **goal)])
    assert plan.converged
    check_plan(plan, ref, stances)
    reached = pinocchio_placement(ref, plan, 8, frame)
    assert np.max(np.abs(reached[:3, 3] - goal["position"])) < 1e-8
    if "rotation" in goal:
        assert np.max(np.abs(reached[:3, :3] - goal["rotation"])) < 1e-8


@pytest.mark.heavy
def test_a_quadruped_jumps(quadruped):
    """Stance, flight, landing (21 knots of 0.03 s): in flight no force and the feet above the ground."""
    robot, ref = quadruped
    q0, T0 = standing(robot)
    stances = {foot: [(0, 8), (13, 21)] for foot in FEET}
    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_q=q0, goal_v=np.zeros(12), steps=20, dt=0.03,
                                     base_pose=T0, goal_base_pose=T0, goal_base_twist=np.zeros(6),
                                     contacts=stances, friction=FRICTION)
    assert plan.converged
    check_plan(plan, ref, stances)
    assert plan.base_pose[10, 2, 3] > T0[2, 3] + 0.02  # off the ground
    for foot in FEET:
        assert not np.any(plan.contact_forces[foot][8:13])


def test_what_a_floating_plan_refuses(quadruped):
    robot, _ = quadruped
    q0, T0 = standing(robot)
    common = {"q0": q0, "steps": 4, "dt": 0.05}
    with pytest.raises(gtdyn.ArgumentError, match="^base_pose: a floating robot's trajectory starts"):
        gtdyn.optimize_trajectory(robot, **common)
    with pytest.raises(gtdyn.ArgumentError, match="^contacts: unknown link or frame 'paw'"):
        gtdyn.optimize_trajectory(robot, base_pose=T0, contacts={"paw": [(0, 5)]}, **common)
    with pytest.raises(gtdyn.ArgumentError, match=r"^contacts\['FL_foot'\]: expected runs of knots \(a, b\), "
                                                  r"0 ≤ a < b ≤ 5, in order and apart"):
        gtdyn.optimize_trajectory(robot, base_pose=T0, contacts={"FL_foot": [(3, 5), (0, 2)]}, **common)
    with pytest.raises(gtdyn.ArgumentError, match="^friction: "):
        gtdyn.optimize_trajectory(robot, base_pose=T0, contacts={"FL_foot": [(0, 5)]}, friction=-1, **common)
    with pytest.raises(gtdyn.ArgumentError, match="^initial: expected a PlannedTrajectory of 5 knots of "
                                                  "'quadruped' on a floating base"):
        gtdyn.optimize_trajectory(robot, base_pose=T0, initial=object(), **common)
    arm = gtdyn.load_robot("rr")
    with pytest.raises(gtdyn.ArgumentError, match="^base_pose: 'rr' has a fixed base"):
        gtdyn.optimize_trajectory(arm, q0=[0, 0], steps=4, dt=0.05, base_pose=np.eye(4))


def test_the_plan_command_plans_a_floating_robot(quadruped, tmp_path, capsys):
    """``gtdyn plan --base floating``: the torso rises 3 cm on its four feet; the CSV holds what the library plans
    (joints, then the base pose and twist, then each foot's ground force), and bad input names its option."""
    from gtdyn.cli import main

    robot, ref = quadruped
    q0, T0 = standing(robot)
    T0[2, 3] = 0.2787  # as given on the command line (0.4 cos 0.8 = 0.27868…: the feet start 16 µm below z = 0)
    stand = ["--base", "floating", "--q0", ",".join(f"{x:g}" for x in q0), "--base-pose", "0,0,0.2787,0,0,0",
             "--stance", ",".join(FEET), "--steps", "8", "--dt", "0.05"]
    code = main(["plan", "quadruped", *stand, "--goal-base-pose", "0,0,0.3087,0,0,0", "--out", str(tmp_path / "q")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "converged after" in out and "base from (0, 0, 0.2787) to (0, 0, 0.3087) m" in out
    assert (tmp_path / "q.png").is_file()
    header = (tmp_path / "q.csv").read_text().splitlines()[0].split(",")
    table = np.loadtxt(tmp_path / "q.csv", delimiter=",", skiprows=1)
    goal = T0.copy()
    goal[2, 3] = 0.3087
    stances = {foot: [(0, 9)] for foot in FEET}
    plan = gtdyn.optimize_trajectory(robot, q0=q0, goal_v=np.zeros(12), steps=8, dt=0.05, base_pose=T0,
                                     goal_base_pose=goal, goal_base_twist=np.zeros(6), contacts=stances,
                                     friction=FRICTION)
    check_plan(plan, ref, {})  # the dynamics at every knot (the feet stand 16 µm below z = 0: no ground check)
    column = {name: table[:, k] for k, name in enumerate(header)}
    assert table.shape == (9, 1 + 4 * 12 + 13 + 3 * 4)
    assert np.max(np.abs(table[:, 37:49] - plan.tau)) < 1e-12
    assert np.max(np.abs(column["base_z"] - plan.base_pose[:, 2, 3])) < 1e-12
    rotations = [gtsam.Rot3.Quaternion(*(column[f"base_q{c}"][k] for c in "wxyz")).matrix() for k in range(9)]
    assert np.max(np.abs(np.array(rotations) - plan.base_pose[:, :3, :3])) < 1e-12
    assert np.max(np.abs(column["base_vz"] - plan.base_twist[:, 5])) < 1e-12
    assert np.max(np.abs(column["f_RL_foot_z"] - plan.contact_forces["RL_foot"][:, 2])) < 1e-12
    from gtdyn.plot.plan import draw_plan

    figure = draw_plan(plan)  # the picture the command saved: q, the base's position and orientation, feet, τ
    position, _, feet = figure.axes[1:4]
    assert len(figure.axes) == 5
    np.testing.assert_array_equal(position.lines[2].get_ydata(), plan.base_pose[:, 2, 3])  # z
    drawn = {line.get_label(): line.get_ydata() for line in feet.lines}
    np.testing.assert_array_equal(drawn["RL_foot: normal"], plan.contact_forces["RL_foot"][:, 2])
    np.testing.assert_array_equal(drawn["FL_foot: tangential"], np.hypot(*plan.contact_forces["FL_foot"][:, :2].T))
    bad = [(["--stance", "paw", "--goal-base-pose", "0,0,0.3,0,0,0"], "--stance: unknown link or frame 'paw'"),
           (["--goal-base-pose", "1,2"], "--goal-base-pose: expected 7 values"),
           (["--goal-base-pose", "0,0,0.3,0,0,0", "--friction", "-1"], "--friction: "),
           ([], "--goal: the joint positions to reach, comma-separated (one per joint, or one for all); or "
                "--goal-base-pose")]
    for extra, message in bad:
        code = main(["plan", "quadruped", *stand, *extra, "--out", str(tmp_path / "bad")])
        assert code == 1 and f"gtdyn: error: {message}" in capsys.readouterr().err, message
    for extra in (["--stance", "tip"], ["--friction", "0.5"]):
        code = main(["plan", "rr", "--goal", "1,0", *extra, "--out", str(tmp_path / "rr")])
        message = f"{extra[0]}: 'rr' has a fixed base (plan it with --base floating)"
        assert code == 1 and message in capsys.readouterr().err, extra


def test_contact_multipliers_move_between_layouts():
    """A warm start carries the friction pyramids' and clearances' multipliers per knot and frame (knots, frames, 6):
    on the jump's schedule (stances and flights) the layout gives back every row's multiplier, and one of another
    shape is left alone."""
    from gtdyn.planning.contacts import ContactInequalities, ContactSchedule

    schedule = ContactSchedule(tuple(FEET), tuple(((0, 8), (13, 21)) for _ in FEET), FRICTION, 0.0, 21)
    terms = ContactInequalities(schedule)
    rows = np.random.default_rng(0).uniform(0.1, 1.0, terms.multipliers.shape)
    terms.multipliers = rows.copy()
    layout = terms.by_knot()
    assert np.count_nonzero(layout) == len(rows) == 5 * 4 * 16 + 4 * 5  # 16 knots in stance, 5 in flight
    terms.multipliers = np.zeros_like(rows)
    terms.take(layout)
    assert np.array_equal(terms.multipliers, rows)
    terms.take(layout[:-1])
    assert np.array_equal(terms.multipliers, rows)
