"""``gtdyn dag``: draw one elimination's DAG (and, with --steps, the elimination step by step) and write it
as Graphviz DOT."""

from __future__ import annotations

import os
import sys

from gtdyn.cli.inputs import file_name, load, ordering_name, output_prefix, writable_directory, writing
from gtdyn.cli.messages import CLIError
from gtdyn.cli.solve import solve_problem
from gtdyn.cli.table import base_text
from gtdyn.progress import Progress

SLOW_DRAWING_EDGES = 500  # drawing more DAG edges than this takes seconds: say so first
PROGRESS_AFTER_S = 1.0  # drawing the steps for longer than this reports each panel on stderr


def cmd_dag(args) -> None:
    from gtdyn.analysis.dag import to_dot
    from gtdyn.analysis.metrics import metrics_of
    from gtdyn.plot.dag import MAX_STEP_VARIABLES, draw_dag, draw_elimination_steps

    robot = load(args.robot, args.base, args.transmissions)
    name = f"{robot.name}_{args.problem}_{ordering_name(args.ordering).split(' ')[0]}"
    default = file_name(name, "dag")
    prefix = default if args.out is None else output_prefix(args.out, default, default)
    writable_directory(os.path.dirname(os.path.abspath(prefix)), "--out")
    s = solve_problem(robot, args.problem, args)
    r = s.result
    n_vars = r.elimination_ordering.size()
    if args.steps and n_vars > MAX_STEP_VARIABLES:
        raise CLIError(f"--steps: {robot.name}'s {args.problem} dynamics has {n_vars} variables, more than the "
                       f"{MAX_STEP_VARIABLES} the step view can draw legibly; draw the DAG alone (without --steps)")
    m, dag = metrics_of(r), r.dag()
    if dag.number_of_edges() > SLOW_DRAWING_EDGES:
        print(f"gtdyn: drawing {dag.number_of_edges()} edges, a few seconds…", file=sys.stderr, flush=True)
    written = [f"{prefix}.{args.format}", f"{prefix}.dot"]
    title = f"{args.problem} dynamics of {robot.name}, {s.ordering} ordering: {m['edges']} edges, {m['ops']:.0f} ops"
    with writing(written[0]):
        draw_dag(dag, written[0], title, robot=robot)
    with writing(written[1]), open(written[1], "w") as f:
        f.write(to_dot(dag, f"{robot.name} {r.problem}"))
    if args.steps:
        written.append(f"{prefix}_steps.{args.format}")
        with writing(written[-1]), Progress("drawing the elimination steps", enabled=True, after=PROGRESS_AFTER_S,
                                            unit="panels") as progress:
            draw_elimination_steps(r.graph, r.elimination_ordering, written[-1], robot=robot, progress=progress.at)
    print(f"{args.problem} dynamics of {robot.name} ({base_text(robot)}), ordering {s.ordering}: "
          f"{','.join(r.ordering)}")
    print(f"{m['edges']} DAG edges, fill-in {m['fill_in']}, ~{m['ops']:.0f} multiply-adds, "
          f"largest clique {m['largest_clique']}")
    print("wrote " + ", ".join(written))
