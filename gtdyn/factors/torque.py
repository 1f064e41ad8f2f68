"""Torque factor (eq. 7): ``torque_equation`` of ``gtdyn.equations`` — the joint torque is the wrench projected
on the screw axis, less the constraint forces of the transmissions the joint takes part in, plus an armature's
J q̈. The equation is linear with constant coefficients, so its Jacobians are its blocks."""

from __future__ import annotations

import gtsam

from gtdyn.equations import torque_equation
from gtdyn.errors import ArgumentError
from gtdyn.factors.base import constant_equation_error, hard, present
from gtdyn.model.robot import Joint


class TorqueFactor(gtsam.CustomFactor):
    """Eq. 7:  e = Sᵀ F − τ − Σ_k c_k λ_k + J q̈.  Keys: F, τ, then λ_k per transmission the joint takes part in
    (``transmissions``: (key of λ_k, the joint's share c_k), as ``Robot.transmission_shares``
    lists them: 1 for the driven joint, −ratio for a driving one), then q̈ (``a``) if the joint has an armature."""

    def __init__(self, joint: Joint, F: int, tau: int, transmissions: list[tuple[int, float]] = (),
                 a: int | None = None):
        if joint.armature and a is None:
            raise ArgumentError(f"a: joint '{joint.name}' has an armature (J q̈ in eq. 7): its q̈ key is needed")
        eq = torque_equation(joint.screw_axis, tuple(share for _, share in transmissions), joint.armature)
        roles = {"F": F, "tau": tau, **{f"L{k}": L for k, (L, _) in enumerate(transmissions)}}
        if joint.armature:
            roles["a"] = a
        keys = present(*roles.values())
        super().__init__(hard(1), keys, constant_equation_error(eq, roles, keys, "torque_error"))
