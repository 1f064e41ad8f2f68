"""``gtdyn.spatial.rpy_matrix``: URDF's and SDFormat's roll-pitch-yaw rotation, with quarter turns exact."""

import math

import numpy as np
from references import elementary_rpy

import gtdyn
from gtdyn.spatial import cos_sin, rpy_matrix


def test_quarter_turns_are_exact():
    """Every rotation by multiples of π/2 (as a file writes them: the double nearest kπ/2) is a signed permutation,
    exactly orthonormal, and the product of elementary rotations rounded to it (those carry 6.1e-17 for zero)."""
    quarters = [k * (math.pi / 2) for k in range(-8, 9)]
    for roll in quarters:
        for pitch in quarters[::3]:
            for yaw in quarters[::2]:
                R = rpy_matrix(roll, pitch, yaw)
                assert set(np.unique(R)) <= {-1.0, 0.0, 1.0}
                assert np.array_equal(R @ R.T, np.eye(3))
                assert np.array_equal(R, np.round(elementary_rpy(roll, pitch, yaw)))


def test_other_angles_turn_as_written():
    """An angle more than a few ulps from a quarter turn keeps its cosine and sine bit for bit (1.5708 is 3.7e-6
    rad short of π/2: a real turn a file may mean); random angles give the elementary product to 1e-15."""
    near = math.pi / 2
    for _ in range(3):  # 4 ulps still a quarter turn, beyond that not
        near = math.nextafter(near, 4.0)
    assert cos_sin(near) == (0.0, 1.0)
    for angle in (1.5708, math.nextafter(near, 4.0) + 1e-15, 0.3, -2.5, 1e-300, 0.0):
        assert cos_sin(angle) == ((1.0, 0.0) if angle in (0.0, 1e-300) else (math.cos(angle), math.sin(angle)))
    rng = np.random.default_rng(3)
    for roll, pitch, yaw in rng.uniform(-4, 4, (200, 3)):
        assert np.max(np.abs(rpy_matrix(roll, pitch, yaw) - elementary_rpy(roll, pitch, yaw))) < 1e-15


def test_the_bundled_puma_has_no_rounding_noise_in_its_frames():
    """The PUMA's DH twists are ±π/2: its joint frames and inertial frames hold exact zeros, not 6.1e-17 (which
    the compiled code multiplied by), and the URDF that ``gtdyn.io.dh`` writes from the table carries none."""
    puma = gtdyn.load_robot("puma560")
    matrices = [j.origin.matrix() for j in puma.joints] + [link.lTcom.matrix() for link in puma.links]
    for T in matrices:
        small = np.abs(T[np.abs(T) < 1e-9])
        assert np.all(small == 0.0), T
