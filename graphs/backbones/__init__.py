"""The graph backbones, each registered with `attnbench.nn.backbones` when its module is
imported (`graphs.models` imports them all): `graphormer` (Graphormer), `egt` (EGT, SSA's
model), `gps` (GraphGPS) and `graph_bridge` (SAMSA's Graph-Bridge tokeniser). Each takes a padded
graph batch (`graphs.data.batching.GraphCollate`) and returns one representation per graph.
"""
