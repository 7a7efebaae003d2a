"""Train and evaluate one experiment named by its config.

    python -m scripts.train --config configs/lra/listops.py:preset=cpu --workdir runs/listops
    python -m scripts.train --config configs/lra/listops.py:preset=smoke,attn=softmax \
        --workdir runs/x --config.optimizer.lr=1e-3

Re-running with the same workdir resumes from the latest checkpoint.
"""

from __future__ import annotations

import sys

from absl import app, flags, logging
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file("config", None, "config file[:args]", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "run directory (checkpoints, logs, summary)")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    from core import train

    if not flags.FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)  # orbax logs every save at INFO

    train.train_and_evaluate(_CONFIG.value, _WORKDIR.value)


def run():
    """Console entry point (`attnbench-train`)."""
    app.run(main, argv=sys.argv)


if __name__ == "__main__":
    run()
