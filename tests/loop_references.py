"""An independent reference for closed-loop dynamics: Pinocchio on the spanning tree, built straight from the
description (not from gtdyn's model), with each loop-closing revolute joint as a point-coincidence
constraint, solved as the dense Lagrange-multiplier system

    M q̈ + h = Bᵀ τ + Jᵀ λ,     J q̈ = −J̇ q̇

(J: difference of the Jacobians of the joint point as carried by the loop joint's child and parent; J̇ q̇:
difference of their classical accelerations at q̈ = 0). For planar loops the out-of-plane rows are redundant;
least squares returns the unique q̈ (λ is not unique there, and is not compared).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from gtdyn.model.description import RobotDescription
from gtdyn.model.robot import Robot


def _se3(T: np.ndarray) -> pin.SE3:
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


class LagrangeReference:
    def __init__(self, description: RobotDescription, robot: Robot, gravity=(0.0, 0.0, -9.81)):
        specs = {js.name: js for js in description.joints}
        links = {ls.name: ls for ls in description.links}
        tree = [specs[j.name] for j in robot.tree_joints]  # which joints form the tree is gtdyn's choice
        self.loop = [specs[j.name] for j in robot.loop_joints]
        assert all(js.type == "revolute" for js in tree + self.loop), "reference handles revolute joints"
        self.model = pin.Model()
        self.model.gravity.linear = np.asarray(gravity, float)
        # Every link rides on a Pinocchio joint (0: the universe); frame_of[link] = pose of the link frame in
        # that joint's frame. Fixed joints weld their child to the parent's joint.
        root = description.base or next(ls.name for ls in description.links
                                        if all(js.child != ls.name for js in description.joints))
        joint_id, frame_of, added = {root: 0}, {root: np.eye(4)}, []
        fixed = [js for js in description.joints if js.type == "fixed"]

        def attach(js):
            placement = frame_of[js.parent] @ js.origin  # the joint frame in the parent's Pinocchio frame
            if js.type == "fixed":
                joint_id[js.child], frame_of[js.child] = joint_id[js.parent], placement @ js.child_pose
            else:
                joint_id[js.child] = self.model.addJoint(joint_id[js.parent],
                                                         pin.JointModelRevoluteUnaligned(np.asarray(js.axis, float)),
                                                         _se3(placement), js.name)
                frame_of[js.child] = js.child_pose
                added.append(js.name)
            ls = links[js.child]
            com = frame_of[js.child] @ ls.inertial_origin
            inertia = com[:3, :3] @ np.asarray(ls.inertia) @ com[:3, :3].T
            self.model.appendBodyToJoint(joint_id[js.child], pin.Inertia(ls.mass, com[:3, 3].copy(), inertia),
                                         pin.SE3.Identity())

        def weld_ready():
            while any(js.parent in joint_id for js in fixed):
                js = next(js for js in fixed if js.parent in joint_id)
                fixed.remove(js)
                attach(js)

        # Depth-first order (gtdyn's tree order): Pinocchio's algorithms need each subtree contiguous.
        for js in tree:
            weld_ready()
            attach(js)
        weld_ready()
        child_pose = frame_of
        self.frames = []  # per loop joint: (frame on the parent side, frame on the child side)
        for js in self.loop:
            on_parent = child_pose[js.parent] @ js.origin
            on_child = child_pose[js.child] @ np.linalg.inv(js.child_pose)
            ids = []
            for side, link, T in (("p", js.parent, on_parent), ("c", js.child, on_child)):
                ids.append(self.model.addFrame(pin.Frame(f"{js.name}_{side}", joint_id[link], 0, _se3(T),
                                                         pin.FrameType.OP_FRAME)))
            self.frames.append(tuple(ids))
        self.data = self.model.createData()
        self.tree_index = [robot.joint_names.index(name) for name in added]  # gtdyn index of Pinocchio joint k
        self.actuated = np.array([specs[name].actuated for name in added])

    def _constraint(self, q, v):
        """J (3 rows per loop joint) and J̇ q̇, world-aligned, at the tree state (q, v)."""
        m, d = self.model, self.data
        pin.forwardKinematics(m, d, q, v, np.zeros(m.nv))
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        J, drift = [], []
        frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        for parent, child in self.frames:
            J.append(pin.getFrameJacobian(m, d, child, frame)[:3] - pin.getFrameJacobian(m, d, parent, frame)[:3])
            drift.append(pin.getFrameClassicalAcceleration(m, d, child, frame).linear
                         - pin.getFrameClassicalAcceleration(m, d, parent, frame).linear)
        return np.vstack(J), np.concatenate(drift)

    def _tree_state(self, q, v):
        return np.asarray(q)[self.tree_index], np.asarray(v)[self.tree_index]

    def _mass_and_bias(self, q, v):
        M = pin.crba(self.model, self.data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return M, pin.nonLinearEffects(self.model, self.data, q, v)

    def forward(self, q, v, tau) -> np.ndarray:
        """q̈ of the tree joints (gtdyn order within the tree) for torques tau (gtdyn vector; only tree joints act)."""
        qt, vt = self._tree_state(q, v)
        M, h = self._mass_and_bias(qt, vt)
        J, drift = self._constraint(qt, vt)
        n, c = len(qt), J.shape[0]
        K = np.block([[M, -J.T], [J, np.zeros((c, c))]])
        rhs = np.concatenate([np.asarray(tau)[self.tree_index] - h, -drift])
        return np.linalg.lstsq(K, rhs, rcond=None)[0][:n]

    def least_norm_torques(self, q, v, qdd) -> np.ndarray:
        """The least-norm actuated tree-joint torques for the tree accelerations: with N spanning the motions
        the loops allow (null(J)), Nᵀ Bᵀ τ = Nᵀ (M q̈ + h), and τ = pinv(Nᵀ Bᵀ) Nᵀ (M q̈ + h)."""
        qt, vt = self._tree_state(q, v)
        M, h = self._mass_and_bias(qt, vt)
        J, _ = self._constraint(qt, vt)
        _, s, Vt = np.linalg.svd(J)
        N = Vt[int(np.sum(s > 1e-10 * max(s[0], 1.0))):].T
        B = np.eye(len(qt))[self.actuated]
        tau_act = np.linalg.pinv(N.T @ B.T) @ N.T @ (M @ np.asarray(qdd)[self.tree_index] + h)
        return tau_act

    def velocity_and_acceleration_closure(self, q, v, qdd) -> tuple[float, float]:
        """max |J q̇| and max |J q̈ + J̇ q̇| at the loop points: the differentiated constraints."""
        qt, vt = self._tree_state(q, v)
        J, drift = self._constraint(qt, vt)
        return float(np.max(np.abs(J @ vt))), float(np.max(np.abs(J @ np.asarray(qdd)[self.tree_index] + drift)))
