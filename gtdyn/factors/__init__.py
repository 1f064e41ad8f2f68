"""Nonlinear factors of the full dynamics graph (paper 001, Fig. 1 and 3), as ``gtsam.CustomFactor`` subclasses
with analytic Jacobians. Each evaluates the ``LinearEquation`` of its equation from ``gtdyn.equations`` at the
current q, q̇, V and poses (its error is that equation's error), and its Jacobians are the equation's coefficient
blocks plus their derivatives and the right-hand side's in those.

Scalar joint quantities (q, q̇, q̈, τ, λ) are stored in ``gtsam.Values`` as 1-vectors; twists, accelerations,
wrenches and contact forces as vectors; body poses as ``Pose3``. A key given as ``None`` stands for the fixed
base (pose identity, twist and acceleration zero) and is not a variable.
"""

from gtdyn.factors.contact import ContactFactor
from gtdyn.factors.dynamics import DynamicsFactor
from gtdyn.factors.integration import (
                                       IntegrationFactor,
                                       PoseIntegrationFactor,
                                       base_integration_factors,
                                       integration_factors,
)
from gtdyn.factors.min_torque import MinTorqueFactor
from gtdyn.factors.planar import PlanarFactor
from gtdyn.factors.pose import PoseFactor
from gtdyn.factors.priors import joint_prior, pose_prior, vector_prior
from gtdyn.factors.torque import TorqueFactor
from gtdyn.factors.transmission import TransmissionFactor
from gtdyn.factors.twist import TwistAccelFactor, TwistFactor
from gtdyn.factors.wrench import WrenchFactor

__all__ = ["ContactFactor", "DynamicsFactor", "IntegrationFactor", "MinTorqueFactor", "PlanarFactor", "PoseFactor",
           "PoseIntegrationFactor", "TorqueFactor", "TransmissionFactor", "TwistAccelFactor", "TwistFactor",
           "WrenchFactor", "base_integration_factors", "integration_factors", "joint_prior", "pose_prior",
           "vector_prior"]
