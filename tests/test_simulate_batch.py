"""``gtdyn.simulate_batch``: many rollouts on native threads, each bit for bit ``gtdyn.simulate`` from its own
initial state, whichever loop (native or Python) takes it and however many threads share the rows."""

import numpy as np
import pytest

import gtdyn

pytestmark = [pytest.mark.usefixtures("private_cache"),
              pytest.mark.filterwarnings("ignore::gtdyn.JointLimitWarning")]


def alone(robot, Q0, V0, **kw):
    return [gtdyn.simulate(robot, q0, v0, progress=False, **kw) for q0, v0 in zip(Q0, V0, strict=True)]


def assert_stacked(batch, runs, fields=("q", "v", "qdd", "tau")):
    assert len(batch) == len(runs)
    assert np.array_equal(batch.t, runs[0].t)
    for field in fields:
        assert np.array_equal(getattr(batch, field), np.stack([getattr(r, field) for r in runs])), field


def tracking(puma, steps: int, dt: float) -> gtdyn.PDController:
    """A PD controller tracking a sinusoid sampled at the run's knots."""
    t = dt * np.arange(steps + 1)
    inertia = np.diag(gtdyn.mass_matrix(puma, np.zeros(6)))
    return gtdyn.PDController(puma, 400 * inertia, 28 * inertia, 0.3 * np.sin(np.outer(t, np.arange(1, 7))), dt=dt)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_is_simulate_per_state_bit_for_bit(puma, threads):
    """PUMA runs from 5 states: a PD tracking a sampled reference (RK4, native loop) and torques held per step
    (semi-implicit Euler): the stacked arrays, of shape (N, steps + 1, n), are each state's own run."""
    rng = np.random.default_rng(2)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 5, 6))
    steps, dt = 150, 1e-3
    controller = tracking(puma, steps, dt)
    for kw in (dict(tau=controller, method="rk4"), dict(tau=0.01 * rng.normal(size=(steps, 6)))):
        batch = gtdyn.simulate_batch(puma, Q0, V0, dt=dt, steps=steps, threads=threads, **kw)
        assert batch.q.shape == (5, steps + 1, 6) and batch.t.shape == (steps + 1,)
        assert_stacked(batch, alone(puma, Q0, V0, dt=dt, steps=steps, **kw))
    run = batch[3]  # a Trajectory of views, energies and all
    assert isinstance(run, gtdyn.Trajectory) and np.shares_memory(run.q, batch.q)
    assert np.array_equal(run.kinetic, alone(puma, Q0[3:4], V0[3:4], dt=dt, steps=steps, **kw)[0].kinetic)


@pytest.mark.parametrize("lanes", [False, True])
def test_short_runs_on_two_threads_keep_the_gil_and_are_simulate_bit_for_bit(puma, lanes):
    """Runs too short to pay for handing the GIL over (``native_loop.releases``: a few PUMA steps) keep it while
    they step, so two threads take turns rather than hand it over at every row; long ones release it. Either
    way each run is ``simulate``'s."""
    from gtdyn.simulation import native_loop

    solver = gtdyn.compile(puma, "forward", ordering="aba")
    assert not native_loop.releases(solver, "semi_implicit_euler", 11)
    assert not native_loop.releases(solver, "semi_implicit_euler", 11, 4)
    assert native_loop.releases(solver, "semi_implicit_euler", 101) and native_loop.releases(solver, "rk4", 31)
    rng = np.random.default_rng(8)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 12, 6))
    for steps in (3, 120):
        kw = dict(tau=0.01 * rng.normal(size=(steps, 6)), dt=1e-3, steps=steps)
        batch = gtdyn.simulate_batch(puma, Q0, V0, threads=2, lanes=lanes, **kw)
        assert_stacked(batch, alone(puma, Q0, V0, **kw))


@pytest.mark.parametrize("lanes", [False, True])
def test_external_wrenches_in_planned_rows_are_simulate_bit_for_bit(puma, lanes):
    """Nine PUMA runs pushed at the flange (a wrench held over the run, in the world's axes): rows after a thread's
    first go through its plan (``PlannedRows``), the wrench written once into the workspace (each lane's in
    lanes); every run is ``simulate``'s, bit for bit."""
    rng = np.random.default_rng(11)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 9, 6))
    kw = dict(tau=0.01 * rng.normal(size=(25, 6)), dt=1e-3, steps=25, method="rk4",
              external_wrenches={"flange": [0.1, -0.2, 0.05, 3.0, -1.0, 2.0]}, wrench_axes="world_aligned")
    batch = gtdyn.simulate_batch(puma, Q0, V0, lanes=lanes, **kw)
    assert_stacked(batch, alone(puma, Q0, V0, **kw))


def test_python_controllers_and_runs_the_native_loop_does_not_take(puma):
    """A Python controller on the PUMA (called back from the native loops of two threads), the closed four-bar
    (Python steppers) and the floating quadruped (native loops, run by run rather than in lanes; its base's pose,
    twist and acceleration stacked too), on two threads: each run is ``simulate``'s."""
    four_bar = gtdyn.load_robot("four_bar")
    starts = [gtdyn.close_loops(four_bar, {"j1": a}) for a in (1.6, 1.7128, 1.8)]
    quadruped = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(4)
    cases = [(puma, rng.uniform(-0.3, 0.3, (3, 6)), np.zeros((3, 6)), dict(tau=lambda t, q, v: -0.01 * v)),
             (four_bar, np.array([s.q for s in starts]), np.array([s.v for s in starts]), dict(method="rk4")),
             (quadruped, rng.uniform(-0.3, 0.3, (3, 12)), np.zeros((3, 12)),
              dict(base_twist=[0.1, 0, 0, 0, 0, 0.2], gravity=np.zeros(3)))]
    for robot, Q0, V0, kw in cases:
        batch = gtdyn.simulate_batch(robot, Q0, V0, dt=1e-3, steps=40, threads=2, **kw)
        fields = ["q", "v", "qdd", "tau"] + [f for f in ("closure", "base_pose", "base_twist", "base_accel")
                                             if getattr(batch, f) is not None]
        assert_stacked(batch, alone(robot, Q0, V0, dt=1e-3, steps=40, **kw), fields)
    assert batch.base_pose.shape == (3, 41, 4, 4) and batch.closure is None


def test_bad_batches_are_named(puma):
    zeros = np.zeros((4, 6))
    for kwargs, message in [(dict(q0=np.zeros((4, 5))), r"^q0, v0: expected 2 arrays of shape \(N, 6\)"),
                            (dict(v0=np.zeros(6)), r"^q0, v0: expected 2 arrays of shape \(N, 6\)"),
                            (dict(q0=np.zeros((0, 6)), v0=np.zeros((0, 6))), r"^q0, v0: no states"),
                            (dict(method="rk45"), r"^method: 'rk45' is not one of"),
                            (dict(threads=0), r"^threads: expected a whole number ≥ 1"),
                            (dict(threads=1.5), r"^threads: expected a whole number ≥ 1"),
                            (dict(dt=-1e-3), r"^dt: expected a finite number > 0"),
                            (dict(steps=10**12), r"^steps: 1000000000000 steps of 'puma560' from 4 states need")]:
        arguments = {"q0": zeros, "v0": zeros, "dt": 1e-3, "steps": 10, **kwargs}
        with pytest.raises(gtdyn.ArgumentError, match=message):
            gtdyn.simulate_batch(puma, arguments.pop("q0"), arguments.pop("v0"), **arguments)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failing_run_raises_the_lowest_rows_error(puma, threads):
    """Rows 2 and 5 of 8 start at a non-finite angle: the batch raises row 2's error (``simulate``'s, with a note
    naming the row), whatever the threads."""
    Q0 = np.zeros((8, 6))
    Q0[2, 1] = Q0[5, 0] = np.nan
    with pytest.raises(gtdyn.ArgumentError, match=r"^q0: non-finite values") as error:
        gtdyn.simulate_batch(puma, Q0, np.zeros((8, 6)), dt=1e-3, steps=20, threads=threads)
    assert error.value.__notes__[-1] == "gtdyn.simulate_batch: the run from row 2 of q0 and v0"


@pytest.mark.parametrize("threads", [1, 2])
def test_runs_in_lanes_are_simulate_bit_for_bit(puma, threads):
    """``lanes=True``: nine PUMA runs (two lane groups of four and one run alone), with a PD controller (RK4),
    torques held per step (semi-implicit Euler), a held vector (Euler, unchecked), and a Python controller (called
    back one run at a time: its runs go one by one, not in lanes): each run is ``simulate``'s."""
    rng = np.random.default_rng(5)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 9, 6))
    steps, dt = 120, 1e-3
    controller = tracking(puma, steps, dt)
    for kw in (dict(tau=controller, method="rk4"), dict(tau=0.01 * rng.normal(size=(steps, 6))),
               dict(tau=0.02 * np.ones(6), method="euler", checks=False),  # the lanes' unchecked entry
               dict(tau=lambda t, q, v: -0.01 * v)):  # a Python controller
        batch = gtdyn.simulate_batch(puma, Q0, V0, dt=dt, steps=steps, threads=threads, lanes=True, **kw)
        assert_stacked(batch, alone(puma, Q0, V0, dt=dt, steps=steps, **kw))


def test_a_step_one_lane_cannot_certify_goes_through_every_lanes_python_stepper(puma, monkeypatch, tmp_path):
    """With the certificate's limit lowered to the PUMA's typical κ (code compiled afresh), about half the steps
    are not certified: the lane loop stops there, the four runs' Python steppers take the step (the reference
    path answers the uncertified ones), and the loop resumes; the second group's plan (``PlannedRows``) stops
    too and its runs go the full way, as do rows run one by one (``lanes=False``). The runs are still
    ``simulate``'s, bit for bit."""
    from gtdyn.compiled import certificate
    from gtdyn.simulation import solvers

    rng = np.random.default_rng(6)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 8, 6))
    solver = gtdyn.compile(puma, "forward")
    kappas = []
    for q, v in zip(Q0, V0):
        solver(q, v, np.zeros(6))
        kappas.append(solver.condition)
    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(solvers, "_SOLVERS", type(solvers._SOLVERS)())
    for limit in ("CONDITION_LIMIT", "BOUND_LIMIT"):  # the estimate's and the bound's: half the starts pass
        monkeypatch.setattr(certificate, limit, float(np.median(kappas)))
    # compiled here with its lanes: a worker process compiling them later would trace its own (unpatched) plan
    gtdyn.compile(puma, "forward", ordering="aba", lanes=True)
    batch = gtdyn.simulate_batch(puma, Q0, V0, dt=1e-3, steps=30)
    lane_solver = solvers.forward_solver(puma, gtdyn.GRAVITY, lanes=None)
    assert lane_solver.lanes == 4  # the group looped in lanes
    assert 0 < lane_solver.fallbacks < 8 * 30  # some steps, not all, through the reference path
    want = alone(puma, Q0, V0, dt=1e-3, steps=30)
    assert_stacked(batch, want)
    assert_stacked(gtdyn.simulate_batch(puma, Q0, V0, dt=1e-3, steps=30, lanes=False), want)


def test_a_default_batch_loops_in_lanes_once_they_are_compiled(puma, monkeypatch, tmp_path):
    """``lanes=None``: a batch under ``LANES_AFTER`` steps (runs × steps; lowered here to 300) compiles no lane
    code; one over it starts the compile in the background, its groups running one by one meanwhile; once the
    code is there, every group of four loops in lanes, and a fresh solver (a later process) loads it from the
    cache for a small batch too, on one thread or two. ``lanes=False`` never takes lanes. Every batch is
    ``simulate``'s runs, bit for bit."""
    from gtdyn.compiled import lanes
    from gtdyn.simulation import native_loop, solvers

    monkeypatch.setenv("GTDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(solvers, "_SOLVERS", type(solvers._SOLVERS)())
    monkeypatch.setattr(lanes, "LANES_AFTER", 300)
    groups, run = [], native_loop.run

    def counted(plan, n, method, source, first, end, width=1, *rest):  # each lane group's loop (40 steps: one call)
        if width > 1:
            groups.append(width)
        return run(plan, n, method, source, first, end, width, *rest)

    monkeypatch.setattr(native_loop, "run", counted)
    rng = np.random.default_rng(7)
    Q0, V0 = rng.uniform(-0.5, 0.5, (2, 9, 6))
    kw = dict(tau=0.01 * rng.normal(size=(40, 6)), dt=1e-3, steps=40)
    want = alone(puma, Q0, V0, **kw)

    assert_stacked(gtdyn.simulate_batch(puma, Q0[:4], V0[:4], **kw), want[:4])  # 160 steps
    solver = solvers.forward_solver(puma, gtdyn.GRAVITY, lanes=None)
    assert groups == [] and solver._batches._compiling is None
    assert_stacked(gtdyn.simulate_batch(puma, Q0, V0, **kw), want)  # 360 steps: the compile starts
    assert solver._batches._compiling is not None and solver.compile_lanes(wait=True) == lanes.WIDTH
    del groups[:]
    assert_stacked(gtdyn.simulate_batch(puma, Q0, V0, **kw), want)
    assert groups == [4, 4]  # and the ninth run alone

    monkeypatch.setattr(solvers, "_SOLVERS", type(solvers._SOLVERS)())  # forgotten: loaded from the cache
    del groups[:]
    assert_stacked(gtdyn.simulate_batch(puma, Q0[:5], V0[:5], **kw), want[:5])  # 200 steps
    assert groups == [4]
    assert_stacked(gtdyn.simulate_batch(puma, Q0[:5], V0[:5], **kw, lanes=False), want[:5])
    assert groups == [4]
    assert_stacked(gtdyn.simulate_batch(puma, Q0[:8], V0[:8], **kw, threads=2), want[:8])  # 320 steps, cached
    assert groups == [4, 4, 4]


def test_a_run_that_fails_in_a_lane_group_leaves_it_and_the_runs_below_go_on(puma, monkeypatch):
    """Row 2 of a lane group diverges (its angles pass ±1e6 rad, which ``simulate`` refuses): the group stops at
    that step with row 2's error; rows 0 and 1, which had taken the step, go on alone from the next one (no run
    set up or stepped twice, so none warns twice) and end as ``simulate``'s; row 3 is left out (the batch raises
    the lowest failing row's error)."""
    from gtdyn.simulation import batch, native_loop

    gtdyn.compile(puma, "forward", ordering="aba", lanes=True)
    Q0, V0 = np.zeros((4, 6)), np.full((4, 6), 0.1)
    V0[2] = 1e120
    options = dict(tau=None, dt=1e-2, steps=30, method="semi_implicit_euler")
    want = alone(puma, Q0[:2], V0[:2], **options)
    starts, run_loop, prepared, prepare = [], native_loop.run_loop, [], batch.prepare

    def resumed(*args):
        starts.append(args[-1])
        return run_loop(*args)

    def counted(*args, **kwargs):
        prepared.append(args)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(native_loop, "run_loop", resumed)
    monkeypatch.setattr(batch, "prepare", counted)
    stacked = batch._Stacked(4)
    ended = batch._group(batch._Starts(puma, options, None, stacked), Q0, V0, range(4), batch._LaneCode(True, 0))
    assert sorted(ended) == [0, 1, 2]
    assert isinstance(ended[2], gtdyn.ArgumentError) and "beyond ±1e+06 rad" in str(ended[2])
    assert len(prepared) == 1  # row 0 set up in full, rows 1 and 2 from it: only their starts checked again
    assert len(starts) == 2 and starts[0] == starts[1] > 0
    for i in (0, 1):
        stacked.keep(i, ended[i])
        for field in ("q", "v", "qdd", "tau"):
            assert np.array_equal(getattr(ended[i].samples, field), getattr(want[i], field)), (i, field)
            assert np.array_equal(stacked.arrays[field][i], getattr(want[i], field)), (i, field)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_warning_raised_as_an_error_at_a_lane_groups_end_names_its_row(puma, threads):
    """With joint-limit warnings turned into errors, row 5 of 8 (two lane groups) runs past joint 1's limit: its
    warning, raised once the runs end, is the batch's error, with a note naming the row, on either thread (a
    helper thread's error used to escape it, leaving the row's arrays unset). As warnings, rows 2 and 5 warn once
    each, in row order, as ``simulate`` warns for them."""
    import warnings

    gtdyn.compile(puma, "forward", ordering="aba", lanes=True)
    Q0, V0 = np.zeros((8, 6)), np.zeros((8, 6))
    Q0[5, 0], V0[5, 0] = 2.78, 1.0  # joint 1's limit is 160°, 2.7925 rad
    Q1, V1 = Q0.copy(), V0.copy()
    Q1[2, 0], V1[2, 0] = -2.78, -2.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gtdyn.simulate_batch(puma, Q1, V1, dt=1e-3, steps=40, threads=threads, lanes=True)
        batch = [str(w.message) for w in caught if w.category is gtdyn.JointLimitWarning]
        del caught[:]
        for i in (2, 5):
            gtdyn.simulate(puma, Q1[i], V1[i], dt=1e-3, steps=40)
        assert batch == [str(w.message) for w in caught if w.category is gtdyn.JointLimitWarning] and len(batch) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", gtdyn.JointLimitWarning)
        with pytest.raises(gtdyn.JointLimitWarning) as error:
            gtdyn.simulate_batch(puma, Q0, V0, dt=1e-3, steps=40, threads=threads, lanes=True)
    assert error.value.__notes__[-1] == "gtdyn.simulate_batch: the run from row 5 of q0 and v0"


@pytest.mark.parametrize("method", ["semi_implicit_euler", "rk4"])
def test_floating_runs_in_lanes_are_simulate_bit_for_bit(monkeypatch, method):
    """Nine runs of the free quadruped with ``lanes=True`` (two lane groups of four, the second through the plan
    of the thread's first run (``PlannedRows``), one run alone), under torques held per step and under a PD
    controller: every sample — joints, the base's pose, twist and acceleration — is ``simulate``'s, and stays so
    where the lane loop stops (step 7, forced) and every run's Python stepper takes the step, moving its own pose,
    before the lanes resume (a planned group that stops is run again the full way)."""
    from gtdyn.simulation import native_loop

    quadruped = gtdyn.load_robot("quadruped", base="floating")
    rng = np.random.default_rng(9)
    Q0, V0 = rng.uniform(-0.3, 0.3, (2, 9, 12))
    steps, dt = 40, 1e-3
    kw = dict(dt=dt, steps=steps, method=method, base_twist=[0.3, -0.2, 0.1, 0.2, 0.0, -0.1])
    original, widths = native_loop.run, []

    def stopping(plan, n, method_, source, first, end, *shape):
        widths.append(shape[0] if shape else 1)
        if first <= 7 < end:
            return original(plan, n, method_, source, first, 7, *shape)
        return original(plan, n, method_, source, first, end, *shape)

    fields = ("q", "v", "qdd", "tau", "base_pose", "base_twist", "base_accel")
    from gtdyn.simulation.planned_rows import PlannedRows

    planned, ran = [], PlannedRows.ran
    monkeypatch.setattr(PlannedRows, "ran", lambda self, *a: planned.append(self.width) or ran(self, *a))
    for tau in (0.01 * rng.normal(size=(steps, 12)), gtdyn.PDController(quadruped, 0.5, 0.05, np.zeros(12))):
        del planned[:]
        batch = gtdyn.simulate_batch(quadruped, Q0, V0, tau=tau, lanes=True, **kw)  # the planned group ends there
        assert_stacked(batch, alone(quadruped, Q0, V0, tau=tau, **kw), fields)
        assert planned == [4]
        with monkeypatch.context() as patched:
            patched.setattr(native_loop, "run", stopping)
            batch = gtdyn.simulate_batch(quadruped, Q0, V0, tau=tau, lanes=True, **kw)
        assert_stacked(batch, alone(quadruped, Q0, V0, tau=tau, **kw), fields)
        assert 4 in widths and 1 in widths  # lane groups, and the ninth run alone


def test_runs_on_rigid_contacts_in_lanes_are_simulate_bit_for_bit():
    """Nine runs of Solo-12 on its four feet from nudged stances, a PD holding the stance, ``lanes=True``: two lane
    groups of four (each run's contact forces read from its lane; the second through the plan of the thread's
    first run) and one run alone, each ``simulate``'s own, the contact forces too."""
    from references import erd_path

    from gtdyn.simulation import native_loop

    solo = gtdyn.load_robot(erd_path("solo_description/robots/solo12.urdf"), base="floating")
    feet = [gtdyn.Contact(name) for name in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    stance = np.array([0.0, 0.8, -1.6] * 2 + [0.0, -0.8, 1.6] * 2)
    rng = np.random.default_rng(12)
    Q0, V0 = stance + rng.uniform(-0.02, 0.02, (9, 12)), np.zeros((9, 12))
    kw = dict(tau=gtdyn.PDController(solo, 5.0, 0.2, stance), dt=1e-3, steps=30, contacts=feet)
    widths, original = [], native_loop.run

    def counted(plan, n, method, source, first, end, width=1, *args):
        widths.append(width)
        return original(plan, n, method, source, first, end, width, *args)

    native_loop.run = counted
    try:
        batch = gtdyn.simulate_batch(solo, Q0, V0, lanes=True, **kw)
    finally:
        native_loop.run = original
    assert widths == [4, 4, 1]
    assert_stacked(batch, alone(solo, Q0, V0, **kw), ("q", "v", "qdd", "tau", "base_pose", "contact_forces"))


def test_lanes_on_straight_legs_ask_the_solvers_twin_in_the_loop(monkeypatch):
    """Four runs of Solo-12 on its four feet at and a nanoradian from straight legs (q = 0, a PD holding them:
    gravity keeps them straight), ``lanes=True``: the plan's pivots vanish there, and each lane asks the solver's
    twin (``gtdyn.compiled.rescue``) in the loop, as a call does — so the group stops at most once, for a Python
    step that compiles the twin (it stopped at every step while lanes asked no twin), and every run is
    ``simulate``'s, bit for bit."""
    from references import erd_path

    from gtdyn.simulation import native_loop

    solo = gtdyn.load_robot(erd_path("solo_description/robots/solo12.urdf"), base="floating")
    feet = [gtdyn.Contact(name) for name in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    Q0, V0 = np.outer([0.0, 1e-9, -1e-9, 2e-9], np.ones(12)), np.zeros((4, 12))
    kw = dict(tau=gtdyn.PDController(solo, 5.0, 0.2, np.zeros(12)), dt=1e-3, steps=20, contacts=feet)
    chunks, run = [], native_loop.run

    def chunk(plan, n, method, source, first, end, width=1, *args):
        chunks.append(width)
        return run(plan, n, method, source, first, end, width, *args)

    monkeypatch.setattr(native_loop, "run", chunk)
    batch = gtdyn.simulate_batch(solo, Q0, V0, lanes=True, **kw)
    assert 1 <= chunks.count(4) <= 2 and np.abs(batch.q).max() < 1e-4
    assert_stacked(batch, alone(solo, Q0, V0, **kw), ("q", "v", "qdd", "tau", "base_pose", "contact_forces"))
