"""Pinocchio solving the same problem on the same URDF and state, in the same process."""

from __future__ import annotations

import numpy as np

from gtdyn.bench.orderings import Row, State
from gtdyn.bench.timing import measure
from gtdyn.model.robot import Robot


def bench_pinocchio(robot: Robot, path: str, kind: str, state: State, repeat: int = 30, inner: int = 50,
                    warmup: int = 20) -> list[Row]:
    """Pinocchio on the same URDF and state; empty if Pinocchio is not installed, or for other files (closed
    loops need constraint dynamics, which this comparison does not cover)."""
    try:
        import pinocchio as pin
    except ImportError:
        return []
    if not path.lower().endswith(".urdf") or robot.loop_joints:
        return []
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    idx_v = np.array([model.joints[model.getJointId(n)].idx_v for n in robot.joint_names])
    idx_q = [(model.joints[model.getJointId(n)].idx_q, model.joints[model.getJointId(n)].nq) for n in robot.joint_names]
    q = pin.neutral(model)
    for (i, nq), x in zip(idx_q, state.q):
        q[i:i + nq] = [x] if nq == 1 else [np.cos(x), np.sin(x)]

    def vec(x):
        out = np.zeros(model.nv)
        out[idx_v] = x
        return out

    v, a, tau = vec(state.v), vec(state.qdd), vec(state.tau)

    def crba_forward():
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        h = pin.nonLinearEffects(model, data, q, v)
        return np.linalg.solve(M, tau - h)  # LAPACK (Cholesky would need SciPy; M is small and dense)

    def three_pass():
        given = np.zeros(model.nv, dtype=bool)
        for name in state.known_qdd:
            given[model.joints[model.getJointId(name)].idx_v] = True
        bias = pin.rnea(model, data, q, v, np.where(given, a, 0.0))
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        free = ~given
        qdd = a.copy()
        qdd[free] = np.linalg.solve(M[np.ix_(free, free)], tau[free] - bias[free])
        return qdd, pin.rnea(model, data, q, v, qdd)

    cases = {"inverse": [("pinocchio rnea", lambda: pin.rnea(model, data, q, v, a))],
             "forward": [("pinocchio aba", lambda: pin.aba(model, data, q, v, tau)),
                         ("pinocchio crba+solve", crba_forward)],
             "hybrid": [("pinocchio rnea+crba+solve (3 passes)", three_pass)]}[kind]
    rows = []
    for name, fn in cases:
        row = Row(robot.name, robot.num_dofs, kind, name)
        row.timings["solve_us"] = measure(fn, repeat, inner, warmup)
        out = fn()
        qdd_pin = out[0] if isinstance(out, tuple) else (out if kind == "forward" else a)
        tau_pin = out[1] if isinstance(out, tuple) else (out if kind == "inverse" else tau)
        scale = max(np.max(np.abs(state.tau)), np.max(np.abs(state.qdd)))
        row.max_error = float(max(np.max(np.abs(np.asarray(qdd_pin)[idx_v] - state.qdd)),
                                  np.max(np.abs(np.asarray(tau_pin)[idx_v] - state.tau))) / scale)
        rows.append(row)
    return rows
