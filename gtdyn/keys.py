"""Variable keys and their human labels: the only place keys are built.

Link quantities are indexed by link (1..n, base 0), joint quantities by joint (1..n); in a tree joint i's
child is link i, so the labels read like the paper's figures. A floating base adds A0 (its V̇) and F0 (the
wrench its environment applies to it, as if through a six-degree-of-freedom joint 0); contact k adds the force
c_k of a point contact (3, drawn "c_k" as it is written) or the wrench C_k of a surface contact (6).

=========  =======  ====================  ==========
variable   symbol   plain label (lists)   pretty label
=========  =======  ====================  ==========
τ_j        t        t3                    τ3
F_j        F        F3                    F3
V̇_i        A        A3                    V̇3
q̈_j        a        a3                    q̈3
V_i        V        V3                    V3
q_j        q        q3                    q3
q̇_j        v        v3                    q̇3
wT_i       T        T3                    T3
contact k  c / C    c2 / C2               c2 / C2
λ_k        L        L1                    λ1
a_k        X        X2                    Ẍ2
=========  =======  ====================  ==========

a_k is the spatial acceleration of contact (or frame) k in its own axes, for the operational-space inertia
(``gtdyn.dynamics.operational``).
"""

from __future__ import annotations

import re
from functools import cache

import gtsam

_PRETTY = {"t": "τ", "F": "F", "A": "V̇", "a": "q̈", "V": "V", "q": "q", "v": "q̇", "T": "T", "C": "C", "c": "c",
           "L": "λ", "X": "Ẍ"}
KINDS = {"t": "torque", "F": "wrench", "A": "twist_accel", "a": "joint_accel", "V": "twist",
         "q": "joint_angle", "v": "joint_vel", "T": "pose", "C": "contact_wrench", "c": "contact_force",
         "L": "transmission_force", "X": "frame_accel"}
DIMS = {"t": 1, "F": 6, "A": 6, "a": 1, "V": 6, "q": 1, "v": 1, "T": 6, "C": 6, "c": 3, "L": 1, "X": 6}


@cache  # keys are built for every equation of every call: build each once
def torque_key(j: int) -> int:
    return gtsam.symbol("t", j)


@cache
def wrench_key(j: int) -> int:
    return gtsam.symbol("F", j)


@cache
def twist_accel_key(i: int) -> int:
    return gtsam.symbol("A", i)


@cache
def joint_accel_key(j: int) -> int:
    return gtsam.symbol("a", j)


@cache
def twist_key(i: int) -> int:
    return gtsam.symbol("V", i)


@cache
def joint_angle_key(j: int) -> int:
    return gtsam.symbol("q", j)


@cache
def joint_vel_key(j: int) -> int:
    return gtsam.symbol("v", j)


@cache
def pose_key(i: int) -> int:
    return gtsam.symbol("T", i)


@cache
def transmission_key(k: int) -> int:
    """The constraint force λ_k of the robot's k-th transmission (1-based)."""
    return gtsam.symbol("L", k)


@cache
def contact_key(k: int, dim: int) -> int:
    """Contact k's unknown: the force of a point contact ("c", 3) or the wrench of a surface contact ("C", 6)."""
    return gtsam.symbol("c" if dim == 3 else "C", k)


@cache
def frame_accel_key(k: int) -> int:
    """The spatial acceleration of contact (or frame) k, in its own axes ("X", 6)."""
    return gtsam.symbol("X", k)


_INDEX_BITS = 56  # a gtsam.Symbol key is its character in the top 8 bits and its index in the 56 below


_STEP_SHIFT = 24  # a variable at time step k carries k above its link/joint index: 16 million links, 2^32 steps


def _split(key: int) -> tuple[str, int]:
    """(symbol character, link or joint index), the time step left out."""
    return chr(key >> _INDEX_BITS), key & ((1 << _STEP_SHIFT) - 1)


def at_step(key: int, k: int) -> int:
    """The same variable at time step k (step 0 is the key itself): for graphs over trajectories."""
    if not 0 <= k < 1 << (_INDEX_BITS - _STEP_SHIFT):
        raise ValueError(f"time step {k} out of range")
    return gtsam.symbol(chr(key >> _INDEX_BITS), (k << _STEP_SHIFT) | _split(key)[1])


def step(key: int) -> int:
    """The time step of a variable (0 for the single-instant graphs)."""
    return (key & ((1 << _INDEX_BITS) - 1)) >> _STEP_SHIFT


def kind(key: int) -> str:
    """'torque', 'wrench', 'twist_accel', 'joint_accel', … for a gtdyn key."""
    return KINDS[_split(key)[0]]


@cache
def dim(key: int) -> int:
    return DIMS[_split(key)[0]]


def index(key: int) -> int:
    return _split(key)[1]


def owner(robot, key: int) -> str:
    """The link or joint of ``robot`` that a variable belongs to, for messages: 'link l2', 'joint j3'."""
    i = index(key)
    if kind(key) in ("twist_accel", "twist", "pose"):
        return f"link {robot.base.name if i == 0 else robot.links[i - 1].name}"
    if kind(key) in ("contact_wrench", "contact_force", "frame_accel"):
        return f"contact {i}"
    if kind(key) == "transmission_force":
        return f"transmission {robot.transmissions[i - 1].name}"
    if i == 0:  # F0: the wrench a floating base's environment applies to it
        return f"floating base {robot.base.name}"
    return f"joint {robot.joints[i - 1].name}"


def label(key: int) -> str:
    """Plain label such as 't3', 'F1', 'A2', 'a1' (what users write in custom orderings); at time step k > 0,
    'q3@k'. A number that is no gtdyn key (from a user's ordering, say) is shown as the number."""
    if not 0 <= key < 1 << 64 or chr(key >> _INDEX_BITS) not in KINDS:
        return str(key)
    c, i = _split(key)
    k = step(key)
    return f"{c}{i}@{k}" if k else f"{c}{i}"


def pretty(key: int) -> str:
    """Label for people: 'τ3', 'F1', 'V̇2', 'q̈1'; at time step k > 0, 'q3[k]'."""
    c, i = _split(key)
    k = step(key)
    return f"{_PRETTY[c]}{i}[{k}]" if k else f"{_PRETTY[c]}{i}"


_LABEL = re.compile(r"^([tFAaVqvTCcLX])(\d+)(?:@(\d+))?$")


def parse_label(text: str) -> int:
    """The key for a plain label ('t3', 'F1', 'q2@7', …); ValueError for anything else."""
    m = _LABEL.match(text.strip())
    if not m or int(m.group(2)) >= 1 << _STEP_SHIFT:
        raise ValueError(f"'{text}' is not a variable label (expected e.g. t1, F2, A3, a1, or q2@7 at time step 7)")
    return at_step(gtsam.symbol(m.group(1), int(m.group(2))), int(m.group(3) or 0))
