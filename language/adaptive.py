"""Adaptive input embeddings and the adaptive softmax, as fairseq's `transformer_lm_wiki103`.

Adaptive input (Baevski & Auli, ICLR 2019, arXiv:1809.10853): the vocabulary, sorted by
frequency, is cut into bands at `cutoffs` (wiki103 recipe: 20000, 60000, so three bands of
20000, 40000 and V - 60000 words). Band i embeds its words in `dim // factor**i` dimensions
(factor 4: 1024, 256, 64) and projects them back to `dim` with a bias-free linear map; every band
has that projection, band 0 included (fairseq `modules/adaptive_input.py`: an `nn.Embedding` and
`nn.Linear(dim_i, output_dim, bias=False)` per band).

Adaptive softmax (Grave et al., ICML 2017, arXiv:1609.04309) with fairseq's factorisation
(`modules/adaptive_softmax.py`): a head softmax over the `cutoffs[0]` frequent words plus one
entry per tail cluster, and per tail cluster i a softmax over its words computed from
`dim -> dim // factor**(i+1) -> cluster size` (two bias-free maps, dropout between them):

    log p(w) = log_softmax(head(x))[w]                                  w < cutoffs[0]
    log p(w) = log_softmax(head(x))[c0 + i] + log_softmax(tail_i(x))[w - lo_i]   w in cluster i

Ties (fairseq `tie_adaptive_weights` and `tie_adaptive_proj`, both on in the wiki103 recipe):
the head's word projection IS band 0's embedding (`x @ E_0^T`; band 0's projection is not used
by the output), tail i's output map IS band i+1's embedding (`h @ E_{i+1}^T`) and, with
`tie_proj`, tail i's first map is band i+1's projection transposed (`x @ P_{i+1}^T`). Only the
head's cluster projection (`dim x clusters`) is the softmax's own. Dropout (fairseq
`adaptive_softmax_dropout`, 0.2 in the recipe) is applied to the softmax's input and inside every
tail, between its two maps (fairseq `AdaptiveSoftmax.forward`).

Static shapes: every band's embedding and every tail are computed for every token and selected
(fairseq computes each tail only for the tokens of its cluster), so the FLOPs of
`count_flops` are those of all bands for all tokens.

Initialisation as fairseq: embeddings normal(0, dim_i ** -0.5), projections xavier-uniform
(fairseq also zeroes the padding row of band 0; the dictionary lives in the data module, so we
do not).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attention import cost
from attnbench import errors
from attnbench.nn import layers

__all__ = ["WIKI103_CUTOFFS", "WIKI103_FACTOR", "bands", "AdaptiveInput", "AdaptiveSoftmax"]

# fairseq transformer_lm_wiki103: adaptive_input_cutoff = adaptive_softmax_cutoff = "20000,60000"
WIKI103_CUTOFFS = (20000, 60000)
# fairseq base_lm_architecture: adaptive_input_factor = adaptive_softmax_factor = 4
WIKI103_FACTOR = 4

_xavier = nnx.initializers.xavier_uniform()


def bands(vocab_size: int, cutoffs, field: str = "config.model.adaptive_cutoffs"):
    """`[(lo, hi), ...]`: the vocabulary bands that `cutoffs` cut (the last ends at
    `vocab_size`). ConfigError (naming `field`) unless the cutoffs increase strictly inside
    `(0, vocab_size)`."""
    cuts = [int(c) for c in cutoffs]
    if not cuts or any(b <= a for a, b in zip([0, *cuts], [*cuts, vocab_size], strict=True)):
        raise errors.ConfigError(
            f"{field}={tuple(cutoffs)}: cutoffs must increase strictly between 0 and the "
            f"vocabulary size {vocab_size}"
        )
    edges = [0, *cuts, vocab_size]
    return list(zip(edges[:-1], edges[1:], strict=True))


def _band_dim(dim: int, factor: float, i: int, field: str) -> int:
    d = int(dim // (factor**i))  # fairseq: int(initial_dim // (factor ** i))
    if d < 1:
        raise errors.ConfigError(
            f"{field}={factor}: band {i} would get {dim} // {factor}**{i} = {d} dimensions"
        )
    return d


class AdaptiveInput(nnx.Module):
    """tokens `[B, N]` int -> `[B, N, dim]` float32 (see the module docstring).

    Attributes:
      bands: `[(lo, hi), ...]` word ids of each band.
      embeddings: per band `[hi - lo, dim_i]`.
      projections: per band `[dim_i, dim]` (the transpose of fairseq's `Linear.weight`).
    """

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        cutoffs=WIKI103_CUTOFFS,
        factor: float = WIKI103_FACTOR,
        rngs: nnx.Rngs,
    ):
        self.bands = bands(vocab_size, cutoffs)
        self.dim = dim
        embeddings, projections = [], []
        for i, (lo, hi) in enumerate(self.bands):
            d = _band_dim(dim, factor, i, "config.model.adaptive_factor")
            init = nnx.initializers.normal(d**-0.5)
            embeddings.append(nnx.Param(init(rngs.params(), (hi - lo, d))))
            projections.append(nnx.Param(_xavier(rngs.params(), (d, dim))))
        self.embeddings = nnx.List(embeddings)
        self.projections = nnx.List(projections)

    def __call__(self, tokens):
        """Ids outside `[0, vocab_size)` embed to zeros."""
        tokens = jnp.asarray(tokens, jnp.int32)
        out = jnp.zeros(tokens.shape + (self.dim,), jnp.float32)
        for (lo, hi), emb, proj in zip(self.bands, self.embeddings, self.projections, strict=True):
            inside = (tokens >= lo) & (tokens < hi)
            rows = jnp.take(emb[...], jnp.clip(tokens - lo, 0, hi - lo - 1), axis=0)
            out = out + jnp.where(inside[..., None], rows @ proj[...], 0.0)
        return out

    def count_flops(self, tally, *, n: int) -> None:
        """`n` tokens: every band's projection on every token (static shapes), the selects."""
        tally.claim("embedding", self)
        for proj in self.projections:
            tally.add("embedding", 2 * n * math.prod(proj.shape), n * self.dim)


class AdaptiveSoftmax(nnx.Module):
    """The adaptive softmax over `vocab_size` words from `[..., dim]` features.

    `tied` is the `AdaptiveInput` whose embeddings (and, with `tie_proj`, projections) the
    softmax shares (fairseq `tie_adaptive_weights` / `tie_adaptive_proj`); its bands must be
    the softmax's. Without it every map is the softmax's own (xavier-uniform, as fairseq).

    Attributes:
      bands: `[(lo, hi), ...]`, band 0 the head's words, band i+1 tail cluster i.
      class_proj: `[dim, clusters]`, the head's cluster logits.
    """

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        *,
        cutoffs=WIKI103_CUTOFFS,
        factor: float = WIKI103_FACTOR,
        dropout: float = 0.0,
        tied: AdaptiveInput | None = None,
        tie_proj: bool = True,
        rngs: nnx.Rngs,
    ):
        self.bands = bands(vocab_size, cutoffs)
        self.vocab_size, self.dim, self.rate = vocab_size, dim, float(dropout)
        clusters = len(self.bands) - 1
        if tied is not None and (tied.bands != self.bands or tied.dim != dim):
            raise errors.ConfigError(
                "config.model.tie_adaptive_weights: the adaptive input's bands "
                f"{tied.bands} (width {tied.dim}) differ from the adaptive softmax's "
                f"{self.bands} (width {dim}); give both the same cutoffs"
            )
        if tied is not None and tied.embeddings[0].shape[1] != dim:
            raise errors.ConfigError(
                "config.model.tie_adaptive_weights: band 0 of the adaptive input has width "
                f"{tied.embeddings[0].shape[1]}, the head's word projection needs {dim}"
            )
        self.tied = nnx.data(tied)
        self.tie_proj = bool(tie_proj and tied is not None)
        self.class_proj = nnx.Param(_xavier(rngs.params(), (dim, clusters)))
        lo0, hi0 = self.bands[0]
        self.head_words = nnx.data(
            None if tied else nnx.Param(_xavier(rngs.params(), (hi0 - lo0, dim)))
        )
        projs, outs = [], []
        for i, (lo, hi) in enumerate(self.bands[1:]):
            d = _band_dim(dim, factor, i + 1, "config.model.adaptive_factor")
            if tied is not None and tied.embeddings[i + 1].shape[1] != d:
                raise errors.ConfigError(
                    f"config.model.adaptive_factor={factor}: the adaptive input's band {i + 1} "
                    f"has width {tied.embeddings[i + 1].shape[1]}, tail {i} needs {d}"
                )
            if not self.tie_proj:
                projs.append(nnx.Param(_xavier(rngs.params(), (dim, d))))
            if tied is None:
                outs.append(nnx.Param(_xavier(rngs.params(), (hi - lo, d))))
        self.tail_proj = nnx.List(projs)  # [dim, d_i] per tail; empty when tied
        self.tail_out = nnx.List(outs)  # [size_i, d_i] per tail; empty when tied

    # ----------------------------------------------------------------------------- weights

    def _head_words(self):
        return (self.tied.embeddings[0] if self.tied else self.head_words)[...]

    def _tail(self, i: int, x, key, train: bool):
        """Tail cluster `i`'s logits `[..., size_i]` (float32)."""
        if self.tie_proj:
            h = x @ self.tied.projections[i + 1][...].T
        else:
            h = x @ self.tail_proj[i][...]
        h = layers.dropout(h, self.rate, key, train)
        out = self.tied.embeddings[i + 1] if self.tied else self.tail_out[i]
        return h @ out[...].T

    def _head(self, x):
        return jnp.concatenate([x @ self._head_words().T, x @ self.class_proj[...]], axis=-1)

    # ----------------------------------------------------------------------------- outputs

    def _inputs(self, x, key, train):
        keys = (
            [None] * len(self.bands)
            if key is None
            else list(jax.random.split(key, len(self.bands)))
        )
        x = layers.dropout(jnp.asarray(x, jnp.float32), self.rate, keys[0], train)
        return x, keys[1:]

    def log_probs(self, x, *, train: bool = False, key=None):
        """`[..., dim]` -> `[..., vocab_size]` float32 log-probabilities (sum of exp is 1).

        Materialises the whole vocabulary: for tests and small vocabularies; training and
        evaluation use `nll`."""
        x, keys = self._inputs(x, key, train)
        head = jax.nn.log_softmax(self._head(x), axis=-1)
        c0 = self.bands[0][1]
        parts = [head[..., :c0]]
        for i in range(len(self.bands) - 1):
            tail = jax.nn.log_softmax(self._tail(i, x, keys[i], train), axis=-1)
            parts.append(tail + head[..., c0 + i, None])
        return jnp.concatenate(parts, axis=-1)

    def nll(self, x, targets, *, train: bool = False, key=None):
        """Negative log-likelihood (nats) `[...]` float32 of `targets` `[...]` int given
        features `x` `[..., dim]`. Targets outside `[0, vocab_size)` give NaN-free garbage:
        mask them out (the LM task's `mask`)."""
        x, keys = self._inputs(x, key, train)
        targets = jnp.asarray(targets, jnp.int32)
        head = jax.nn.log_softmax(self._head(x), axis=-1)
        c0 = self.bands[0][1]
        # The head entry each target reads: its word (band 0) or its cluster's slot.
        slot = jnp.full(targets.shape, -1, jnp.int32)
        total = jnp.zeros(targets.shape, jnp.float32)
        for i, (lo, hi) in enumerate(self.bands[1:]):
            inside = (targets >= lo) & (targets < hi)
            slot = jnp.where(inside, c0 + i, slot)
            tail = jax.nn.log_softmax(self._tail(i, x, keys[i], train), axis=-1)
            word = jnp.clip(targets - lo, 0, hi - lo - 1)
            lp = jnp.take_along_axis(tail, word[..., None], axis=-1)[..., 0]
            total = total + jnp.where(inside, lp, 0.0)
        slot = jnp.where(slot < 0, jnp.clip(targets, 0, c0 - 1), slot)
        total = total + jnp.take_along_axis(head, slot[..., None], axis=-1)[..., 0]
        return -total

    def count_flops(self, tally, *, n: int) -> None:
        """`n` tokens: the head and every tail on every token (static shapes), the log-softmax
        of each, the per-token combination."""
        tally.claim("head", self)  # tied weights keep the component claimed first
        c0 = self.bands[0][1]
        width = c0 + len(self.bands) - 1
        tally.add("head", 2 * n * self.dim * width, n * width * cost.SOFTMAX)
        for i, (lo, hi) in enumerate(self.bands[1:]):
            d = (self.tied.embeddings[i + 1] if self.tied else self.tail_out[i]).shape[1]
            tally.add("head", 2 * n * (self.dim * d + d * (hi - lo)), n * (hi - lo) * cost.SOFTMAX)
