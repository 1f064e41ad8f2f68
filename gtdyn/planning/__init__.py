"""Kinodynamic trajectory optimization on GTSAM (paper 001's future work): ``optimize_trajectory``."""

from gtdyn.planning.optimize import PlannedTrajectory, optimize_trajectory

__all__ = ["PlannedTrajectory", "optimize_trajectory"]
