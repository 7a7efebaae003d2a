"""Checkpoints (orbax): the latest train state for resuming, and the best-validation params.

`latest/<step>` holds the train state (step, params, optimizer state), the data iterator
position and the trainer's bookkeeping (best metric so far). `best/<step>` holds the params of
the best validation evaluation. Orbax finalises a step directory atomically, so a process killed
mid-save leaves the previous step as the latest.
"""

from __future__ import annotations

import pathlib

import jax
import orbax.checkpoint as ocp

__all__ = ["Checkpoints"]


class Checkpoints:
    def __init__(self, directory, *, keep: int = 2, use_async: bool = True):
        directory = pathlib.Path(directory).absolute()
        opts = lambda n: ocp.CheckpointManagerOptions(
            max_to_keep=n, enable_async_checkpointing=use_async, create=True
        )
        self.directory = directory
        self.latest = ocp.CheckpointManager(directory / "latest", options=opts(keep))
        self.best = ocp.CheckpointManager(directory / "best", options=opts(1))

    def save(self, step: int, state, data_state: dict, meta: dict, *, best: bool) -> None:
        """Saves the latest state; also the params as best when `best`."""
        if best:
            self.best.save(
                step, args=ocp.args.Composite(params=ocp.args.StandardSave(state["params"]))
            )
        self.latest.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(state),
                data=ocp.args.JsonSave(data_state),
                meta=ocp.args.JsonSave(meta),
            ),
        )

    def latest_step(self) -> int | None:
        return self.latest.latest_step()

    def restore_latest(self, abstract_state):
        """Returns `(state, data_state, meta)` of the latest step, or None when there is none.

        Best-params steps newer than the restored step (written just before a crash, before
        their latest state was) are dropped: the resumed run recomputes them identically.
        """
        step = self.latest.latest_step()
        if step is None:
            return None
        restored = self.latest.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract_state),
                data=ocp.args.JsonRestore(),
                meta=ocp.args.JsonRestore(),
            ),
        )
        for s in self.best.all_steps():
            if s > step:
                self.best.delete(s)
        return restored["state"], restored["data"], restored["meta"]

    def restore_best_params(self, abstract_params):
        self.best.wait_until_finished()
        step = self.best.latest_step()
        if step is None:
            return None, None
        restored = self.best.restore(
            step, args=ocp.args.Composite(params=ocp.args.StandardRestore(abstract_params))
        )
        return step, restored["params"]

    def wait(self) -> None:
        self.latest.wait_until_finished()
        self.best.wait_until_finished()

    def close(self) -> None:
        self.latest.close()
        self.best.close()


def abstract(tree):
    """Shape/dtype/sharding structs of a pytree of arrays, for restoring into that layout."""
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, tree)
