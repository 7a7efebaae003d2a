"""Checkpoints (orbax): the latest train state for resuming, and the best-validation params.

`latest/<step>` holds the train state (step, params, optimizer state, the parameter EMA when the
run keeps one), the data iterator position and the trainer's bookkeeping (best metric so far).
`best/<step>` holds the params (and the EMA) of the best validation evaluation. Orbax finalises
a step directory atomically, so a process killed mid-save leaves the previous step as the
latest.

With several JAX processes every process calls every method here, in the same order: orbax's
saves, restores and deletes are collective (process 0 writes the JSON items, creates and
finalises the step directories; each process writes its own shards). The decisions around them
are taken together: a step counts as intact only if every process could read it, and only
process 0 moves a damaged step aside, the others waiting for it.
"""

from __future__ import annotations

import os
import pathlib
import warnings

import jax
import numpy as np
import orbax.checkpoint as ocp

from attnbench import errors

__all__ = ["Checkpoints"]

# The parts of the train state kept for the best validation step (those the state has).
_BEST = ("params", "ema")


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
        """Saves the latest state; also the params (and EMA) as best when `best`."""
        if best:
            parts = {k: ocp.args.StandardSave(state[k]) for k in _BEST if k in state}
            self.best.save(step, args=ocp.args.Composite(**parts))
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
        """Returns `(state, data_state, meta)` of the newest intact step, or None when there is
        no step.

        A step that cannot be read (a truncated array file, damaged metadata) is named in a
        warning and moved to `<directory>/damaged/` (kept, not deleted), and the previous step
        is tried; when no step is intact, `CheckpointError` names each damaged one and nothing
        is moved. Best-params steps newer than the restored step (written just before a crash,
        or with a damaged latest step) are dropped: the resumed run recomputes them identically.
        """
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state),
            data=ocp.args.JsonRestore(),
            meta=ocp.args.JsonRestore(),
        )
        damaged: list[tuple[int, str]] = []
        for step in sorted(self.latest.all_steps(), reverse=True):
            why = None
            try:
                restored = self.latest.restore(step, args=args)
            except Exception as e:  # noqa: BLE001 (any failure to read a step makes it unusable)
                why = f"{type(e).__name__}: {_first_line(e)}"
            if not _everywhere(why is None):
                damaged.append((step, why or "unreadable by another process"))
                continue
            for bad, why in damaged:
                moved = self._move_aside(bad)
                if jax.process_index() == 0:
                    warnings.warn(
                        f"checkpoint step {bad} in {self.directory / 'latest'} is damaged "
                        f"({why}); moved to {moved}, resuming from step {step}",
                        stacklevel=2,
                    )
            for s in self.best.all_steps():
                if s > step:
                    self.best.delete(s)
            return restored["state"], restored["data"], restored["meta"]
        if damaged:
            listed = "; ".join(f"step {s}: {why}" for s, why in damaged)
            raise errors.CheckpointError(
                f"no intact checkpoint in {self.directory / 'latest'} ({listed}); move the "
                "checkpoints directory away to start the run again from step 0"
            )
        return None

    def _move_aside(self, step: int) -> pathlib.Path | None:
        """Moves a damaged `latest/<step>` to `damaged/latest-<step>[-N]` and forgets it; the
        new path (process 0, which moves it; None on the others)."""
        dst = None
        if jax.process_index() == 0:
            src = self.directory / "latest" / str(step)
            dst_dir = self.directory / "damaged"
            dst_dir.mkdir(parents=True, exist_ok=True)
            dst, n = dst_dir / f"latest-{step}", 1
            while dst.exists():
                dst, n = dst_dir / f"latest-{step}-{n}", n + 1
            os.replace(src, dst)
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            multihost_utils.sync_global_devices(f"attnbench: moved aside latest/{step}")
        self.latest.reload()
        return dst

    def restore_best(self, abstract_state):
        """Returns `(step, {"params": ..., "ema": ...})` of the best validation step, the parts
        `abstract_state` (the train state's layout) has, or `(None, None)` before any."""
        self.best.wait_until_finished()
        step = self.best.latest_step()
        if step is None:
            return None, None
        parts = {
            k: ocp.args.StandardRestore(abstract_state[k]) for k in _BEST if k in abstract_state
        }
        why = None
        try:
            restored = self.best.restore(step, args=ocp.args.Composite(**parts))
        except Exception as e:  # noqa: BLE001 (named for the user, with what to do)
            why = f"{type(e).__name__}: {_first_line(e)}"
        if not _everywhere(why is None):
            raise errors.CheckpointError(
                f"the best-validation checkpoint step {step} in {self.directory / 'best'} is "
                f"damaged ({why or 'unreadable by another process'}); delete that step "
                "directory and its latest/ steps from it on, and run again to recompute it"
            )
        return step, {k: restored[k] for k in parts}

    def wait(self) -> None:
        self.latest.wait_until_finished()
        self.best.wait_until_finished()

    def close(self) -> None:
        self.latest.close()
        self.best.close()


def _everywhere(ok: bool) -> bool:
    """`ok` on every process (a collective: every process must call it)."""
    if jax.process_count() == 1:
        return ok
    from jax.experimental import multihost_utils

    return bool(np.all(multihost_utils.process_allgather(np.bool_(ok))))


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0][:200] if lines else ""


def abstract(tree):
    """Shape/dtype/sharding structs of a pytree of arrays, for restoring into that layout."""
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, tree)
