"""The toy variable-size task (tests only):

python -m scripts.train --config tests/toy/config.py --workdir runs/toy
"""

import ml_collections

from configs import common
from tests.toy import task  # noqa: F401 (registers toy.sets)


def get_config(arg=None):
    del arg
    c = common.trainer_config()
    c.task = "toy.sets"
    c.preset = "smoke"
    c.batch_size, c.eval_batch_size = 16, 32
    c.total_steps, c.eval_every, c.log_every = 12, 4, 2
    c.optimizer.lr = 3e-3
    c.schedule.warmup_steps = 2
    c.data = ml_collections.ConfigDict({"seed": 0, "num_train": 200, "num_val": 50, "num_test": 50})
    c.model = ml_collections.ConfigDict(
        {"num_layers": 1, "dim": 32, "qkv_dim": 32, "num_heads": 4, "mlp_dim": 64, "dropout": 0.1}
    )
    c.attention = common.attention_config("softmax")
    c.evals = ml_collections.ConfigDict(
        {
            "kind": {"type": "classification", "top_k": (2,)},
            "size": {"type": "regression", "mean": task.SIZE_MEAN, "std": task.SIZE_STD},
        }
    )
    return c
