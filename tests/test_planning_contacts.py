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
    with pytest.raises(gtdyn.ArgumentError, match="^initial: not built yet for a floating robot"):
        gtdyn.optimize_trajectory(robot, base_pose=T0, initial=object(), **common)
    arm = gtdyn.load_robot("rr")
    with pytest.raises(gtdyn.ArgumentError, match="^base_pose: 'rr' has a fixed base"):
        gtdyn.optimize_trajectory(arm, q0=[0, 0], steps=4, dt=0.05, base_pose=np.eye(4))
