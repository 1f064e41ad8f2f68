"""gtdyn: robot dynamics as GTSAM factor graphs (Xie & Dellaert, "A Unified Method for Solving Inverse,
Forward, and Hybrid Manipulator Dynamics using Factor Graphs").

    import gtdyn
    robot = gtdyn.load_robot("puma560")
    r = gtdyn.inverse_dynamics(robot, q, v, qdd)
    r.tau, r.bayes_net, r.dag()
    solver = gtdyn.compile(robot, "forward", ordering="aba")   # the same elimination as machine code
    qdd = solver(q, v, tau)
    qdd, dq, dv, dtau = gtdyn.compile(robot, "forward", derivatives=True).derivatives(q, v, tau)
    trajectory = gtdyn.simulate(robot, q, v, tau=tau, dt=1e-3, steps=1000, method="rk4")
    pd = gtdyn.PDController(robot, kp=100.0, kd=10.0, q_ref=q)            # a controller the native loop runs
    runs = gtdyn.simulate_batch(robot, Q0, V0, tau=pd, dt=1e-3, steps=1000, threads=2)   # runs.q: (N, 1001, n)

This module is the user API. The documented submodules are ``gtdyn.analysis`` (DAGs, metrics, steps),
``gtdyn.plot`` (pictures), ``gtdyn.keys`` (variable keys and labels), ``gtdyn.orderings`` (strategies),
``gtdyn.bench`` (timing against Pinocchio) and ``gtdyn.errors``; everything else is internal.
"""

from importlib import metadata as _metadata

from gtdyn.compiled import CompiledSolver, compile
from gtdyn.compiled.center_of_mass import compile_center_of_mass
from gtdyn.compiled.derivatives import Derivatives
from gtdyn.compiled.frames import compile_frames
from gtdyn.compiled.operational import compile_inverse_osim
from gtdyn.compiled.quantities import compile_bias_forces, compile_mass_matrix
from gtdyn.dynamics.operational import operational_space_dag, operational_space_inverse_inertia
from gtdyn.dynamics.quantities import (
    bias_forces,
    center_of_mass,
    center_of_mass_jacobian,
    centroidal_momentum,
    gravity_torques,
    kinetic_energy,
    mass_matrix,
    potential_energy,
)
from gtdyn.dynamics.result import ContactWrench, DynamicsResult
from gtdyn.dynamics.solve import forward_dynamics, hybrid_dynamics, inverse_dynamics, solve
from gtdyn.dynamics.three_pass import ThreePassResult, featherstone_hybrid_dynamics
from gtdyn.equations import GRAVITY
from gtdyn.errors import (
    ArgumentError,
    BudgetError,
    CacheWarning,
    ConvergenceWarning,
    IllConditionedWarning,
    IndeterminateSystemError,
    JointLimitWarning,
    LoopClosureError,
    ModelError,
    ModelWarning,
)
from gtdyn.estimation import FixedLagEstimator, trajectory_inverse_dynamics
from gtdyn.io.load import bundled_path, load_robot
from gtdyn.kinematics.frames import (
    frame_acceleration,
    frame_bias_acceleration,
    frame_jacobian,
    frame_placement,
    frame_velocity,
)
from gtdyn.kinematics.loop_closure import LoopState, close_loops
from gtdyn.linear.budget import memory_budget, set_memory_budget
from gtdyn.model.reduce import lock_joints
from gtdyn.model.robot import Joint, Link, Robot
from gtdyn.orderings import register_ordering
from gtdyn.planning import FrameGoal, PlannedTrajectory, optimize_trajectory
from gtdyn.problem import Contact
from gtdyn.simulation import PDController, Trajectories, Trajectory, simulate, simulate_batch

__all__ = [
    "ArgumentError", "CacheWarning", "CompiledSolver", "Contact", "ContactWrench", "ConvergenceWarning",
    "DynamicsResult", "GRAVITY", "PDController",
    "IllConditionedWarning", "IndeterminateSystemError", "Joint", "JointLimitWarning", "Link",
    "LoopClosureError", "LoopState", "ModelError", "ModelWarning", "Robot", "ThreePassResult", "bundled_path",
    "close_loops", "compile", "draw_mechanism", "featherstone_hybrid_dynamics", "forward_dynamics", "hybrid_dynamics",
    "frame_acceleration", "frame_bias_acceleration", "frame_jacobian", "frame_placement", "frame_velocity",
    "inverse_dynamics", "load_robot", "register_ordering", "simulate", "simulate_batch", "solve", "Trajectory",
    "Trajectories", "FixedLagEstimator",
    "trajectory_inverse_dynamics", "bias_forces", "center_of_mass", "center_of_mass_jacobian", "centroidal_momentum",
    "compile_bias_forces", "compile_center_of_mass", "compile_mass_matrix", "gravity_torques", "kinetic_energy",
    "lock_joints", "mass_matrix",
    "potential_energy",
    "compile_frames", "Derivatives", "PlannedTrajectory", "optimize_trajectory", "FrameGoal", "BudgetError",
    "memory_budget", "set_memory_budget", "operational_space_inverse_inertia",
    "operational_space_dag", "compile_inverse_osim",
]
try:  # the version lives in pyproject.toml alone
    __version__ = _metadata.version("gtdyn")
except _metadata.PackageNotFoundError:  # a source checkout on sys.path, not installed
    __version__ = "unknown"


def __getattr__(name: str):  # gtdyn.draw_mechanism, without importing the drawing code up front
    if name == "draw_mechanism":
        from gtdyn.plot.mechanism import draw_mechanism

        return draw_mechanism
    raise AttributeError(f"module 'gtdyn' has no attribute '{name}'")
