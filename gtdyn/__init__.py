"""gtdyn: robot dynamics as GTSAM factor graphs (Xie & Dellaert, "A Unified Method for Solving Inverse,
Forward, and Hybrid Manipulator Dynamics using Factor Graphs").

    import gtdyn
    robot = gtdyn.load_robot("puma560")
    r = gtdyn.inverse_dynamics(robot, q, v, qdd)
    r.tau, r.bayes_net, r.dag()
"""

from gtdyn.dynamics import GRAVITY, DynamicsResult, forward_dynamics, hybrid_dynamics, inverse_dynamics
from gtdyn.errors import (ArgumentError, IllConditionedWarning, IndeterminateSystemError, LoopClosureError, ModelError,
                          ModelWarning)
from gtdyn.loop_kinematics import LoopState, close_loops
from gtdyn.mechanism_plot import draw_mechanism
from gtdyn.models import bundled_path, load_robot
from gtdyn.robot import Joint, Link, Robot
from gtdyn.three_pass import ThreePassResult, featherstone_hybrid_dynamics

__all__ = [
    "ArgumentError", "GRAVITY", "DynamicsResult", "IllConditionedWarning", "IndeterminateSystemError", "LoopClosureError", "Joint", "Link", "LoopState", "ModelError", "ModelWarning",
    "Robot", "close_loops", "draw_mechanism",
    "ThreePassResult", "bundled_path", "featherstone_hybrid_dynamics", "forward_dynamics", "hybrid_dynamics", "inverse_dynamics", "load_robot",
]
__version__ = "0.1.0"
