"""Frame kinematics (gtdyn.kinematics.frames) against Pinocchio's frame algorithms, on every frame of PUMA 560, UR5,
Panda (mimic fingers read as independent joints, as Pinocchio reads them) and Solo-12 on its free flyer, merged
frames (a fixed joint's child: flange, tool0, panda_hand, the feet) and base links included: placements (oMf),
velocities, spatial and classical accelerations, Jacobians (LOCAL and LOCAL_WORLD_ALIGNED) and J̇ q̇, at a few
random states, to 1e-12. Then gtdyn against itself: J q̇ is the velocity, J q̈ + J̇ q̇ the acceleration, and finite
differences of placements and Jacobians (a test oracle only) give J and J̇ q̇.

Errors are relative (max norm) to max(max|reference|, 1): relative for every quantity of unit size, absolute
where the reference is (round-off of) zero, as at a base link. Pinocchio's vectors are [linear; angular],
gtdyn's [angular; linear]; its free-flyer velocity is [v; ω] of the root link in its own frame.
"""

import warnings
from dataclasses import dataclass

import gtsam
import numpy as np
import pytest
from references import erd_path, load_quietly

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioModel
from gtdyn.kinematics.frames import (
    frame_acceleration,
    frame_bias_acceleration,
    frame_jacobian,
    frame_placement,
    frame_velocity,
)

TOL = 1e-12
FD_TOL = 1e-7  # central differences, step 1e-6: truncation and round-off both near 1e-10
STATES = 3
REFERENCES = ("local", "world_aligned")

# name -> (path, floating base, a frame merged into its body by a fixed joint)
ROBOTS = {
    "puma560": (lambda: gtdyn.bundled_path("puma560"), False, "flange"),
    "ur5": (lambda: erd_path("ur_description/urdf/ur5_robot.urdf"), False, "tool0"),
    "panda": (lambda: erd_path("panda_description/urdf/panda.urdf"), False, "panda_hand"),
    "solo12": (lambda: erd_path("solo_description/robots/solo12.urdf"), True, "FL_FOOT"),
}


def error(x, ref) -> float:
    """max|x − ref| / max(max|ref|, 1)."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1.0))


def angular_first(motion) -> np.ndarray:
    """A Pinocchio motion (or its [v; ω] vector) as gtdyn's [ω; v]."""
    x = np.asarray(getattr(motion, "vector", motion))
    return np.concatenate([x[3:], x[:3]])


@dataclass
class State:
    """One random state in gtdyn's arguments, and Pinocchio's data at it: ``fk`` after forwardKinematics(q, v, a)
    and updateFramePlacements, ``bias`` after forwardKinematics(q, v, 0) and
    computeJointJacobiansTimeVariation(q, v)."""

    q: np.ndarray
    v: np.ndarray
    qdd: np.ndarray
    base: dict  # base_pose, base_twist (empty for a fixed base)
    base_accel: dict
    v_full: np.ndarray  # [base twist; v]: what a Jacobian multiplies
    qdd_full: np.ndarray
    fk: object
    bias: object


@dataclass
class Case:
    robot: gtdyn.Robot
    ref: PinocchioModel
    merged: str
    states: list

    @property
    def columns(self) -> list[int]:
        """Pinocchio's velocity index of each gtdyn velocity entry (the free flyer's first, [ω; v])."""
        return ([3, 4, 5, 0, 1, 2] if self.robot.floating_base else []) + list(self.ref.idx_v)

    def frame_id(self, frame: str) -> int:
        return self.ref.model.getFrameId(frame, self.ref.pin.FrameType.BODY)


def random_state(ref: PinocchioModel, robot, rng) -> State:
    n = robot.num_dofs
    q, v, qdd = rng.uniform(-np.pi, np.pi, n), rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
    base, base_accel, twist, accel, extra = {}, {}, np.zeros(0), np.zeros(0), ()
    if robot.floating_base:
        quaternion = rng.normal(size=4)
        T = np.eye(4)
        T[:3, :3] = gtsam.Rot3.Quaternion(*(quaternion / np.linalg.norm(quaternion))).matrix()
        T[:3, 3] = rng.normal(size=3)
        twist, accel = rng.normal(size=6), rng.normal(size=6)
        base, base_accel, extra = {"base_pose": T, "base_twist": twist}, {"base_accel": accel}, (T,)
    pin, model = ref.pin, ref.model
    conf = ref.configuration(q, *extra)
    tangent = (lambda x, b: ref.tangent(x, b)) if robot.floating_base else (lambda x, b: ref.tangent(x))
    fk, bias = model.createData(), model.createData()
    pin.forwardKinematics(model, fk, conf, tangent(v, twist), tangent(qdd, accel))
    pin.updateFramePlacements(model, fk)
    pin.forwardKinematics(model, bias, conf, tangent(v, twist), np.zeros(model.nv))
    pin.computeJointJacobiansTimeVariation(model, bias, conf, tangent(v, twist))
    return State(q, v, qdd, base, base_accel, np.concatenate([twist, v]), np.concatenate([accel, qdd]), fk, bias)


def make_case(name: str) -> Case:
    path_fn, floating, merged = ROBOTS[name]
    path = path_fn()
    if floating:
        robot = gtdyn.load_robot(path, base="floating")
        ref = FreeFlyerPinocchio(path, robot)
    else:
        robot = load_quietly(path)
        ref = PinocchioModel(path, robot)
    rng = np.random.default_rng(20)
    return Case(robot, ref, merged, [random_state(ref, robot, rng) for _ in range(STATES)])


@pytest.fixture(params=sorted(ROBOTS), scope="module")
def case(request) -> Case:
    return make_case(request.param)


def pinocchio_frame(case: Case, state: State, frame: str, rf: str) -> dict[str, np.ndarray]:
    """Pinocchio's answers for one frame in gtdyn's order: velocity, accelerations, Jacobian, J̇ q̇."""
    pin, model = case.ref.pin, case.ref.model
    fid = case.frame_id(frame)
    rf = pin.ReferenceFrame.LOCAL if rf == "local" else pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    J = pin.computeFrameJacobian(model, model.createData(), case.ref.configuration(state.q, *_pose(state)), fid, rf)
    return {"velocity": angular_first(pin.getFrameVelocity(model, state.fk, fid, rf)),
            "acceleration": angular_first(pin.getFrameAcceleration(model, state.fk, fid, rf)),
            "classical": angular_first(pin.getFrameClassicalAcceleration(model, state.fk, fid, rf)),
            "jacobian": np.vstack([J[3:], J[:3]])[:, case.columns],
            "bias": angular_first(pin.getFrameAcceleration(model, state.bias, fid, rf) if rf == pin.LOCAL else
                                  pin.getFrameClassicalAcceleration(model, state.bias, fid, rf)),
            # Pinocchio leaves the universe joint's J̇ unset: compared where the frame moves with a joint
            "dJ_v": (angular_first(pin.getFrameJacobianTimeVariation(model, state.bias, fid, rf)
                                   @ case.ref.tangent(state.v, *_twist(state)))
                     if model.frames[fid].parentJoint > 0 else None)}


def _pose(state: State) -> tuple:
    return (state.base["base_pose"],) if state.base else ()


def _twist(state: State) -> tuple:
    return (state.base["base_twist"],) if state.base else ()


def gtdyn_frame(case: Case, state: State, frame: str, rf: str) -> dict[str, np.ndarray]:
    robot, base = case.robot, state.base
    pose = {k: x for k, x in base.items() if k == "base_pose"}
    return {"velocity": frame_velocity(robot, state.q, state.v, frame, reference=rf, **base),
            "acceleration": frame_acceleration(robot, state.q, state.v, state.qdd, frame, reference=rf, **base,
                                               **state.base_accel),
            "classical": frame_acceleration(robot, state.q, state.v, state.qdd, frame, reference=rf, classical=True,
                                            **base, **state.base_accel),
            "jacobian": frame_jacobian(robot, state.q, frame, reference=rf, **pose),
            "bias": frame_bias_acceleration(robot, state.q, state.v, frame, reference=rf, **base)}


# -- against Pinocchio ------------------------------------------------------------------------------------------

def test_placements_match_pinocchio(case):
    worst = 0.0
    for state in case.states:
        pose = {k: x for k, x in state.base.items() if k == "base_pose"}
        for frame in case.robot.frames:
            wTf = frame_placement(case.robot, state.q, frame, **pose)
            worst = max(worst, error(wTf.matrix(), state.fk.oMf[case.frame_id(frame)].homogeneous))
    assert worst < TOL


@pytest.mark.parametrize("rf", REFERENCES)
def test_velocities_accelerations_jacobians_and_bias_match_pinocchio(case, rf):
    worst: dict[str, float] = {}
    for state in case.states:
        for frame in case.robot.frames:
            ours, theirs = gtdyn_frame(case, state, frame, rf), pinocchio_frame(case, state, frame, rf)
            for name, x in ours.items():
                worst[name] = max(worst.get(name, 0.0), error(x, theirs[name]))
            if theirs["dJ_v"] is not None:
                worst["dJ_v"] = max(worst.get("dJ_v", 0.0), error(ours["bias"], theirs["dJ_v"]))
    assert set(worst) == {"velocity", "acceleration", "classical", "jacobian", "bias", "dJ_v"}
    assert max(worst.values()) < TOL, worst


def test_every_robot_has_a_merged_frame_and_its_base_link(case):
    """The frames compared above include one merged into its body, and the base link, which moves only with a
    floating base."""
    robot, state = case.robot, case.states[0]
    assert robot.frames[case.merged][0] != case.merged
    V = frame_velocity(robot, state.q, state.v, robot.base.name, **state.base)
    assert np.any(V != 0) if robot.floating_base else np.all(V == 0)


# -- against itself ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rf", REFERENCES)
def test_jacobian_maps_velocity_and_acceleration(case, rf):
    """J q̇ = V_f, and J q̈ + J̇ q̇ = the frame's acceleration: spatial in LOCAL, classical in world-aligned axes
    (J q̇ is then [ω; ṗ] in fixed axes)."""
    robot, state = case.robot, case.states[0]
    pose = {k: x for k, x in state.base.items() if k == "base_pose"}
    for frame in robot.frames:
        J = frame_jacobian(robot, state.q, frame, reference=rf, **pose)
        assert J.shape == (6, len(state.v_full))
        V = frame_velocity(robot, state.q, state.v, frame, reference=rf, **state.base)
        assert error(J @ state.v_full, V) < TOL
        bias = frame_bias_acceleration(robot, state.q, state.v, frame, reference=rf, **state.base)
        A = frame_acceleration(robot, state.q, state.v, state.qdd, frame, reference=rf,
                               classical=rf == "world_aligned", **state.base, **state.base_accel)
        assert error(J @ state.qdd_full + bias, A) < TOL


def moved(case: Case, state: State, h: float, direction: np.ndarray) -> dict:
    """q and the base pose moved by h along a velocity-sized ``direction`` (the base by T · Exp(h ξ))."""
    out = {"q": state.q + h * direction[-case.robot.num_dofs:]}
    if case.robot.floating_base:
        T = gtsam.Pose3(state.base["base_pose"]).compose(gtsam.Pose3.Expmap(h * direction[:6]))
        out["base_pose"] = T
    return out


def test_jacobian_is_the_derivative_of_placements(case):
    """Column k of the LOCAL Jacobian is Log(wTf(x − h e_k)⁻¹ · wTf(x + h e_k)) / 2h."""
    robot, state, h = case.robot, case.states[1], 1e-6
    pose = {k: x for k, x in state.base.items() if k == "base_pose"}
    for frame in robot.frames:
        J = frame_jacobian(robot, state.q, frame, **pose)
        columns = []
        for e in np.eye(J.shape[1]):
            minus = frame_placement(robot, frame=frame, **moved(case, state, -h, e))
            plus = frame_placement(robot, frame=frame, **moved(case, state, h, e))
            columns.append(gtsam.Pose3.Logmap(minus.between(plus)) / (2 * h))
        assert error(np.array(columns).T, J) < FD_TOL, frame


@pytest.mark.parametrize("rf", REFERENCES)
def test_bias_is_the_time_derivative_of_the_jacobian(case, rf):
    """J̇ q̇ = (J(x(h)) − J(x(−h))) q̇ / 2h along the motion x(t) of q̇ (q + t q̇, the base T · Exp(t V_base)), whose
    q̈ and base acceleration are zero."""
    robot, state, h = case.robot, case.states[2], 1e-6
    for frame in robot.frames:
        J_plus = frame_jacobian(robot, frame=frame, reference=rf, **moved(case, state, h, state.v_full))
        J_minus = frame_jacobian(robot, frame=frame, reference=rf, **moved(case, state, -h, state.v_full))
        bias = frame_bias_acceleration(robot, state.q, state.v, frame, reference=rf, **state.base)
        assert error((J_plus - J_minus) @ state.v_full / (2 * h), bias) < FD_TOL, frame


# -- arguments --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda r, z: frame_placement(r, z, "hand"), "frame: 'hand' is not one of base_link, link1"),
    (lambda r, z: frame_placement(r, z, ["flange"]), "frame: \\['flange'\\] is not one of"),
    (lambda r, z: frame_velocity(r, z, z, "flange", reference="world"), "reference: 'world' is not one of local"),
    (lambda r, z: frame_jacobian(r, z, "flange", reference=None), "reference: None is not one of"),
    (lambda r, z: frame_placement(r, z[:5], "flange"), "q: expected a vector of length 6"),
    (lambda r, z: frame_velocity(r, z, [np.nan] * 6, "flange"), "v: non-finite values"),
    (lambda r, z: frame_acceleration(r, z, z, z[:2], "flange"), "qdd: expected a vector of length 6"),
    (lambda r, z: frame_bias_acceleration(r, z, z, "flange", base_twist=np.zeros(6)), "base_twist: robot 'puma560' "
     "has a fixed base"),
    (lambda r, z: frame_jacobian(r, z, "flange", base_pose=np.eye(4)), "base_pose: robot 'puma560' has a fixed"),
    (lambda r, z: frame_acceleration(r, z, z, z, "flange", base_accel=np.zeros(6)), "base_accel: robot 'puma560'"),
    (lambda r, z: frame_placement("puma560", z, "flange"), "robot: expected a gtdyn.Robot"),
])
def test_bad_arguments_name_the_argument(puma, call, message):
    with pytest.raises(gtdyn.ArgumentError, match=message):
        call(puma, np.zeros(6))


def test_bad_base_arguments_of_a_floating_robot():
    robot = gtdyn.load_robot("rrr", base="floating")
    z = np.zeros(robot.num_dofs)
    frame = robot.link_names[-1]
    with pytest.raises(gtdyn.ArgumentError, match="base_pose: the 4×4 matrix is not a rigid transform"):
        frame_placement(robot, z, frame, base_pose=2 * np.eye(4))
    with pytest.raises(gtdyn.ArgumentError, match="base_twist: expected a vector of length 6"):
        frame_velocity(robot, z, z, frame, base_twist=np.zeros(3))
    with pytest.raises(gtdyn.ArgumentError, match="base_accel: non-finite"):
        frame_acceleration(robot, z, z, z, frame, base_accel=[0, 0, np.inf, 0, 0, 0])
    assert frame_jacobian(robot, z, frame, base_pose=gtsam.Pose3()).shape == (6, 6 + robot.num_dofs)


# -- a larger sweep ---------------------------------------------------------------------------------------------

@pytest.mark.heavy
def test_talos_every_frame_on_its_free_flyer():
    """Talos (full: 60 frames on 44 joints, grippers included) on its free flyer, at ten states, both references."""
    path = erd_path("talos_data/robots/talos_full_v2.urdf")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*<mimic>", category=gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base="floating", transmissions="independent")
    ref = FreeFlyerPinocchio(path, robot)
    rng = np.random.default_rng(21)
    talos = Case(robot, ref, "left_sole_link", [random_state(ref, robot, rng) for _ in range(10)])
    worst = 0.0
    for state in talos.states:
        for frame in robot.frames:
            wTf = frame_placement(robot, state.q, frame, base_pose=state.base["base_pose"])
            worst = max(worst, error(wTf.matrix(), state.fk.oMf[talos.frame_id(frame)].homogeneous))
            for rf in REFERENCES:
                ours, theirs = gtdyn_frame(talos, state, frame, rf), pinocchio_frame(talos, state, frame, rf)
                worst = max(worst, *(error(x, theirs[name]) for name, x in ours.items()))
    assert worst < TOL
