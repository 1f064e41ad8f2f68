"""Estimation over time (paper 000 §4–5): trajectories as factor graphs — the dynamics graph at every time
step, joined by integration factors — solved in batch (``trajectory_inverse_dynamics``) or online over a
sliding window with GTSAM's fixed-lag smoothers (``FixedLagEstimator``)."""

from gtdyn.estimation.filter import FixedLagEstimator, StateEstimate
from gtdyn.estimation.trajectory import TrajectoryEstimate, trajectory_inverse_dynamics

__all__ = ["FixedLagEstimator", "StateEstimate", "TrajectoryEstimate", "trajectory_inverse_dynamics"]
