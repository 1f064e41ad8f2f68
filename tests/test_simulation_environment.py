"""Simulation with an environment (issue 20, item 2 and 7): external wrenches held over a run, and rigid contacts
whose forces each sample records — checked against independent routes: the wrench as the joint torques Jᵀ F of a
controller (J from the frame Jacobian, checked against Pinocchio in test_frames.py), and every sample against
the reference path's constrained forward dynamics."""

import numpy as np
import pytest
from references import rel_err
from test_derivatives import FLOATING_ARM

import gtdyn

FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("axes", ["local", "world_aligned"])
def test_a_held_wrench_moves_the_arm_as_the_torques_j_transpose_f(axes):
    puma = gtdyn.load_robot("puma560")
    F = np.array([0.0, 0.0, 0.02, 3.0, -2.0, -20.0])
    q0, v0 = np.array([0.1, -0.4, 0.3, 0.2, -0.5, 0.3]), np.zeros(6)
    pushed = gtdyn.simulate(puma, q0, v0, dt=1e-3, steps=100, method="rk4", external_wrenches={"flange": F},
                            wrench_axes=axes)

    def equivalent(t, q, v):  # the wrench's joint torques at the current state
        return gtdyn.frame_jacobian(puma, q, "flange", reference=axes).T @ F

    driven = gtdyn.simulate(puma, q0, v0, dt=1e-3, steps=100, method="rk4", tau=equivalent)
    assert rel_err(pushed.q, driven.q) < 1e-12
    assert np.max(np.abs(pushed.q[-1] - gtdyn.simulate(puma, q0, v0, dt=1e-3, steps=100, method="rk4").q[-1])) > 1e-3


@pytest.mark.parametrize("name, feet", [("floating_arm", ["tip"]),
                                        pytest.param("quadruped", FEET, marks=pytest.mark.heavy)])
def test_a_floating_robot_in_contact_records_the_reference_paths_contact_forces(name, feet, tmp_path):
    """A small floating arm with its tip held, and (heavy set) the quadruped on four feet."""
    if name == "floating_arm":
        path = tmp_path / "floating_arm.urdf"
        path.write_text(FLOATING_ARM)
        name = str(path)
    robot = gtdyn.load_robot(name, base="floating")
    contacts = [gtdyn.Contact(foot) for foot in feet]
    n = robot.num_dofs
    q0 = np.tile([0.0, 0.6, -1.2], 4) if n == 12 else np.array([0.4, -0.3])
    tau = np.tile([0.0, 1.0, -2.0], 4) if n == 12 else np.array([0.5, -0.2])
    start = np.eye(4)
    start[2, 3] = 0.4
    run = gtdyn.simulate(robot, q0, np.zeros(n), tau=tau, dt=1e-3, steps=60, contacts=contacts, base_pose=start)
    assert run.contact_forces.shape == (61, 3 * len(feet))
    for k in (0, 30, 60):
        r = gtdyn.forward_dynamics(robot, run.q[k], run.v[k], tau, base_pose=run.base_pose[k],
                                   base_twist=run.base_twist[k], contacts=contacts)
        assert rel_err(run.contact_forces[k], np.concatenate([w.local[3:] for w in r.contact_wrenches])) < 1e-9
        assert rel_err(np.concatenate([run.base_accel[k], run.qdd[k]]), np.concatenate([r.base_accel, r.qdd])) < 1e-9
    # held at the acceleration level: each foot drifts only by the integrator's error
    for foot in feet:
        here = [gtdyn.frame_placement(robot, run.q[k], foot, base_pose=run.base_pose[k]).translation() for k in (0, 60)]
        assert np.linalg.norm(here[1] - here[0]) < 1e-3


def test_contacts_and_wrenches_are_checked_as_the_dynamics_check_them():
    rr = gtdyn.load_robot("rr")
    with pytest.raises(gtdyn.ArgumentError, match="^external_wrenches: unknown link or frame 'hand'"):
        gtdyn.simulate(rr, [0, 0], [0, 0], dt=0.01, steps=2, external_wrenches={"hand": np.zeros(6)})
    with pytest.raises(gtdyn.ArgumentError, match="^contacts"):
        gtdyn.simulate(rr, [0, 0], [0, 0], dt=0.01, steps=2, contacts=[gtdyn.Contact("hand")])
    with pytest.raises(gtdyn.ArgumentError, match="not the variational integrator"):
        gtdyn.simulate(rr, [0, 0], [0, 0], dt=0.01, steps=2, method="variational",
                       contacts=[gtdyn.Contact(rr.links[-1].name)])
