"""Point-cloud models: a point Transformer with any attention, and the PointNet and DGCNN
baselines that SAMSA's Table 5 times against it.

Point Transformer (SAMSA, arXiv 2408.05391, Sec. 4.4 and 5, App. B, Tables 7-8): every point
is a token. Its 6 input features (xyz and the surface normal: App. B's "points with normals")
go through one linear layer (our reading; the paper names no point embedding), with no
positional encoding (none is stated; the points' order is arbitrary), then the backbone named
by `model_cfg.encoder` (`attnbench.nn.backbones`): "samsa" (SAMSA's pre-RMSNorm blocks with the
shared zero-initialised residual scale; `attn=softmax` gives the paper's full-attention row in
the same blocks) or "transformer" (the pre-LN encoder with any registered mechanism). The point
coordinates are passed to every attention layer as the `coords` input, so a mechanism that
builds a k-NN graph (`grf` with `graph="knn"`) masks attention on the graph of the cloud,
rebuilt per call.

  * `PointClassifier`: readout over the points (`model_cfg.readout`: "mean", "max" or
    "attention", the authors' head pooling: softmax over the points of Linear(dim, 1), with the
    padding masked, which their code's `+(1-mask)*1e-9` does not do: GitHub HySonLab/SAMSA,
    its head modules), then Linear(dim, classes) (their heads are one Linear after pooling).
  * `PointSegmenter`: per-point Linear(dim, parts) (their segmentation head). The object
    category is an input (a learned embedding added to every point's token), as PointNet's and
    DGCNN's part-segmentation networks take the one-hot category; SAMSA does not say whether it
    does.

Baselines (classification only; Table 5 times classification):
  * `PointNet` (Qi et al. 2017, arXiv 1612.00593, Sec. 4 and App. C): input transform (a
    T-Net predicting a 3 x 3 matrix from the xyz: shared MLP 64-128-1024, max-pool, FC 512-256,
    initialised to the identity), shared MLP 64-64, feature transform (a 64 x 64 T-Net, with
    the orthogonality regulariser ||I - A A^T||^2 weighted 0.001 in the loss), shared MLP
    64-128-1024, max-pool, FC 512-256 with dropout 0.3 (keep 0.7), then the classes. Normals,
    when given, join the xyz after the input transform is applied to the xyz (the
    PointNet++ repository's `normal_channel` variant).
  * `DGCNN` (Wang et al. 2019, arXiv 1801.07829, Sec. 4.1): four EdgeConv layers (64, 64,
    128, 256) on the k = 20 nearest neighbours in the current feature space (recomputed per
    layer, the point itself among them, as the authors' `knn`), edge features
    [x_j - x_i, x_i] -> Linear -> norm -> LeakyReLU(0.2) -> max over the neighbours; the four
    outputs concatenated -> Linear(512, 1024) -> max- and mean-pooled, concatenated -> FC
    512-256 with dropout 0.5 -> classes.
  Deliberate differences, both baselines: LayerNorm over channels where the originals use
  BatchNorm (the trainer keeps non-trained arrays constant through a step, so BatchNorm's
  running statistics could not be updated; `graphs.backbones.gps` makes the same choice), and no
  segmentation variants (Table 5 and the issue's baselines are classification).

Inputs: `points [B, N, C]` float (C = 3 or 6: xyz, then normals), optional `mask [B, N]` (True
for real points; padded points neither attend nor are attended nor pooled).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = [
    "READOUTS",
    "ARCHS",
    "PointTransformer",
    "PointClassifier",
    "PointSegmenter",
    "PointNet",
    "DGCNN",
    "build_classifier",
    "knn_features",
]

READOUTS = ("mean", "max", "attention")
ARCHS = ("samsa", "transformer", "pointnet", "dgcnn")  # config.model.encoder
NEG = -1e9  # masked logits / max-pool fill (finite: never NaN)


def _readout(x, mask, mode: str, score=None):
    """`[B, N, D]` -> `[B, D]` float32 over the real points."""
    x = x.astype(jnp.float32)
    m = jnp.ones(x.shape[:2], bool) if mask is None else mask.astype(bool)
    if mode == "mean":
        w = m.astype(jnp.float32)
        return jnp.einsum("bnd,bn->bd", x, w) / jnp.maximum(w.sum(1, keepdims=True), 1.0)
    if mode == "max":
        return jnp.where(m[..., None], x, NEG).max(axis=1)
    if mode == "attention":
        logits = jnp.where(m, score(x)[..., 0].astype(jnp.float32), NEG)
        return jnp.einsum("bnd,bn->bd", x, jax.nn.softmax(logits, axis=-1))
    raise errors.ConfigError(f"config.model.readout={mode!r}: known: {', '.join(READOUTS)}")


def _features(points, n: int):
    """The first `n` input features (xyz, then normals when `n` = 6) as float32: the data always
    carries 6 columns, `config.data.normals=False` gives a model of 3 inputs."""
    if points.shape[-1] < n:
        raise ValueError(f"points have {points.shape[-1]} features; the model takes {n}")
    return points[..., :n].astype(jnp.float32)


class PointTransformer(nnx.Module):
    """points `[B, N, C]` -> per-point features `[B, N, dim]` in the compute dtype."""

    def __init__(
        self,
        *,
        in_features: int,
        num_points: int,
        model_cfg,
        attention_cfg,
        num_categories: int = 0,
        rngs: nnx.Rngs,
    ):
        m = model_cfg
        if m.encoder not in ("samsa", "transformer"):
            raise errors.ConfigError(
                f"config.model.encoder={m.encoder!r}: a point Transformer takes the samsa or "
                "transformer backbone"
            )
        self.backbone = m.encoder
        self.in_features = in_features
        self.embed = nnx.Linear(in_features, m.dim, rngs=rngs)
        self.num_categories = num_categories
        if num_categories:
            self.category = nnx.Embed(
                num_categories, m.dim, embedding_init=nnx.initializers.normal(0.02), rngs=rngs
            )
        self.length = num_points
        self.encoder = backbones.build(
            m.encoder, model_cfg=m, attention_cfg=attention_cfg, max_len=num_points, rngs=rngs
        )

    def __call__(
        self, points, *, mask=None, category=None, train: bool = False, key=None, **inputs
    ):
        """Per-point features; the backbone gets the points' coordinates as the attention
        input `coords` (GRF builds its k-NN graph from them), besides the caller's `inputs`."""
        points = _features(points, self.in_features)
        if key is None and not train:
            # Mechanisms that resample per call (GRF on each cloud's k-NN graph) need a key at
            # evaluation too; a fixed one keeps evaluation deterministic. No other mechanism
            # draws randomness at evaluation.
            key = jax.random.key(0)
        x = self.embed(points)
        if self.num_categories:
            if category is None:
                raise ValueError("this model takes the object category (category=[B] ints)")
            x = x + self.category(category.astype(jnp.int32))[:, None, :]
        inputs = {"coords": points[..., :3], **inputs}
        return self.encoder(x, mask=mask, train=train, key=key, **inputs)

    def count_flops(self, tally) -> None:
        tally.linear("embedding", self.embed, self.length)
        if self.num_categories:
            tally.claim("embedding", self.category)
        backbones.count_flops(self.backbone, self.encoder, tally, n=self.length, masked=False)


class PointClassifier(nnx.Module):
    """`PointTransformer` -> readout -> Linear(dim, classes); logits float32 `[B, classes]`."""

    def __init__(self, *, in_features, num_points, num_classes, model_cfg, attention_cfg, rngs):
        self.readout = model_cfg.get("readout", "mean")
        if self.readout not in READOUTS:
            raise errors.ConfigError(
                f"config.model.readout={self.readout!r}: known: {', '.join(READOUTS)}"
            )
        self.body = PointTransformer(
            in_features=in_features,
            num_points=num_points,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            rngs=rngs,
        )
        dim = model_cfg.dim
        if self.readout == "attention":
            self.score = nnx.Linear(dim, 1, rngs=rngs)
        self.head = nnx.Linear(dim, num_classes, rngs=rngs)

    def __call__(self, points, *, mask=None, train: bool = False, key=None, **inputs):
        x = self.body(points, mask=mask, train=train, key=key, **inputs)
        pooled = _readout(x, mask, self.readout, getattr(self, "score", None))
        return self.head(pooled).astype(jnp.float32)

    def count_flops(self, tally) -> None:
        n = self.body.length
        dim = self.head.in_features
        with tally.per_sequence(1, n):
            self.body.count_flops(tally)
        if self.readout == "attention":
            tally.linear("head", self.score, n)
            tally.add("head", elementwise=2 * n * dim + 3 * n)  # softmax and weighted sum
        else:
            tally.add("head", elementwise=n * dim)
        tally.linear("head", self.head, 1)


class PointSegmenter(nnx.Module):
    """`PointTransformer` (with the category) -> per-point Linear(dim, parts): `[B, N, parts]`."""

    def __init__(
        self, *, in_features, num_points, num_parts, num_categories, model_cfg, attention_cfg, rngs
    ):
        self.body = PointTransformer(
            in_features=in_features,
            num_points=num_points,
            model_cfg=model_cfg,
            attention_cfg=attention_cfg,
            num_categories=num_categories,
            rngs=rngs,
        )
        self.head = nnx.Linear(model_cfg.dim, num_parts, rngs=rngs)

    def __call__(self, points, category, *, mask=None, train: bool = False, key=None, **inputs):
        x = self.body(points, mask=mask, category=category, train=train, key=key, **inputs)
        return self.head(x.astype(jnp.float32))

    def count_flops(self, tally) -> None:
        n = self.body.length
        with tally.per_sequence(1, n):
            self.body.count_flops(tally)
        tally.linear("head", self.head, n)


# ----------------------------------------------------------------------------- baselines


class _Dense(nnx.Module):
    """Linear -> LayerNorm -> activation (a shared MLP layer when applied per point)."""

    def __init__(self, din: int, dout: int, *, act=jax.nn.relu, norm: bool = True, rngs):
        self.linear = nnx.Linear(din, dout, use_bias=not norm, rngs=rngs)
        self.norm = nnx.LayerNorm(dout, epsilon=1e-5, rngs=rngs) if norm else None
        self.act = act

    def __call__(self, x):
        x = self.linear(x)
        if self.norm is not None:
            x = self.norm(x)
        return self.act(x)


def _mlp(widths, din: int, *, act=jax.nn.relu, rngs) -> nnx.List:
    out = []
    for w in widths:
        out.append(_Dense(din, w, act=act, rngs=rngs))
        din = w
    return nnx.List(out)


def _run(stack, x):
    for layer in stack:
        x = layer(x)
    return x


class _TNet(nnx.Module):
    """PointNet's T-Net: `[B, N, din]` -> a `[B, k, k]` transform, initialised to identity."""

    def __init__(self, din: int, k: int, *, rngs):
        self.k = k
        self.point_mlp = _mlp((64, 128, 1024), din, rngs=rngs)
        self.fc = _mlp((512, 256), 1024, rngs=rngs)
        self.out = nnx.Linear(
            256, k * k, kernel_init=nnx.initializers.zeros, bias_init=nnx.initializers.zeros,
            rngs=rngs,
        )  # fmt: skip

    def __call__(self, x, mask):
        g = _readout(_run(self.point_mlp, x), mask, "max")
        t = self.out(_run(self.fc, g)).reshape(-1, self.k, self.k)
        return t + jnp.eye(self.k, dtype=t.dtype)


class PointNet(nnx.Module):
    """PointNet classification (see the module docstring); `__call__` returns logits; the
    feature transform's regulariser is `self.regularizer(points, mask)`'s second output."""

    REG_WEIGHT = 0.001  # Qi et al. 2017 Sec. 4.1 / App. C: weight of ||I - A A^T||_F^2

    def __init__(self, *, in_features: int, num_classes: int, dropout: float = 0.3, rngs):
        self.in_features = in_features
        self.input_tnet = _TNet(3, 3, rngs=rngs)
        self.mlp1 = _mlp((64, 64), in_features, rngs=rngs)
        self.feature_tnet = _TNet(64, 64, rngs=rngs)
        self.mlp2 = _mlp((64, 128, 1024), 64, rngs=rngs)
        self.fc = _mlp((512, 256), 1024, rngs=rngs)
        self.out = nnx.Linear(256, num_classes, rngs=rngs)
        self.rate = dropout

    def features(self, points, mask):
        xyz = points[..., :3]
        t3 = self.input_tnet(xyz, mask)
        x = jnp.concatenate([jnp.einsum("bnc,bcd->bnd", xyz, t3), points[..., 3:]], axis=-1)
        x = _run(self.mlp1, x)
        t64 = self.feature_tnet(x, mask)
        x = jnp.einsum("bnc,bcd->bnd", x, t64)
        x = _run(self.mlp2, x)
        return _readout(x, mask, "max"), t64

    def __call__(self, points, *, mask=None, train: bool = False, key=None, **inputs):
        """Logits; `inputs` (attention inputs) are ignored: PointNet has no attention."""
        logits, _ = self.logits_and_regularizer(points, mask=mask, train=train, key=key)
        return logits

    def logits_and_regularizer(self, points, *, mask=None, train: bool = False, key=None):
        g, t64 = self.features(_features(points, self.in_features), mask)
        h = _run(self.fc, g)
        h = layers.dropout(h, self.rate, key, train)
        eye = jnp.eye(t64.shape[-1], dtype=t64.dtype)
        reg = jnp.mean(jnp.sum((eye - t64 @ jnp.swapaxes(t64, 1, 2)) ** 2, axis=(1, 2)))
        return self.out(h), self.REG_WEIGHT * reg


def knn_features(x, k: int, mask=None):
    """Indices `[B, N, k]` of each point's k nearest points in feature space `x [B, N, D]`,
    itself included (DGCNN's `knn`: the top k of -||x_i - x_j||^2 over all j); padded points
    are never neighbours of a real point. Dense `[B, N, N]` distances (DGCNN's own cost)."""
    x = jax.lax.stop_gradient(x.astype(jnp.float32))
    sq = jnp.sum(x * x, axis=-1)
    d2 = sq[:, :, None] - 2 * jnp.einsum("bnd,bmd->bnm", x, x) + sq[:, None, :]
    if mask is not None:
        d2 = jnp.where(mask[:, None, :], d2, jnp.inf)
    d2 = d2.at[:, jnp.arange(x.shape[1]), jnp.arange(x.shape[1])].set(-1.0)  # self first
    return jax.lax.top_k(-d2, k)[1]


class _EdgeConv(nnx.Module):
    def __init__(self, din: int, dout: int, *, rngs):
        self.layer = _Dense(2 * din, dout, act=lambda v: jax.nn.leaky_relu(v, 0.2), rngs=rngs)

    def __call__(self, x, idx):
        nbr = jax.vmap(lambda xb, ib: xb[ib])(x, idx)  # [B, N, k, D]
        centre = jnp.broadcast_to(x[:, :, None, :], nbr.shape)
        return self.layer(jnp.concatenate([nbr - centre, centre], axis=-1)).max(axis=2)


class DGCNN(nnx.Module):
    """DGCNN classification (see the module docstring)."""

    def __init__(self, *, in_features: int, num_classes: int, k: int = 20, dropout: float = 0.5,
                 rngs):  # fmt: skip
        self.k = k
        self.in_features = in_features
        widths = (64, 64, 128, 256)  # Wang et al. 2019 Fig. 3 (classification)
        convs, din = [], in_features
        for w in widths:
            convs.append(_EdgeConv(din, w, rngs=rngs))
            din = w
        self.convs = nnx.List(convs)
        lrelu = lambda v: jax.nn.leaky_relu(v, 0.2)  # noqa: E731
        self.embed = _Dense(sum(widths), 1024, act=lrelu, rngs=rngs)
        self.fc = nnx.List(
            [_Dense(2048, 512, act=lrelu, rngs=rngs), _Dense(512, 256, act=lrelu, rngs=rngs)]
        )
        self.out = nnx.Linear(256, num_classes, rngs=rngs)
        self.rate = dropout

    def __call__(self, points, *, mask=None, train: bool = False, key=None, **inputs):
        """Logits; `inputs` (attention inputs) are ignored: DGCNN has no attention."""
        x = _features(points, self.in_features)
        if x.shape[1] <= self.k:
            raise ValueError(f"DGCNN: {x.shape[1]} points, fewer than k + 1 = {self.k + 1}")
        outs = []
        for conv in self.convs:
            x = conv(x, knn_features(x, self.k, mask))
            outs.append(x)
        x = self.embed(jnp.concatenate(outs, axis=-1))
        h = jnp.concatenate([_readout(x, mask, "max"), _readout(x, mask, "mean")], axis=-1)
        keys = layers.split_keys(key, len(self.fc))
        for layer, k in zip(self.fc, keys, strict=True):
            h = layers.dropout(layer(h), self.rate, k, train)
        return self.out(h)


def build_classifier(*, in_features, num_points, num_classes, model_cfg, attention_cfg, rngs):
    """The classifier named by `model_cfg.encoder` (ARCHS)."""
    arch = model_cfg.encoder
    if arch == "pointnet":
        return PointNet(in_features=in_features, num_classes=num_classes, rngs=rngs)
    if arch == "dgcnn":
        k = int(model_cfg.get("dgcnn_k", 20))
        if k >= num_points:
            raise errors.ConfigError(
                f"config.model.dgcnn_k={k}: must be below the {num_points} points of a cloud"
            )
        return DGCNN(in_features=in_features, num_classes=num_classes, k=k, rngs=rngs)
    if arch not in ARCHS:
        raise errors.ConfigError(f"config.model.encoder={arch!r}: known: {', '.join(ARCHS)}")
    return PointClassifier(
        in_features=in_features,
        num_points=num_points,
        num_classes=num_classes,
        model_cfg=model_cfg,
        attention_cfg=attention_cfg,
        rngs=rngs,
    )


def param_count(model) -> int:
    return sum(math.prod(x.shape) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
