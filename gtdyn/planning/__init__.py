"""Kinodynamic trajectory optimization on GTSAM (paper 001's future work): ``optimize_trajectory``, and
``Replanner`` for replanning after each executed step (warm, real-time or prepared)."""

from gtdyn.planning.optimize import PlannedTrajectory, optimize_trajectory
from gtdyn.planning.replan import Replanner
from gtdyn.problem import FrameGoal

__all__ = ["FrameGoal", "PlannedTrajectory", "Replanner", "optimize_trajectory"]
