"""What an elimination is, as a structure: the DAG of an ordering, the numeric Bayes net's DAG, the Bayes
tree's cliques, DOT text, cost measures, and elimination batch by batch. Functions of a linear graph and an
ordering (or of a result's ``graph`` and ``elimination_ordering``); they return networkx graphs."""

from gtdyn.analysis.dag import bayes_net_dag, bayes_tree_dag, elimination_dag, symbolic_elimination, to_dot
from gtdyn.analysis.metrics import metrics, metrics_of
from gtdyn.analysis.steps import elimination_steps

__all__ = ["bayes_net_dag", "bayes_tree_dag", "elimination_dag", "elimination_steps", "metrics", "metrics_of",
           "symbolic_elimination", "to_dot"]
