"""The plan the native time loop reads (``gtdyn.simulation.loop_ir`` writes the loop that reads it,
``gtdyn.simulation.native_loop`` fills it in): one int64 word per field, by name."""

METHODS = ("euler", "semi_implicit_euler", "rk4")
# the plan's words: workspace, solver entry, status index, answer index, first and end step, Δt's
# bits, the Q, V, QDD, TAU rows, the torque rows and their count, the state (x then y, read and written back); for a PD
# controller the samples' times, its gains, its reference rows (q, q̇, τ_ff) with their strides (0 when held, n when
# sampled), its Δt's bits and its last row; for a Python controller the callback and its q, q̇ and τ; on a floating base
# the pose (row-major 4×4, read and written back), ``pose_step``'s functions and scratch, and the samples' base pose,
# twist and acceleration rows; with rigid contacts the samples' contact force rows; the solver's twin's workspace and
# entry (``gtdyn.compiled.rescue``; 0: none yet); the run's last step, whose sample alone is recorded
FIELDS = ("ws", "run", "status", "out", "first", "end", "dt", "Q", "V", "QDD", "TAU", "torques", "rows", "state",
          "times", "kp", "kd", "qr", "qr_stride", "vr", "vr_stride", "ff", "ff_stride", "cdt", "clast",
          "callback", "cq", "cv", "ctau", "pose", "moved", "rate", "mws", "BP", "BT", "BA", "CF", "tws", "trun", "last")
PER_RUN = ("Q", "V", "QDD", "TAU", "state")  # a lane loop's plan points to one address per run for these
PER_FLOATING_RUN = ("pose", "BP", "BT", "BA")  # and on a floating base for these
PYTHON = "python"  # the torque source of a run whose controller is a Python callable
# each run's sample rows the plan points to, by the word and the ``Samples`` field (those a run has)
SAMPLE_ROWS = {"Q": "q", "V": "v", "QDD": "qdd", "TAU": "tau", "BP": "base_pose", "BT": "base_twist",
               "BA": "base_accel", "CF": "contact_forces"}
