"""Nonlinear factors of the full dynamics graph (paper 001, Fig. 1 and 3), as ``gtsam.CustomFactor`` subclasses
with analytic Jacobians. Each evaluates the linear form of its equation from ``gtdyn.equations`` at the current
q, q̇, V and adds the derivatives in those.

Scalar joint quantities (q, q̇, q̈, τ) are stored in ``gtsam.Values`` as 1-vectors; twists, accelerations and
wrenches as 6-vectors; link poses as ``Pose3``. A key given as ``None`` stands for the fixed base (pose
identity, twist and acceleration zero) and is not a variable.
"""

from gtdyn.factors.integration import IntegrationFactor, integration_factors
from gtdyn.factors.min_torque import MinTorqueFactor
from gtdyn.factors.planar import PlanarFactor
from gtdyn.factors.pose import PoseFactor
from gtdyn.factors.priors import joint_prior, pose_prior, vector_prior
from gtdyn.factors.torque import TorqueFactor
from gtdyn.factors.twist import TwistAccelFactor, TwistFactor
from gtdyn.factors.wrench import WrenchFactor

__all__ = ["IntegrationFactor", "MinTorqueFactor", "PlanarFactor", "PoseFactor", "TorqueFactor", "TwistAccelFactor",
           "TwistFactor", "WrenchFactor", "integration_factors", "joint_prior", "pose_prior", "vector_prior"]
