"""A representative slice of the conformance sweep (issue 9 §1); ``python tests/verify_conformance.py`` runs it
over every URDF example-robot-data ships (69 files, ~30 s) and prints the table."""

import pytest
from conformance import check_robot
from references import erd_path

CASES = {
    "solo_description/robots/solo12.urdf": "agrees",
    "panda_description/urdf/panda.urdf": "agrees",  # a <mimic> finger, coupled: states keep the coupling
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf": "agrees",  # continuous joints
    "tiago_description/robots/tiago_no_hand.urdf": "agrees",  # indefinite inertias, used as given (warned)
    "icub_description/robots/icub.urdf": "warns",  # zero-inertia head: κ(M) up to 6e7 at random states
    "romeo_description/urdf/romeo_laas_small.urdf": "raises",  # massless fingers: forward dynamics undetermined
    "ur_description/urdf/ur3.urdf": "model error",  # no links, no name: an xacro stub
}


@pytest.mark.parametrize("relative", sorted(CASES))
def test_conformance(relative):
    outcome = check_robot(erd_path(relative), states=2)
    assert outcome.verdict == CASES[relative], outcome
    assert outcome.worst < 1e-8  # every result returned without a warning agrees with Pinocchio
