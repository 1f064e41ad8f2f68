"""What a run's environment adds to every step: external wrenches, held over the run, and rigid contacts, whose
forces are solved with the motion (constrained forward dynamics) and recorded at every sample."""

from __future__ import annotations

from gtdyn.arguments.wrenches import packed_once
from gtdyn.simulation.steppers import Samples, Stepper


class EnvironmentForward:
    """The compiled forward solver as the steppers call it, ``forward(q, v, tau, **base)``: with the run's external
    wrenches, and its answer's motion part only; the contact forces of the latest call are kept in ``forces``."""

    def __init__(self, solver, wrenches: dict | None, contacts: bool):
        self.solver, self.contacts = solver, contacts
        self.wrenches = packed_once(solver.wrench_frames, wrenches)  # checked once, not at every step
        self.forces = None

    def __call__(self, q, v, tau, **base):
        answer = self.solver(q, v, tau, external_wrenches=self.wrenches, **base)
        if not self.contacts:
            return answer
        *motion, self.forces = answer
        return motion[0] if len(motion) == 1 else tuple(motion)


class RecordingForces:
    """A stepper whose samples also hold the contact forces at the sample's state (its ``record`` evaluates the
    dynamics there last). Its state (``x``, ``y``, and whatever else the native loop reads) is the wrapped
    stepper's."""

    def __init__(self, stepper: Stepper, forward: EnvironmentForward):
        self.stepper, self.forward = stepper, forward

    def __getattr__(self, name: str):
        if name == "stepper":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.stepper, name)

    def __setattr__(self, name: str, value) -> None:
        if name in ("x", "y"):  # the state is the wrapped stepper's
            setattr(self.stepper, name, value)
        else:
            super().__setattr__(name, value)

    def record(self, k: int, t: float, out: Samples) -> None:
        self.stepper.record(k, t, out)
        out.contact_forces[k] = self.forward.forces

    def advance(self, k: int, t: float) -> None:
        self.stepper.advance(k, t)
