"""Independent references for the tests: Pinocchio models of the same URDF files, and example-robot-data paths."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, distribution

import numpy as np
import pinocchio as pin


def erd_path(relative: str) -> str:
    """Path of a URDF shipped by the example-robot-data wheel (data only, under cmeel.prefix/share)."""
    try:
        root = distribution("example-robot-data").locate_file("cmeel.prefix/share/example-robot-data/robots")
    except PackageNotFoundError:  # pragma: no cover - the test extra installs it
        raise RuntimeError("example-robot-data is not installed: pip install -e '.[test]'") from None
    path = os.path.join(str(root), relative)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return path


def erd_root() -> str:
    return os.path.dirname(erd_path("ur_description/urdf/ur5_robot.urdf")).rsplit("/ur_description", 1)[0]


class PinocchioReference:
    """Pinocchio's rnea/aba/crba on a URDF, with vectors mapped to and from a gtdyn robot's joint order.

    Pinocchio stores a continuous joint's configuration as (cos q, sin q); velocity-sized vectors are indexed
    by each joint's idx_v.
    """

    def __init__(self, path: str, robot, gravity=(0.0, 0.0, -9.81)):
        self.model = pin.buildModelFromUrdf(path)
        self.model.gravity.linear = np.asarray(gravity, float)
        self.data = self.model.createData()
        names = [self.model.names[i] for i in range(1, self.model.njoints)]
        assert sorted(names) == sorted(robot.joint_names), "Pinocchio and gtdyn disagree on the joints"
        assert self.model.nv == robot.num_dofs
        pin_joints = [self.model.joints[self.model.getJointId(n)] for n in robot.joint_names]
        self.idx_v = np.array([j.idx_v for j in pin_joints])  # gtdyn joint k -> Pinocchio velocity index
        self.idx_q = [(j.idx_q, j.nq) for j in pin_joints]

    def _q(self, q):
        out = pin.neutral(self.model)
        for (i, nq), qk in zip(self.idx_q, q):
            out[i:i + nq] = [qk] if nq == 1 else [np.cos(qk), np.sin(qk)]
        return out

    def _v(self, x):
        out = np.zeros(self.model.nv)
        out[self.idx_v] = x
        return out

    def fext(self, frame: str | None, wrench_mf) -> list:
        """Pinocchio's per-joint external forces for a wrench [m; f] on ``frame``, expressed in that frame."""
        forces = [pin.Force.Zero() for _ in range(self.model.njoints)]
        if frame is not None:
            fr = self.model.frames[self.model.getFrameId(frame)]
            joint = fr.parentJoint if hasattr(fr, "parentJoint") else fr.parent
            wrench_mf = np.asarray(wrench_mf, float)
            forces[joint] = fr.placement.act(pin.Force(wrench_mf[3:], wrench_mf[:3]))
        return forces

    def rnea(self, q, v, a, frame=None, wrench=None):
        tau = pin.rnea(self.model, self.data, self._q(q), self._v(v), self._v(a), self.fext(frame, wrench))
        return np.asarray(tau)[self.idx_v]

    def aba(self, q, v, tau, frame=None, wrench=None):
        qdd = pin.aba(self.model, self.data, self._q(q), self._v(v), self._v(tau), self.fext(frame, wrench))
        return np.asarray(qdd)[self.idx_v]

    def mass_matrix(self, q):
        M = pin.crba(self.model, self.data, self._q(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.idx_v, self.idx_v)]


def rel_err(x, ref) -> float:
    """max|x − ref| / max|ref| (max norm), the issue's relative error."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))
