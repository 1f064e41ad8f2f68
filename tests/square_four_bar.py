"""A square four-bar written as SDF in several equivalent ways, for the loops-onto-the-base tests.

Four bars b0..b3 of length 2 m, 1 kg, inertia 1 kg·m² about every axis through the CoM, on the corners
P0 = (0, 0, 0), P1 = (0, 0, 2), P2 = (2, 0, 2), P3 = (2, 0, 0) of a square in the x–z plane; bar k runs from
P_k to P_(k+1). One bar is the ground (welded to the world). Joints j1..j4 (axes +y) follow the loop from the
ground: j1 at the ground's far end (ground → next bar), …, j4 at the ground's near end, where the loop comes
back onto the ground. ``j4_reversed`` writes j4 the other way round (ground → last bar, axis −y), the same
mechanism with the same joint coordinates. ``actuated`` names the joints that carry torque (the
others are passive).

Hand-derived at rest without gravity, every joint actuated, τ = (1, 0, 1, 0): the bar after the ground
(crank) and the bar before it (rocker) turn together at θ̈ about their pivots, the opposite bar translates,
so the joint rates alternate: q̈ = θ̈ (1, −1, 1, −1). Power τ·q̇ = 2 θ̇; kinetic energy ½ (2 + 2 + 4) θ̇²
(each turning bar: I + m (L/2)² = 2 about its pivot; the translating bar: m L² = 4), so θ̈ = 2 / 8 = 0.25.
"""

from __future__ import annotations

import numpy as np

CORNERS = np.array([[0.0, 0, 0], [0, 0, 2], [2, 0, 2], [2, 0, 0]])


def square_four_bar_sdf(ground: int = 0, j4_reversed: bool = False, actuated=("j1", "j3")) -> str:
    bars = [(ground + k) % 4 for k in range(4)]  # bars[0] is the ground, then along the loop
    links = []
    for k in range(4):
        start, end = CORNERS[k], CORNERS[(k + 1) % 4]
        mid = (end - start) / 2
        links.append(f"""
    <link name="b{k}">
      <pose>{start[0]} {start[1]} {start[2]} 0 0 0</pose>
      <inertial><pose>{mid[0]} {mid[1]} {mid[2]} 0 0 0</pose><mass>1</mass>
        <inertia><ixx>1</ixx><iyy>1</iyy><izz>1</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>
      </inertial>
    </link>""")
    joints = [f"""
    <joint name="weld" type="fixed"><parent>world</parent><child>b{ground}</child></joint>"""]
    for n in range(1, 5):
        parent, child = f"b{bars[n - 1]}", f"b{bars[n % 4]}"
        at, axis = CORNERS[bars[n % 4]], "0 1 0"
        if n == 4 and j4_reversed:
            parent, child, axis = child, parent, "0 -1 0"
        joints.append(f"""
    <joint name="j{n}" type="revolute">
      <pose relative_to="__model__">{at[0]} {at[1]} {at[2]} 0 0 0</pose>
      <parent>{parent}</parent><child>{child}</child><axis><xyz>{axis}</xyz></axis>
      <gtdyn:actuated>{'true' if f'j{n}' in actuated else 'false'}</gtdyn:actuated>
    </joint>""")
    return f"""<?xml version="1.0"?>
<sdf version="1.7" xmlns:gtdyn="https://gtdyn.dev/sdf">
  <model name="square_four_bar">{''.join(links)}{''.join(joints)}
  </model>
</sdf>
"""
