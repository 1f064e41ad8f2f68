"""The magnitudes gtdyn accepts in a robot model, for parsers and for descriptions built in code alike."""

from __future__ import annotations

import numpy as np

from gtdyn.errors import ModelError

# Magnitudes no real robot reaches (the largest manipulators and cranes: ~100 m, ~1e6 kg, ~1e8 kg·m²), with
# orders of margin; a centre of mass 500 km away is a typo, not a robot. They keep every product in the
# Newton–Euler equations far from float overflow (~1.8e308): a spatial inertia entry is at most
# I + m·d² ≤ 1e15 + 1e12·(n·1e5)² ≈ 1e22·n² for n chained links, adjoint transforms multiply by lengths
# ≤ n·1e5, and twists and wrenches at any sane state stay below ~1e40, so even the squares formed by QR stay
# below ~1e80. The same bounds are applied to what a parser produces (``gtdyn.model.build``), so descriptions
# built in code are held to them too.
MAX_LENGTH = 1e5  # m: any translation (origins, poses, centres of mass)
MAX_MASS = 1e12  # kg
MAX_INERTIA = 1e15  # kg·m²: any entry of an inertia matrix
MAX_RATIO = 1e6  # a transmission's ratio (harmonic drives reach ~1e2, multi-stage gearboxes ~1e4)
# rad: a revolute joint's angle. sin and cos of 1e6 rad (160,000 turns) still carry ~1e-10 of their digits; of
# 1e155 or 1e300 none at all, and the dynamics would be those of a random angle
MAX_ANGLE = 1e6


def check_magnitude(values, bound: float, quantity: str, where: str, what: str) -> None:
    """ModelError if any value exceeds ``bound`` in magnitude (see MAX_LENGTH and its siblings)."""
    values = np.atleast_1d(np.asarray(values, dtype=float))
    if values.size and not np.all(np.abs(values) <= bound):
        worst = float(values.flat[int(np.argmax(np.where(np.isnan(values), np.inf, np.abs(values))))])
        raise ModelError(f"{where}: {what} has {quantity} {worst:g}, beyond the ±{bound:g} that gtdyn accepts "
                         "(no real robot comes near; such values overflow the dynamics)")


def check_limit_order(lower: float, upper: float, where: str, what: str) -> None:
    """ModelError if a joint's lower position limit is above its upper one: no position would be allowed, and a
    file with the limits swapped is more likely than one that means that."""
    if lower > upper:
        raise ModelError(f"{where}: {what} has lower limit {float(lower)!r} above its upper limit {float(upper)!r}")
