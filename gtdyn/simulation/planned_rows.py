"""Rows of a batch through one native loop plan (``gtdyn.simulate_batch``): a thread's runs after its first differ
only in their start and in where their samples go, so the plan is built once per thread and each row (or lane
group of rows) only has its start checked and written and the plan's per-run words pointed at its rows of the
stacked arrays — no run, stepper or samples object, no plan built per row (a short run's own cost:
benchmarks/results/design_measurements.md).

Rows the loop does not finish — a step whose certificate does not pass in some lane — are set up in full and run
again from their start as ``simulate`` runs them: the loop's certified steps give the same bits and warn of
nothing, so every row ends as ``simulate``'s, its warnings and errors included."""

from __future__ import annotations

import numpy as np

from gtdyn.arguments.query import run_restart
from gtdyn.compiled.lanes import WIDTH
from gtdyn.compiled.parallel import address
from gtdyn.simulation import native_loop
from gtdyn.simulation.loop_plan import FIELDS, PYTHON, SAMPLE_ROWS


def plannable(run) -> bool:
    """Whether a batch's run loops natively without a Python controller (which a plan could not share)."""
    return run.native and native_loop.source_of(run.torque) != PYTHON


class PlannedRows:
    """Rows through one plan, built from ``fresh`` (a run set up, not stepped: its torque, Δt, solver, environment
    and the parts of its start that every row shares — a floating base's pose and twist), into ``arrays`` (the
    batch's stacked arrays by ``Samples`` field); one row at a time, or ``lanes.WIDTH`` at a time through
    ``lane_solver``'s lane code. ``ran(rows, Q0, V0)``: each row's start checked as ``simulate`` checks it (the
    row's error), the rows run natively; whether they ran to their end."""

    def __init__(self, fresh, arrays: dict, lane_solver=None):
        stepper, samples = fresh.stepper, fresh.samples
        self.robot, self.method, self.source = fresh.robot, fresh.method, native_loop.source_of(fresh.torque)
        self.solver, self.lane_solver = native_loop.compiled_solver(fresh.forward), lane_solver
        self.steps, self.n, self.m = fresh.steps, fresh.robot.num_dofs, len(stepper.x)
        self.width = 1 if lane_solver is None else WIDTH
        self.forces = 0 if samples.contact_forces is None else samples.contact_forces.shape[1]
        self.floating = samples.base_pose is not None
        self.start = np.concatenate((stepper.x, stepper.y), dtype=float)  # x = [ξ = 0; q], y = [V; q̇] floating
        self.states = [self.start.copy() for _ in range(self.width)]  # what the plan reads and writes back
        self.pose0 = stepper.start.copy() if self.floating else None
        self.poses = [self.pose0.copy() for _ in range(self.width)] if self.floating else []  # moved by the loop
        plan, self._held = native_loop.plan_of(self.solver, fresh.dt, fresh.torque, samples, self.states[0], stepper)
        self._fresh = fresh  # alive while the plan points to its arrays (the sample times, a pose step's scratch)
        self._rows = [(word, address(arrays[field]), arrays[field].strides[0])  # each row word's array: first, stride
                      for word, field in SAMPLE_ROWS.items() if arrays.get(field) is not None]
        if self.width == 1:
            if self.floating:
                plan[FIELDS.index("pose")] = address(self.poses[0])
        else:  # the lanes' workspace is kept from group to group, as a solver's own is: its code never writes inputs
            per_run = {"state": self.states} | ({"pose": self.poses} if self.floating else {}) | {
                word: [getattr(samples, SAMPLE_ROWS[word])] * self.width for word, _, _ in self._rows}
            self.ws, self._lanes = native_loop.in_lanes(plan, self.solver, lane_solver, [fresh.forward] * self.width,
                                                        per_run)
        native_loop.write_wrenches(fresh.forward, self.solver._ws)  # the twin's copy comes from here (``follow``)
        self.plan = plan
        self.release = native_loop.releases(self.solver, self.method, self.steps + 1, self.width)

    def ran(self, rows, Q0, V0) -> bool:
        m, off = self.m, self.m - self.n
        for state, pose, i in zip(self.states, self.poses or [None] * self.width, rows, strict=True):
            q, v = run_restart(self.robot, Q0[i], V0[i])
            state[:] = self.start
            state[off:m], state[m + off:] = q, v
            if pose is not None:
                pose[...] = self.pose0
        plan = self.plan
        for word, first, stride in self._rows:
            if self.width == 1:
                plan[FIELDS.index(word)] = first + rows[0] * stride
            else:
                self._lanes[word][:] = [first + i * stride for i in rows]
        native_loop.follow(plan, self.solver)
        end = self.steps + 1
        return native_loop.run(plan, self.n, self.method, self.source, 0, end, self.width, self.floating,
                               self.forces, self.release) == end
