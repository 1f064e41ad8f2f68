"""Simulation steps per second: ``gtdyn.simulate`` (a compiled ABA solver per step) against the same integrator written
as a Python loop over Pinocchio's ``pin.aba``, in one run, on the PUMA 560 and Talos, without torque and with a PD
controller tracking a reference (``gtdyn.PDController``, in gtdyn's native loop, and as a Python callable the loop
calls back; Pinocchio's loop computes the same PD in numpy, or calls the same callable); on floating bases (Solo-12,
Talos with a free flyer), semi-implicit Euler on SE(3) against the same loop over ``pin.aba`` and ``pin.integrate``;
plus the variational integrator's steps per second (also on the quadruped's floating base). Without gravity, from
random joint velocities (a falling Talos swings its gripper links fast enough to make explicit integrators diverge
within 2 s).

    python -m benchmarks.simulation [STEPS [DT]]     # 2,000 steps of 1 ms by default

A ``simulate`` call costs tens of microseconds besides its steps (checking the start, finding the compiled solver
it remembers, allocating the run): long runs (20,000 steps of 0.1 ms) show the steps' own rate, and a second table
shows short runs whole.

Each figure is the best of ``RUNS`` runs, gtdyn's and Pinocchio's taken in turns so that a change in the machine's
load falls on both (the loops are long enough that the median of a few is the minimum up to noise). Pinocchio's
loop does only what the integrator needs (no energies, no checks); gtdyn's is the whole ``simulate`` call.
Writes benchmarks/results/simulation.md.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from importlib.metadata import distribution

import numpy as np

import gtdyn
from gtdyn.bench.pinocchio import FreeFlyerPinocchio, PinocchioContacts, PinocchioModel
from gtdyn.bench.report import machine_description

RUNS = 5  # runs of each loop, ours and Pinocchio's in turns
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "simulation.md")


def erd(relative: str) -> str:
    return str(distribution("example-robot-data")
               .locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))


def pinocchio_loop(ref: PinocchioModel, q, v, steps: int, dt: float, method: str, base_twist=None):
    """The integrator over ``pin.aba`` and ``pin.integrate`` (a free flyer from the identity with ``base_twist``):
    its last configuration. Its RK4 steps in the tangent space at each step's start, as Pinocchio users write it;
    gtdyn's corrects a floating base's stages by dlog (Munthe-Kaas), so their ends differ by the methods' error."""
    pin, model, data = ref.pin, ref.model, ref.data
    if base_twist is None:
        qp, vp = ref.configuration(q), ref.tangent(v)
    else:
        qp, vp = ref.configuration(q, np.eye(4)), ref.tangent(v, base_twist)
    tau = np.zeros(model.nv)
    aba = lambda q_, v_: pin.aba(model, data, q_, v_, tau)  # noqa: E731
    for _ in range(steps):
        if method == "semi_implicit_euler":
            vp = vp + dt * aba(qp, vp)
            qp = pin.integrate(model, qp, dt * vp)
        else:  # rk4 on the tangent space
            a1 = aba(qp, vp)
            q2, v2 = pin.integrate(model, qp, dt / 2 * vp), vp + dt / 2 * a1
            a2 = aba(q2, v2)
            q3, v3 = pin.integrate(model, qp, dt / 2 * v2), vp + dt / 2 * a2
            a3 = aba(q3, v3)
            q4, v4 = pin.integrate(model, qp, dt * v3), vp + dt * a3
            a4 = aba(q4, v4)
            qp = pin.integrate(model, qp, dt / 6 * (vp + 2 * v2 + 2 * v3 + v4))
            vp = vp + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return qp


def pd_tracking(robot, q0, steps: int, dt: float):
    """A PD tracking a smooth reference sampled at the run's knots (q_ref, v_ref, a small feedforward), with gains
    for 20 rad/s and damping 0.7 on each joint's own inertia at q0: the ``gtdyn.PDController``."""
    n = robot.num_dofs
    rng = np.random.default_rng(1)
    t = dt * np.arange(steps + 1)
    frequency, amplitude = rng.uniform(1, 4, n), rng.uniform(0.05, 0.2, n)
    q_ref = q0 + amplitude * np.sin(np.outer(t, frequency))
    v_ref = amplitude * frequency * np.cos(np.outer(t, frequency))
    inertia = np.diag(gtdyn.mass_matrix(robot, q0))
    return gtdyn.PDController(robot, 400 * inertia, 28 * inertia, q_ref, v_ref, 0.01 * rng.normal(size=(steps + 1, n)),
                              dt=dt)


def pinocchio_pd_loop(ref: PinocchioModel, controller, q, v, steps: int, dt: float):
    """The same PD (row k at step k) around ``pin.aba`` with semi-implicit Euler, in Pinocchio's joint order, as a
    Pinocchio user writes it (revolute joints: q_ref − q is the tangent error)."""
    pin, model, data = ref.pin, ref.model, ref.data
    order = ref.idx_v
    kp, kd = ref.tangent(controller.kp), ref.tangent(controller.kd)
    q_ref, v_ref, tau_ff = (np.zeros((len(r), model.nv)) for r in (controller.q_rows, controller.v_rows,
                                                                   controller.ff_rows))
    q_ref[:, order], v_ref[:, order], tau_ff[:, order] = controller.q_rows, controller.v_rows, controller.ff_rows
    qp, vp = ref.configuration(q), ref.tangent(v)
    for k in range(steps):
        tau = tau_ff[k] + kp * (q_ref[k] - qp) + kd * (v_ref[k] - vp)
        vp = vp + dt * pin.aba(model, data, qp, vp, tau)
        qp = qp + dt * vp
    return ref.joint_order(qp)


def pinocchio_callable_loop(ref: PinocchioModel, law, q, v, steps: int, dt: float):
    """The same loop around ``pin.aba`` with the torque asked of a Python callable ``law(t, q, v)`` in Pinocchio's
    joint order (``in_pinocchio_order``)."""
    pin, model, data = ref.pin, ref.model, ref.data
    qp, vp = ref.configuration(q), ref.tangent(v)
    for k in range(steps):
        vp = vp + dt * pin.aba(model, data, qp, vp, law(k * dt, qp, vp))
        qp = qp + dt * vp
    return ref.joint_order(qp)


def in_pinocchio_order(ref: PinocchioModel, controller):
    """The same ``gtdyn.PDController`` with its gains and rows in Pinocchio's joint order (revolute joints, none
    passive): a callable of the same cost for Pinocchio's loop, as a Pinocchio user would write it."""
    if controller.passive.any():
        raise SystemExit("the callable rows need every joint actuated")
    rows = [np.zeros((len(r), len(ref.idx_v))) for r in (controller.q_rows, controller.v_rows, controller.ff_rows)]
    for out, r in zip(rows, (controller.q_rows, controller.v_rows, controller.ff_rows)):
        out[:, ref.idx_v] = r
    return gtdyn.PDController(controller.robot, ref.tangent(controller.kp), ref.tangent(controller.kd), *rows,
                              dt=controller.dt)


def pd_rows(name: str, robot, ref: PinocchioModel, q0, v0, steps: int, dt: float) -> list[str]:
    """PD tracking with semi-implicit Euler: gtdyn's native loop (the PDController), the same controller as a
    Python callable (called back from gtdyn's native loop), against Pinocchio's Python loop computing the PD in
    numpy, and then against Pinocchio's loop calling the same callable; and how far apart their ends are."""
    controller = pd_tracking(robot, q0, steps, dt)
    if ref.model.nq != ref.model.nv:
        raise SystemExit(f"{name}: the PD rows need revolute joints only (q_ref − q as the tangent error)")
    ends = {}

    def ours(tau, checks=True):
        ends["gtdyn"] = gtdyn.simulate(robot, q0, v0, tau=tau, dt=dt, steps=steps, gravity=np.zeros(3),
                                       checks=checks, progress=False).q[-1]

    def theirs(law=None):
        ends["pin"] = (pinocchio_pd_loop(ref, controller, q0, v0, steps, dt) if law is None else
                       pinocchio_callable_loop(ref, law, q0, v0, steps, dt))

    ours(controller)  # compiles the loops once per process, outside the timing
    ours(controller, checks=False)
    rows = []
    as_callable = lambda t, q, v: controller(t, q, v)  # noqa: E731 (a callable the loop calls back)
    pinocchio_pd = in_pinocchio_order(ref, controller)
    pinocchio_callable = lambda t, q, v: pinocchio_pd(t, q, v)  # noqa: E731
    for label, tau, checks, law in (
            ("PDController", controller, True, None), ("PDController, checks=False", controller, False, None),
            ("the PD as a Python callable", as_callable, True, None),
            ("the PD as a Python callable, which Pinocchio's loop calls too (in its joint order)", as_callable, True,
             pinocchio_callable)):
        rows.append(compared_row(f"{name} ({robot.num_dofs} joints)",
                                 f"semi_implicit_euler, PD tracking a reference ({label}; ends {{apart}} apart)",
                                 lambda: ours(tau, checks), lambda: theirs(law), ends, steps))
    return rows


def compared_row(robot: str, method: str, ours, theirs, ends: dict, steps: int) -> str:
    """A table row: ``ours`` and ``theirs`` timed side by side, each leaving its run's end in ``ends`` ("gtdyn",
    "pin"); ``method`` names the run, its ``{apart}`` how far apart the ends are."""
    gtdyn_s, pin_s = side_by_side(ours, theirs)
    apart = np.max(np.abs(ends["gtdyn"] - ends["pin"]))
    row = (f"| {robot} | {method.format(apart=f'{apart:.0e}')} | {steps / gtdyn_s:,.0f} | {steps / pin_s:,.0f} | "
           f"{pin_s / gtdyn_s:.2f} |")
    print(row, file=sys.stderr, flush=True)
    return row


SHORT, SHORT_REPEAT = (1, 10, 100), 100  # the short runs' steps, and runs per timing


def short_runs(robot, ref: PinocchioModel, q0, v0, dt: float) -> list[str]:
    """Rows of a short run's whole cost against as many steps of Pinocchio's loop, for each of ``SHORT``."""
    rows = ["| steps | gtdyn.simulate µs per run | Python loop over pin.aba µs per run | gtdyn / Pinocchio |",
            "|---|---|---|---|"]
    for steps in SHORT:
        ours, theirs = side_by_side(
            lambda steps=steps: [gtdyn.simulate(robot, q0, v0, dt=dt, steps=steps, gravity=np.zeros(3), progress=False)
                                 for _ in range(SHORT_REPEAT)],
            lambda steps=steps: [pinocchio_loop(ref, q0, v0, steps, dt, "semi_implicit_euler")
                                 for _ in range(SHORT_REPEAT)])
        rows.append(f"| {steps} | {ours / SHORT_REPEAT * 1e6:,.1f} | {theirs / SHORT_REPEAT * 1e6:,.1f} | "
                    f"{theirs / ours:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def best_of(fn, runs: int = RUNS) -> float:
    return min(_seconds(fn) for _ in range(runs))


def side_by_side(ours, theirs, runs: int = RUNS) -> tuple[float, float]:
    """The best of ``runs`` runs of each, taken in turns (ours, theirs, ours, …), so that a change in this shared
    machine's load falls on both."""
    times = [(_seconds(ours), _seconds(theirs)) for _ in range(runs)]
    return min(t for t, _ in times), min(t for _, t in times)


def _seconds(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main(steps: int = 2000, dt: float = 1e-3) -> None:
    rows = ["| robot | method | gtdyn.simulate steps/s | Python loop over pin.aba steps/s | gtdyn / Pinocchio |",
            "|---|---|---|---|---|"]
    robots = {"puma560": gtdyn.bundled_path("puma560"), "talos": erd("talos_data/robots/talos_reduced.urdf")}
    for name, path in robots.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)
            robot = gtdyn.load_robot(path, transmissions="independent")  # as Pinocchio reads <mimic>
        ref = PinocchioModel(path, robot, gravity=np.zeros(3))
        q0, v0 = np.random.default_rng(0).uniform(-0.5, 0.5, (2, robot.num_dofs))
        print(f"{name}: compiling and warming up …", file=sys.stderr, flush=True)
        gtdyn.simulate(robot, q0, v0, dt=dt, steps=10, gravity=np.zeros(3), progress=False)
        for method in ("semi_implicit_euler", "rk4"):
            for checks in (True, False):
                ours, theirs = side_by_side(
                    lambda: gtdyn.simulate(robot, q0, v0, dt=dt, steps=steps, method=method, checks=checks,
                                           gravity=np.zeros(3), progress=False),
                    lambda: pinocchio_loop(ref, q0, v0, steps, dt, method))
                rows.append(f"| {name} ({robot.num_dofs} joints) | {method}{'' if checks else ', checks=False'} | "
                            f"{steps / ours:,.0f} | {steps / theirs:,.0f} | {(steps / ours) / (steps / theirs):.2f} |")
                print(rows[-1], file=sys.stderr, flush=True)
        rows += pd_rows(name, robot, ref, q0, v0, steps, dt)
        if name == "puma560":
            short = short_runs(robot, ref, q0, v0, dt)
            trajectory = None

            def variational():
                nonlocal trajectory
                trajectory = gtdyn.simulate(robot, q0, v0, dt=dt, steps=steps, method="variational",
                                            gravity=np.zeros(3), progress=False)

            gtdyn.simulate(robot, q0, v0, dt=dt, steps=10, method="variational", gravity=np.zeros(3),
                           progress=False)  # compiles its DRNEA once per process, outside the timing
            seconds = best_of(variational)
            rows.append(f"| {name} ({robot.num_dofs} joints) | variational (compiled DRNEA) | {steps / seconds:,.0f} "
                        "| — | — |")
    for name, relative in FLOATING.items():
        rows += floating_rows(name, erd(relative), steps, dt)
    rows += standing_rows(erd(FLOATING["solo12"]), steps, dt)
    rows += standing_rows(erd(FLOATING["solo12"]), steps, dt, SOLO_STRAIGHT, "straight legs (q = 0)")
    rows.append(floating_variational(steps, dt))
    text = "\n".join(["# Simulation speed", "",
                      f"`python -m benchmarks.simulation {steps} {dt:g}` ({steps:,} steps of {dt * 1e3:g} ms, no "
                      "gravity, no torque but in the PD rows (gains for 20 rad/s on each joint's inertia, a sinusoidal "
                      "reference sampled at the knots), from joints and velocities drawn in ±0.5) "
                      f"on {machine_description(1, 1, 0).split('; medians')[0]}; each figure the best of {RUNS} "
                      "runs, gtdyn's and Pinocchio's taken in turns.",
                      "", *rows, "", "Short runs on the PUMA (semi-implicit Euler, checked, the same start; each "
                      f"figure the best of {RUNS} batches of {SHORT_REPEAT} runs, taken in turns): a run's whole cost, "
                      "with ``simulate``'s own besides its steps (checking the start, finding the remembered solver, "
                      "allocating the samples, the trajectory).", "", *short, ""])
    print(text)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        f.write(text)


FLOATING = {"solo12": "solo_description/robots/solo12.urdf", "talos": "talos_data/robots/talos_reduced.urdf"}


def floating_rows(name: str, path: str, steps: int, dt: float) -> list[str]:
    """A free robot tumbling without gravity from random joints, joint velocities (±0.5) and base twist:
    ``gtdyn.simulate`` (semi-implicit Euler and RK4 on SE(3), the native loop) checked and not, against the same
    integrators over Pinocchio's free flyer (``pin.integrate`` moves it by exp of its local twist, as gtdyn moves
    the base; ``pinocchio_loop``); and how far apart the ends (base pose and joints) are."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gtdyn.ModelWarning)
        robot = gtdyn.load_robot(path, base="floating", transmissions="independent")  # as Pinocchio reads <mimic>
    ref = FreeFlyerPinocchio(path, robot, gravity=np.zeros(3))
    pin = ref.pin
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.5, 0.5, (2, robot.num_dofs))
    twist = 0.3 * rng.normal(size=6)
    joints = [i for i, _ in ref.idx_q]
    ends = {}

    def ours(method, checks=True, count=steps):
        with warnings.catch_warnings():  # free legs swing past their limits, which simulate does not enforce
            warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
            run = gtdyn.simulate(robot, q0, v0, base_twist=twist, dt=dt, steps=count, gravity=np.zeros(3),
                                 method=method, checks=checks, progress=False)
        ends["gtdyn"] = np.concatenate([run.base_pose[-1].ravel(), run.q[-1]])

    def theirs(method):
        q = pinocchio_loop(ref, q0, v0, steps, dt, method, twist)
        ends["pin"] = np.concatenate([pin.XYZQUATToSE3(q[:7]).homogeneous.ravel(), q[joints]])

    print(f"{name}, floating: compiling and warming up …", file=sys.stderr, flush=True)
    rows = []
    for method in ("semi_implicit_euler", "rk4"):
        for checks in (True, False):
            ours(method, checks, 10)  # compiles the solver and the loop once per process, outside the timing
            rows.append(compared_row(f"{name}, floating base ({robot.num_dofs} joints)",
                                     f"{method} on SE(3){'' if checks else ', checks=False'} (ends {{apart}} apart)",
                                     lambda: ours(method, checks), lambda: theirs(method), ends, steps))
    return rows


SOLO_FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
SOLO_STANCE = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)  # legs bent alike, abduction at zero
SOLO_STRAIGHT = np.zeros(12)  # every leg straight: the robot's reference configuration


class Standing:
    """Solo-12 on its four feet (rigid point contacts), under gravity, a PD (kp ``KP``, kd ``KD``) holding
    ``stance`` (bent legs unless told): gtdyn's robot, contacts and controller, and the same loop written over
    Pinocchio's ``constraintDynamics`` (exact: no proximal regularisation) and ``pin.integrate``, the PD in numpy."""

    KP, KD = 5.0, 0.2

    def __init__(self, path: str, stance: np.ndarray = SOLO_STANCE):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gtdyn.ModelWarning)
            self.robot = gtdyn.load_robot(path, base="floating", transmissions="independent")
        self.ref = FreeFlyerPinocchio(path, self.robot)
        self.contacts = PinocchioContacts(self.ref, SOLO_FEET, "point")
        self.hold = gtdyn.PDController(self.robot, self.KP, self.KD, stance)
        self.feet = [gtdyn.Contact(name) for name in SOLO_FEET]
        self.joints = [i for i, _ in self.ref.idx_q]
        if sorted(self.joints) != list(range(7, 19)) or sorted(self.ref.idx_v) != list(range(6, 18)):
            raise SystemExit("the standing rows expect a free flyer and twelve revolute joints")
        self.q_ref = stance[np.argsort(self.joints)]  # in Pinocchio's joint order

    def pinocchio(self, q0, steps: int, dt: float) -> np.ndarray:
        """Pinocchio's run from joints ``q0`` at rest, the base at the identity: the end as [base pose; joints]."""
        pin, model = self.ref.pin, self.ref.model
        q, v, tau = self.ref.configuration(q0, np.eye(4)), np.zeros(model.nv), np.zeros(model.nv)
        for _ in range(steps):
            tau[6:] = self.KP * (self.q_ref - q[7:]) - self.KD * v[6:]
            v = v + dt * self.contacts.solve(q, v, tau)
            q = pin.integrate(model, q, dt * v)
        return np.concatenate([pin.XYZQUATToSE3(q[:7]).homogeneous.ravel(), q[self.joints]])

    def options(self) -> dict:
        """``gtdyn.simulate``'s arguments for the same run (besides the start, Δt and steps)."""
        return {"tau": self.hold, "contacts": self.feet}


def standing_rows(path: str, steps: int, dt: float, stance: np.ndarray = SOLO_STANCE,
                  held: str = "a stance") -> list[str]:
    """``Standing``: ``gtdyn.simulate`` (semi-implicit Euler) checked and not against Pinocchio's loop, from
    ``stance`` (``held`` says which in the rows); and how far apart the ends are."""
    standing = Standing(path, stance)
    ends = {}

    def ours(checks=True, count=steps):
        run = gtdyn.simulate(standing.robot, stance, np.zeros(12), dt=dt, steps=count, checks=checks,
                             progress=False, **standing.options())
        ends["gtdyn"] = np.concatenate([run.base_pose[-1].ravel(), run.q[-1]])

    def theirs():
        ends["pin"] = standing.pinocchio(stance, steps, dt)

    print(f"solo12 on four feet, {held}: compiling and warming up …", file=sys.stderr, flush=True)
    rows = []
    for checks in (True, False):
        ours(checks, 10)
        rows.append(compared_row(f"solo12 on four feet ({standing.robot.num_dofs} joints)",
                                 f"semi_implicit_euler, a PD holding {held}{'' if checks else ', checks=False'} "
                                 "(ends {apart} apart)", lambda: ours(checks), theirs, ends, steps))
    return rows


def floating_variational(steps: int, dt: float) -> str:
    """The variational integrator (compiled DRNEA) on the bundled quadruped's free base, from random joints,
    velocities and base twist: its table row."""
    robot = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(0)
    q0, v0 = rng.uniform(-0.3, 0.3, (2, robot.num_dofs))
    twist = 0.3 * rng.normal(size=6)

    def run(count: int):
        with warnings.catch_warnings():  # its free legs swing past their limits, which simulate does not enforce
            warnings.simplefilter("ignore", gtdyn.JointLimitWarning)
            gtdyn.simulate(robot, q0, v0, base_twist=twist, dt=dt, steps=count, method="variational",
                           gravity=np.zeros(3), progress=False)

    run(10)  # compiles its DRNEA once per process, outside the timing
    seconds = best_of(lambda: run(steps))
    return (f"| quadruped, floating base ({robot.num_dofs} joints) | variational (compiled DRNEA) | "
            f"{steps / seconds:,.0f} | — | — |")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(*([int(arguments[0])] if arguments else []), *([float(arguments[1])] if len(arguments) > 1 else []))
