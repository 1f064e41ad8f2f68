"""kinematics"""
