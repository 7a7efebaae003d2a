"""Long Range Arena (Tay et al. 2021, arXiv 2011.04006): ListOps, Text, Retrieval, Image and
Pathfinder / Path-X as the `lra.*` tasks, each with its official data and an offline generator or
stand-in.

Layout:
  tasks.py      the registered tasks, `config.task = "lra.<name>"` (listops, text, retrieval,
                image, pathfinder)
  models.py     the task-facing models: token embedding, an encoder (a backbone registered with
                `attnbench.nn.backbones`: "transformer" or "samsa"), pooling and the LRA heads
  data/         one module per dataset: official reader, generator or offline stand-in, data
                config (`listops`, `text`, `retrieval`, `image`; `pathfinder` with
                `pathfinder_generator`, `pathfinder_release` and `pathfinder_stats`)

LRA registers no backbones of its own: its encoders are attnbench's.
"""
