"""Particle-dynamics models, the model of the `pointcloud.dynamics` task (`pointcloud.tasks`): the
three networks GRF's HD-VPD experiment compares (Reid et al. 2024, arXiv 2410.03462, Sec. 4 and
App. C.3, Fig. 5), on our own simulator's particles (`pointcloud.data.dynamics`) with position
targets in place of HD-VPD's rendered images (our substitute; the paper has none).

Every model maps one step's particles to their displacement (`Interlacer.__call__`):

  input per particle  position x^{t-1}, velocity (x^{t-1} - x^{t-2}) / delta_scale, the
                      kinematic particles' own next step (x^t - x^{t-1}) / delta_scale (zero for
                      the others: the gripper's action at t, HD-VPD's kinematic particles at t),
                      the 16 features and the kinematic flag, embedded by one dense layer;
  body                `num_layers` pre-LN residual blocks (`attnbench.nn.layers.EncoderBlock`:
                      attention then MLP), alternating as below;
  output              dx = delta_max * tanh(delta_scale * y / delta_max) (HD-VPD's scaled tanh
                      to +-0.25 scene units, App. C.3; `delta_scale` the typical step, so small
                      outputs are linear, y = LN + zero-initialised dense: the untrained model
                      predicts no motion); kinematic particles take their given positions.

  "unmasked"  every block unmasked linear attention with ReLU features (the `linear` mechanism,
              `feature_map="relu"`; HD-VPD's "Unmasked PCT", a vanilla linear-attention
              Transformer).
  "mp"        even blocks linear attention, odd blocks k-NN message passing ("MP Interlacer",
              Whitney et al. 2024, as GRF's Sec. 4 and App. C.3 describe it: global linear
              attention alternating with local neighbour layers): each particle aggregates an
              MLP of (LN(h)_j, (x_j - x_i) / delta_scale) over its `mp_k` nearest neighbours
              (x^{t-1}, self excluded) with a max (`mp_reduce="max"`, as DGCNN's EdgeConv /
              PointNet++) or a mean, then a dense layer back to the width, residually, then an
              MLP block. Our simplification: every particle is updated from its own neighbours
              (the Interlacer's anchor particles are not reproduced).
  "grf"       even blocks linear attention, odd blocks asymmetric GRF attention (`grf_asym`:
              single head, phi = ReLU, k = 3, 3 hops, App. C.3 and D; the hops enumerated, as
              `attention.grf_asym` reads App. C.3's 27 repelling walks) on the k-NN graph of
              x^{t-1}, rebuilt inside every call (blocked, `attention.graphs.batch_knn_graph`),
              once per call and shared by the local blocks (`grf_asym`'s `neighbors` input;
              the MP blocks use the same graph, with k = `mp_k`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

import attention.grf_asym  # noqa: F401  (registers "grf_asym")
from attention import graphs
from attnbench.nn import layers
from pointcloud.data import dynamics

__all__ = ["MODELS", "Interlacer", "KnnMessagePassing", "input_features", "IN_FEATURES"]

MODELS = ("unmasked", "mp", "grf")
IN_FEATURES = 3 + 3 + 3 + dynamics.FEATURE_DIM + 1
REDUCES = ("max", "mean")


def input_features(prev2, prev1, target, features, kinematic, delta_scale: float):
    """Per-particle inputs `[B, N, IN_FEATURES]` (see the module docstring)."""
    kin = kinematic[..., None].astype(prev1.dtype)
    vel = (prev1 - prev2) / delta_scale
    action = (target - prev1) * kin / delta_scale
    return jnp.concatenate([prev1, vel, action, features.astype(prev1.dtype), kin], axis=-1)


class KnnMessagePassing(nnx.Module):
    """h_i + W reduce_{j in kNN(i)} MLP([LN(h)_j, (x_j - x_i) / delta_scale]), then an MLP block."""

    def __init__(self, dim, mlp_dim, *, reduce: str, delta_scale: float, dtype, rngs):
        if reduce not in REDUCES:
            raise ValueError(f"mp_reduce must be one of {REDUCES}, got {reduce!r}")
        self.reduce, self.delta_scale = reduce, delta_scale
        self.ln1 = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.edge1 = nnx.Linear(dim + 3, mlp_dim, dtype=dtype, rngs=rngs)
        self.edge2 = nnx.Linear(mlp_dim, dim, dtype=dtype, rngs=rngs)
        self.out = nnx.Linear(dim, dim, dtype=dtype, rngs=rngs)
        self.ln2 = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.mlp = layers.MlpBlock(dim, mlp_dim, 0.0, dtype=dtype, rngs=rngs)

    def __call__(self, h, coords, nbrs, *, train: bool = False, key=None):
        take = jax.vmap(lambda table, at: table[at])
        safe = jnp.maximum(nbrs, 0)
        hn = self.ln1(h)
        rel = (take(coords, safe) - coords[:, :, None, :]) / self.delta_scale  # [B, N, K, 3]
        msg = jnp.concatenate([take(hn, safe), rel.astype(hn.dtype)], axis=-1)
        msg = self.edge2(jax.nn.gelu(self.edge1(msg)))
        ok = (nbrs >= 0)[..., None]
        if self.reduce == "max":
            agg = jnp.max(jnp.where(ok, msg, -jnp.inf), axis=2)
            agg = jnp.where(jnp.isfinite(agg), agg, 0.0)
        else:
            agg = jnp.sum(jnp.where(ok, msg, 0.0), 2) / jnp.maximum(ok.sum(2), 1).astype(msg.dtype)
        h = h + self.out(agg)
        return h + self.mlp(self.ln2(h), train=train, key=key)


class Interlacer(nnx.Module):
    """A particle-dynamics network: `kind` in MODELS (see the module docstring).

    Args:
      kind: "unmasked" | "mp" | "grf".
      num_layers, dim, mlp_dim, num_heads: blocks, width, MLP width, heads of the linear
        attention blocks (the GRF blocks are single-head, GRF App. C.3).
      global_attention: the linear blocks' mechanism config (`{"name": "linear", ...}`).
      local_attention: the GRF blocks' mechanism config (`{"name": "grf_asym", ...}`).
      mp_k, mp_reduce: neighbours and reduction of the message-passing blocks.
      delta_max, delta_scale: the scaled tanh's bound and the typical step (scene units).
    """

    def __init__(
        self,
        kind: str,
        *,
        num_layers: int,
        dim: int,
        mlp_dim: int,
        num_heads: int,
        global_attention,
        local_attention=None,
        mp_k: int = 3,
        mp_reduce: str = "max",
        delta_max: float = 0.25,
        delta_scale: float = 0.03,
        num_particles: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if kind not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {kind!r}")
        self.kind = kind
        # the k of the one k-NN graph a call builds: the GRF blocks' (its `knn_k`) or the MP's
        self.knn_k = int(local_attention["knn_k"]) if kind == "grf" else mp_k
        self.delta_max, self.delta_scale = delta_max, delta_scale
        self.dtype = dtype
        self.embed = nnx.Linear(IN_FEATURES, dim, dtype=dtype, rngs=rngs)
        linear = layers.mechanism(global_attention)
        local = layers.mechanism(local_attention) if kind == "grf" else None

        def block(i):
            if kind == "unmasked" or i % 2 == 0:
                return layers.EncoderBlock(
                    dim, num_heads, dim, mlp_dim, 0.0, linear, max_len=num_particles,
                    dtype=dtype, rngs=rngs, layer_index=i, num_layers=num_layers,
                )  # fmt: skip
            if kind == "mp":
                return KnnMessagePassing(
                    dim, mlp_dim, reduce=mp_reduce, delta_scale=delta_scale, dtype=dtype,
                    rngs=rngs,
                )  # fmt: skip
            return layers.EncoderBlock(
                dim, 1, dim, mlp_dim, 0.0, local, max_len=num_particles, dtype=dtype,
                rngs=rngs, layer_index=i, num_layers=num_layers,
            )  # fmt: skip

        self.blocks = layers.block_stack(block, num_layers)
        self.norm = nnx.LayerNorm(dim, dtype=dtype, rngs=rngs)
        self.head = nnx.Linear(dim, 3, kernel_init=nnx.initializers.zeros, rngs=rngs)

    def __call__(
        self, prev2, prev1, target, features, kinematic, *, train=False, key=None, **inputs
    ):
        """Positions at t `[B, N, 3]` from frames t-2, t-1 `[B, N, 3]`, `target` `[B, N, 3]`
        (read only at kinematic particles: their given positions at t), features `[B, N, 16]`
        and kinematic `[B, N]` (1 = kinematic); `inputs`: per-call attention inputs for the
        attention blocks (which also get the coordinates and the k-NN graph)."""
        x = input_features(prev2, prev1, target, features, kinematic, self.delta_scale)
        h = self.embed(x.astype(self.dtype))
        coords = prev1
        # One k-NN build per call (the O(N^2) part), shared by every local block.
        nbrs = None if self.kind == "unmasked" else graphs.batch_knn_graph(coords, self.knn_k)
        keys = layers.split_keys(key, len(self.blocks))
        for block, k in zip(self.blocks, keys, strict=True):
            if isinstance(block, KnnMessagePassing):
                h = block(h, coords, nbrs, train=train, key=k)
            else:
                h = block(h, train=train, key=k, **{**inputs, "coords": coords, "neighbors": nbrs})
        y = self.head(self.norm(h).astype(jnp.float32))
        dx = self.delta_max * jnp.tanh(self.delta_scale * y / self.delta_max)
        kin = kinematic[..., None].astype(bool)
        return jnp.where(kin, target, prev1 + dx)


def build(model_cfg, attention_cfg, *, num_particles: int, rngs: nnx.Rngs) -> Interlacer:
    """The model a config's sections describe (`configs/pointcloud/dynamics.py`)."""
    m = model_cfg
    return Interlacer(
        m.interlacer,
        num_layers=m.num_layers,
        dim=m.dim,
        mlp_dim=m.mlp_dim,
        num_heads=m.num_heads,
        global_attention=attention_cfg,
        local_attention=m.local_attention,
        mp_k=m.mp_k,
        mp_reduce=m.mp_reduce,
        delta_max=m.delta_max,
        delta_scale=m.delta_scale,
        num_particles=num_particles,
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
