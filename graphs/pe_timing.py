"""SAMSA Table 4 on this machine: computing graph positional encodings for the graphs of one
Peptides-struct training epoch, against one training epoch of the 24-layer Graph-Bridge SAMSA
model on the same graphs (`python -m scripts.graph_pe_timing`).

SAMSA's claim (arXiv 2408.05391 Table 4): its random-feature tokenisation makes positional
encodings unnecessary, and precomputing the usual ones costs more than training: LapPE 73 s and
RWPE 53 s for Peptides-struct (quoted from the LRGB paper, other hardware) against 35 s for one
epoch of the whole SAMSA model (the authors' A100).

What is measured, in one process, on the same graphs (the train split of `config.data`):
  * LapPE: `graphs.data.positional.encode(lap_k=10, rw_steps=None)`: the 10 eigenvectors of the
    symmetric normalised Laplacian with the smallest non-trivial eigenvalues (LRGB's LapPE
    size), one batched `eigh` per graph size, BLAS on one thread;
  * RWPE: `encode(lap_k=None, rw_steps=20)`: the return probabilities of 1..20-step random walks
    (LRGB's RWSE length);
  * the model: the recipe `configs/graphs/peptides.py:kind=struct` (24 layers, width 128,
    SAMSA hard k = 128, batch 32), one pass over the epoch's batches to compile every bucket
    shape, then a timed pass of training steps (forward, backward, AdamW update).
The epoch of the stand-in (a few hundred generated peptides of LRGB's sizes) is shorter than
LRGB's 10,873 training graphs; the record gives the measured seconds and seconds per graph, and
the seconds for 10,873 graphs at that rate (labelled as extrapolated). The ratios between the
three are the comparable part; absolute seconds depend on the device (recorded).
"""

from __future__ import annotations

import time

import jax
import numpy as np

from attnbench import config as config_lib
from attnbench import io, steps, tasks

__all__ = ["LRGB_TRAIN_GRAPHS", "RECIPE", "measure"]

LRGB_TRAIN_GRAPHS = 10_873  # LRGB Peptides-struct train split
RECIPE = "graphs/peptides.py:kind=struct"
LAP_K, RW_STEPS = 10, 20


def _graphs(split) -> list[dict]:
    return [split[i] for i in range(len(split))]


def measure(
    *,
    scale: str = "full",
    source: str = "standin",
    data_dir: str = "",
    num_peptides: int | None = None,
    batch: int | None = None,
) -> dict:
    """One record with the three timings (see the module docstring). `scale="smoke"`: a tiny
    model (2 layers, width 32) on a few short peptides, for tests. `batch`: graphs per training
    step (default the recipe's 32; the per-graph epoch time is what the table compares). The
    full model at batch 32 on LRGB-sized peptides needs more than 24 GB of host memory on a
    CPU (it was killed by the kernel's OOM killer on a 24 GB machine): use a smaller batch
    there, or an accelerator host."""
    from graphs.data import positional

    arg = RECIPE + (",preset=smoke" if scale == "smoke" else "")
    config = config_lib.load(arg)
    with config.unlocked():
        config.data.source, config.data.dir = source, data_dir
        if num_peptides:
            config.data.num_peptides = num_peptides
        if scale == "smoke":
            config.model.num_layers = 2
        if batch:
            config.batch_size = batch
    task = tasks.get(config.task)
    data = task.load_data(config)
    graphs = _graphs(data.train)
    rec = {
        "recipe": arg,
        "data": {"source": data.source, "train_graphs": len(graphs)},
        "mean_nodes": float(np.mean([len(g["node_feat"]) for g in graphs])),
        "device": io.device_info(),
    }
    t = time.perf_counter()
    positional.encode(graphs, lap_k=LAP_K, rw_steps=None)
    rec["lap_pe_s"] = time.perf_counter() - t
    t = time.perf_counter()
    positional.encode(graphs, lap_k=None, rw_steps=RW_STEPS)
    rec["rwse_s"] = time.perf_counter() - t

    built = steps.setup(task, config)
    train_step, state = built.train_step(0), built.state
    b = int(config.batch_size)
    order = np.random.default_rng(0).permutation(len(graphs))
    batches = []
    for start in range(0, len(order) - b + 1, b):  # full batches only, as a training epoch
        batch = data.collate([graphs[i] for i in order[start : start + b]])
        batch["weight"] = np.ones(b, np.float32)
        batches.append(batch)
    if not batches:
        raise ValueError(f"{len(graphs)} training graphs: fewer than one batch of {b}")

    def epoch(state):
        for batch in batches:
            state, metrics = train_step(state, batch)
        jax.block_until_ready(metrics)
        return state

    t = time.perf_counter()
    state = epoch(state)  # compiles each (node, edge) bucket shape once
    rec["compile_epoch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    state = epoch(state)
    rec["epoch_s"] = time.perf_counter() - t
    rec["epoch_graphs"] = len(batches) * b
    rec["model"] = {
        k: config.model.get(k) for k in ("encoder", "num_layers", "dim", "num_heads", "mlp_dim")
    }
    rec["attention"] = config.attention.to_dict()
    rec["batch"] = b
    per = {
        "lap_pe": rec["lap_pe_s"] / len(graphs),
        "rwse": rec["rwse_s"] / len(graphs),
        "epoch": rec["epoch_s"] / rec["epoch_graphs"],
    }
    rec["per_graph_s"] = per
    rec["lrgb_epoch_extrapolated_s"] = {k: v * LRGB_TRAIN_GRAPHS for k, v in per.items()}
    return rec
