"""attnbench: the platform of the attention benchmark: one trainer, its tasks and evaluators,
configs, checkpoints, data pipelines and file formats (`data/`), Flax building blocks (`nn/`),
multi-process launching (`launch/`), the papers' tables (`papers/`) and benchmarks (`bench/`).

The attention mechanisms are the `attention` package; the domains (`lra`, `vision`, `graphs`,
`pointcloud`, `language`) register their tasks and backbones with this one. DESIGN.md in the
repository describes the layout and where new pieces go.
"""

__version__ = "0.2.0"
