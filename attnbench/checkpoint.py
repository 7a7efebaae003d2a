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

import copy
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

        def opts(n: int, name: str):
            # Each manager names its own barriers: orbax names a save's barriers by the step
            # directory ("async_write_complete.<step>"), and the best and latest saves of one
            # step run at the same time in the background, so with one shared prefix two
            # processes could meet at the other manager's barrier (orbax: "Barrier ... is
            # already ongoing", or one process's array metadata finalised without the other's).
            return ocp.CheckpointManagerOptions(
                max_to_keep=n,
                enable_async_checkpointing=use_async,
                create=True,
                multiprocessing_options=ocp.options.MultiprocessingOptions(
                    barrier_sync_key_prefix=f"attnbench_{name}"
                ),
            )

        self.directory = directory
        self.latest = ocp.CheckpointManager(directory / "latest", options=opts(keep, "latest"))
        self.best = ocp.CheckpointManager(directory / "best", options=opts(1, "best"))

    def save(self, step: int, state, data_state: dict, meta: dict, *, best: bool) -> None:
        """Saves the latest state; also the params (and EMA) as best when `best`.

        `data_state` and `meta` are copied here: an asynchronous save writes its JSON items in
        the background, after the caller has gone on (and changed `meta` at the next
        evaluation), so it must hold a snapshot, never the live dict."""
        data_state, meta = copy.deepcopy(data_state), copy.deepcopy(meta)
        if best:
            if step in self.best.all_steps():  # kept by a resume (restore_latest): recomputed
                self.best.delete(step)
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
            named = restored["meta"].get("best_step")
            for s in self.best.all_steps():
                if s > step and s != named:  # never the step the restored metadata names
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

    def restore_best(self, abstract_state, meta: dict, better):
        """Returns `(step, {"params": ..., "ema": ...}, note)`: the parts `abstract_state` (the
        train state's layout) has of the best validation step that `meta` (the trainer's
        bookkeeping) names, and None for `note`; `(None, None, None)` before any evaluation.

        When that step's checkpoint is missing or unreadable (a workdir written before the
        metadata snapshots, or a step deleted by hand), the run recovers instead of failing at
        every rerun: the best of the intact `latest/` steps by `meta`'s validation history
        (`better(a, b)`: a is better than b) stands in, a warning names both steps, and `note`
        says so for the summary. `CheckpointError` only when no evaluated step is intact."""
        self.wait()
        wanted = meta.get("best_step")
        if wanted is None:
            return None, None, None
        parts = {
            k: ocp.args.StandardRestore(abstract_state[k]) for k in _BEST if k in abstract_state
        }
        why = "missing"
        if wanted in self.best.all_steps():
            why = None
            try:
                restored = self.best.restore(wanted, args=ocp.args.Composite(**parts))
            except Exception as e:  # noqa: BLE001 (any failure to read the step)
                why = f"{type(e).__name__}: {_first_line(e)}"
            if _everywhere(why is None):
                return wanted, {k: restored[k] for k in parts}, None
            why = why or "unreadable by another process"
        # The evaluated steps whose train state is intact, best first.
        values = {r["step"]: r for r in meta.get("val_history", [])}
        candidates = [s for s in self.latest.all_steps() if s in values]
        order = sorted(candidates, reverse=True)
        best = None
        for s in order:
            if best is None or better(values[s], values[best]):
                best = s
        ranked = [best] + [s for s in order if s != best] if best is not None else []
        full = ocp.args.Composite(state=ocp.args.StandardRestore(abstract_state))
        for s in ranked:
            ok = True
            try:
                state = self.latest.restore(s, args=full)["state"]
            except Exception:  # noqa: BLE001 (an unreadable step is skipped)
                ok = False
            if not _everywhere(ok):
                continue
            note = (
                f"the best-validation checkpoint (step {wanted}) in {self.directory / 'best'} "
                f"is {why}; the best step's test uses step {s}, the best validation of the "
                f"intact checkpoints (steps {', '.join(map(str, sorted(candidates)))})"
            )
            if jax.process_index() == 0:
                warnings.warn(note, stacklevel=2)
            return s, {k: state[k] for k in parts}, note
        raise errors.CheckpointError(
            f"the best-validation checkpoint step {wanted} in {self.directory / 'best'} is "
            f"{why} and no evaluated step in {self.directory / 'latest'} is intact; move the "
            "checkpoints directory away to run again from step 0"
        )

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
