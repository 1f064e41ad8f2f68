"""``gtdyn info``: a robot's joints in joint order, with their links, masses and limits, and whether its base is
fixed or floating."""

from __future__ import annotations

import numpy as np

from gtdyn.cli.inputs import load
from gtdyn.cli.table import UNITS, base_text


def cmd_info(args) -> None:
    robot = load(args.robot, args.base, args.transmissions)
    loops = f", {len(robot.loops)} closed loops" if robot.loop_joints else ""
    print(f"{robot.name} from {robot.source}: {robot.num_dofs} joints{loops}, {base_text(robot)}")
    for j in robot.joints:
        link = robot.link(j.child)
        unit = UNITS.get(j.type, ("",))[0]
        limits = f"[{j.lower:g}, {j.upper:g}] {unit}" if np.isfinite(j.lower) or np.isfinite(j.upper) else "no limits"
        notes = [x for x in ("passive" if not j.actuated else "", "closes a loop" if j.closes_loop else "") if x]
        print(f"  {j.index:>3} {j.name:<24} {j.type:<9} {j.parent} -> {j.child} (mass {link.mass:g} kg), {limits}"
              + (f", {', '.join(notes)}" if notes else ""))
