"""``gtdyn simulate``: integrate forward dynamics in time (``gtdyn.simulate``) from the default or given state
under constant torques; write the trajectory as CSV and a plot of q(t) and the energy's drift, and print a
summary."""

from __future__ import annotations

import os
import time

import numpy as np

import gtdyn
from gtdyn.cli.inputs import contacts, load, output_prefix, vector, wrenches, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.cli.state import default_state
from gtdyn.cli.table import UNITS, base_text, gravity_text

DEFAULT_DT = 0.001  # s
DEFAULT_STEPS = 1000
DEFAULT_OUT = "simulation"
OPTIONS = ("dt", "steps", "method", "q0", "v0", "tau", "gravity")  # gtdyn.simulate's arguments that are options


def csv_header(robot: gtdyn.Robot) -> list[str]:
    """t, then q, v, qdd and tau of every joint (in joint order), then kinetic, potential and total energy."""
    names = robot.joint_names
    return ["t"] + [f"{x}_{n}" for x in ("q", "v", "qdd", "tau") for n in names] + ["kinetic", "potential", "energy"]


def write_csv(trajectory, path: str) -> None:
    """One row per sample, every number to full precision (%.17g reads back to the same double)."""
    tr = trajectory
    table = np.column_stack([tr.t, tr.q, tr.v, tr.qdd, tr.tau, tr.kinetic, tr.potential, tr.energy])
    with open(path, "w") as f:
        np.savetxt(f, table, fmt="%.17g", delimiter=",", header=",".join(csv_header(tr.robot)), comments="")


def _checked(args) -> None:
    """--dt, --steps and --gravity, before any work."""
    if not (np.isfinite(args.dt) and args.dt > 0):
        raise CLIError(f"--dt: expected a positive time step in seconds, got {args.dt:g}")
    if args.steps < 1:
        raise CLIError(f"--steps: expected a number of steps, 1 or more, got {args.steps}")
    if not np.all(np.isfinite(args.gravity)):
        raise CLIError(f"--gravity: expected three finite numbers, got {' '.join(map(str, args.gravity))}")


def _final_q(robot: gtdyn.Robot, q: np.ndarray) -> str:
    """q as ``(0.1, -0.2) rad``, units per value when revolute and prismatic joints mix."""
    units = [UNITS.get(j.type, ("",))[0] for j in robot.joints]
    if len(set(units)) == 1:
        return "(" + ", ".join(f"{x:.6g}" for x in q) + f") {units[0]}".rstrip()
    return "(" + ", ".join(f"{x:.6g} {u}".rstrip() for x, u in zip(q, units)) + ")"


def _per_contact(contacts, forces: np.ndarray) -> list[np.ndarray]:
    """The contact forces of one sample, contact by contact (3 per point contact, 6 per surface contact)."""
    ends = np.cumsum([3 if c.kind == "point" else 6 for c in contacts])
    return np.split(forces, ends[:-1])


def cmd_simulate(args) -> None:
    from gtdyn.plot.trajectory import draw_trajectory

    _checked(args)
    robot = load(args.robot, args.base, args.transmissions)
    q0 = vector(args.q0, "q0", robot, default_state(robot)[0])  # as documented, floating bases and loops too
    v0 = vector(args.v0, "v0", robot, np.zeros(robot.num_dofs))
    tau = vector(args.tau, "tau", robot, None)
    environment = {"external_wrenches": wrenches(args.wrench, robot), "wrench_axes": args.wrench_axes,
                   "contacts": contacts(args.contacts, robot)}
    prefix = output_prefix(args.out, robot.name, DEFAULT_OUT)
    writable_directory(os.path.dirname(os.path.abspath(prefix)), "--out")
    try:
        # compiled first, apart: a cold compile takes seconds, a run from the cache milliseconds
        solver = gtdyn.compile(robot, "forward", ordering="aba", gravity=args.gravity, contacts=environment["contacts"],
                               wrench_frames=list(environment["external_wrenches"] or ()), wrench_axes=args.wrench_axes)
    except gtdyn.ArgumentError as e:  # bad --gravity and the like: named in gtdyn.simulate's words below
        solver = e
    start = time.perf_counter()
    try:
        trajectory = gtdyn.simulate(robot, q0, v0, tau=tau, dt=args.dt, steps=args.steps, method=args.method,
                                    gravity=args.gravity, **environment)
    except gtdyn.ArgumentError as e:  # the library names its argument dt=; the command's option is --dt
        if str(e).split(":", 1)[0] not in OPTIONS:
            raise
        error = CLIError(f"--{e}")
        for note in getattr(e, "__notes__", ()):
            error.add_note(note)
        raise error from None
    wall = time.perf_counter() - start
    written = [f"{prefix}.csv", f"{prefix}.{args.format}"]
    with writing(written[0]):
        write_csv(trajectory, written[0])
    title = f"{robot.name}: {args.method}, dt = {args.dt:g} s, {args.steps} steps"
    with writing(written[1]):
        draw_trajectory(trajectory, written[1], title, format=args.format)  # no extension appended: the path printed
    energy = trajectory.energy
    drift = float(np.max(np.abs(energy - energy[0])))
    print(f"simulated {robot.name} ({base_text(robot)}), method {args.method}, dt {args.dt:g} s, {args.steps} steps, "
          f"gravity {gravity_text(args.gravity)}"
          + ("" if tau is None else ", constant τ = (" + ", ".join(f"{x:g}" for x in tau) + ")"))
    if isinstance(solver, gtdyn.CompiledSolver):
        print(f"  compiled the forward-dynamics solver in {solver.compile_seconds:.3g} s "
              + ("(from the on-disk cache)" if solver.from_cache else "(cold: later runs load it from the cache)"))
    print(f"  {trajectory.t[-1]:g} s simulated in {wall:.3g} s wall time: {args.steps / wall:,.0f} steps per second")
    print(f"  final q = {_final_q(robot, trajectory.q[-1])}")
    if trajectory.contact_forces is not None:
        print("  contact forces at the end (in the contact frames): "
              + "; ".join(f"{c.link} " + ", ".join(f"{x:.4g}" for x in f) for c, f in
                          zip(environment["contacts"], _per_contact(environment["contacts"],
                                                                    trajectory.contact_forces[-1]))))
    working = [name for name, acts in (("the torques", tau is not None and np.any(tau)),
                                       ("the external wrenches", environment["external_wrenches"])) if acts]
    if not working:  # no work done on the system: any change of E is the integrator's error
        print(f"  energy E(0) = {energy[0]:.6g} J, drift max |E − E(0)| = {drift:.3g} J")
    else:
        print(f"  energy E(0) = {energy[0]:.6g} J, max |E − E(0)| = {drift:.3g} J (not a drift: "
              f"{' and '.join(working)} do work, so the energy is not conserved)")
    print("wrote " + ", ".join(written))
