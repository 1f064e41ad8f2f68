"""Trust at the edges (issue 25, items 3, 4 and 7): absurd angles are an error naming q — on the reference path,
in compiled solvers, for the frames and for close_loops, which also returns at once for many turns — and a contact
on a floating base whose acceleration is given is answered (its force carries the weight) or refused if the given
motion moves it."""

import numpy as np
import pytest

import gtdyn

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("angle", [1e155, 1e300, -1e7])
def test_absurd_angles_name_q_everywhere(angle):
    puma = gtdyn.load_robot("puma560")
    q, zero = np.full(6, angle), np.zeros(6)
    message = r"^q: joint 'joint1' at .* rad is beyond ±1e\+06 rad"
    with pytest.raises(gtdyn.ArgumentError, match=message):
        gtdyn.inverse_dynamics(puma, q, zero, zero)
    with pytest.raises(gtdyn.ArgumentError, match=message):
        gtdyn.compile(puma, "inverse")(q, zero, zero)
    with pytest.raises(gtdyn.ArgumentError, match=message):
        gtdyn.frame_placement(puma, q, "flange")
    with pytest.raises(gtdyn.ArgumentError, match=r"^q: joint 'j1' at .* rad is beyond"):
        gtdyn.close_loops(gtdyn.load_robot("five_bar"), {"j1": angle, "j2": 0.0})


def test_close_loops_goes_the_short_way_round():
    """1,000 turns more on the crank is the same mechanism: the same dependent angles, the crank's as given (the
    continuation used to walk every turn in steps of 0.2 rad)."""
    five_bar = gtdyn.load_robot("five_bar")
    near = gtdyn.close_loops(five_bar, {"j1": 0.3, "j2": 0.1})
    far = gtdyn.close_loops(five_bar, {"j1": 0.3 + 2000 * np.pi, "j2": 0.1})
    crank = five_bar.joint_names.index("j1")
    others = [k for k in range(5) if k != crank]
    assert far.q[crank] == 0.3 + 2000 * np.pi
    assert np.max(np.abs(far.q[others] - near.q[others])) < 1e-9 and far.position_residual < 1e-9


@pytest.mark.parametrize("kind", ["point", "surface"])
def test_a_contact_on_a_floating_base_with_its_acceleration_given(kind):
    """The torso held still at rest: the contact carries the whole weight, upward (an independent check: the
    total mass times g)."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    zero = np.zeros(12)
    r = gtdyn.inverse_dynamics(robot, zero, zero, zero, base_accel=np.zeros(6), contacts=[gtdyn.Contact("torso",
                                                                                                         kind=kind)])
    weight = sum(link.mass for link in robot.links) * 9.81 + robot.base.mass * 9.81
    force = r.contact_wrenches[0].world[3:]
    assert np.max(np.abs(force - [0, 0, weight])) < 1e-9 * weight
    with pytest.raises(gtdyn.ArgumentError, match="^base_accel: contact 1 holds the floating base at 'torso'"):
        gtdyn.inverse_dynamics(robot, zero, zero, zero, base_accel=np.ones(6),
                               contacts=[gtdyn.Contact("torso", kind=kind)])
