"""The elimination result as a DAG: a GaussianBayesNet → networkx.DiGraph with human labels.

Sequential elimination gives one conditional per variable, p(x | parents). An edge p → x means back-
substitution computes x from p (as in the paper's Fig. 5, 7 and 10).
"""

from __future__ import annotations

import gtsam
import networkx as nx

from gtdyn import keys


def bayes_net_dag(bayes_net: gtsam.GaussianBayesNet) -> nx.DiGraph:
    dag = nx.DiGraph()
    for step in range(bayes_net.size()):
        conditional = bayes_net.at(step)
        frontal = conditional.firstFrontalKey()
        for key in conditional.keys():
            if key not in dag:
                dag.add_node(key, label=keys.label(key), pretty=keys.pretty(key), kind=keys.kind(key))
        dag.nodes[frontal]["step"] = step
        for parent in list(conditional.keys())[1:]:
            dag.add_edge(parent, frontal)
    return dag
