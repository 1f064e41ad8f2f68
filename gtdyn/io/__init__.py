"""Readers from robot description files to ``RobotDescription`` (no gtsam, no physics here)."""
