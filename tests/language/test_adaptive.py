"""Adaptive input and adaptive softmax against float64 numpy references of fairseq's
factorisation (log p(w) = head log-prob of w's cluster + tail log-prob of w inside it)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from attnbench import errors
from language import adaptive
from tests import tolerances

VOCAB, DIM, CUTOFFS, FACTOR = 23, 16, (5, 12), 2  # bands of 5, 7, 11 words; widths 16, 8, 4


def _np(p):
    return np.asarray(p[...], np.float64)


def ref_input(module: adaptive.AdaptiveInput, tokens):
    """Loop over tokens: find the band, look the row up, project."""
    out = np.zeros(tokens.shape + (DIM,))
    edges = [0, *CUTOFFS, VOCAB]
    for idx in np.ndindex(tokens.shape):
        t = int(tokens[idx])
        band = next(i for i in range(3) if edges[i] <= t < edges[i + 1])
        row = _np(module.embeddings[band])[t - edges[band]]
        out[idx] = row @ _np(module.projections[band])
    return out


def ref_log_probs(sm: adaptive.AdaptiveSoftmax, inp: adaptive.AdaptiveInput | None, x):
    """Whole-vocabulary log-probabilities, per token, from the explicit factorisation."""

    def lsm(z):
        z = z - z.max()
        return z - np.log(np.exp(z).sum())

    edges = [0, *CUTOFFS, VOCAB]
    words = _np(inp.embeddings[0]) if inp else _np(sm.head_words)
    out = np.zeros(x.shape[:-1] + (VOCAB,))
    for idx in np.ndindex(x.shape[:-1]):
        h = x[idx]
        head = lsm(np.concatenate([words @ h, h @ _np(sm.class_proj)]))
        out[idx][: edges[1]] = head[: edges[1]]
        for i in range(2):
            if inp is not None and sm.tie_proj:
                z = h @ _np(inp.projections[i + 1]).T
            else:
                z = h @ _np(sm.tail_proj[i])
            e = _np(inp.embeddings[i + 1]) if inp else _np(sm.tail_out[i])
            out[idx][edges[i + 1] : edges[i + 2]] = head[edges[1] + i] + lsm(e @ z)
    return out


class _Pair(nnx.Module):
    def __init__(self, tied: bool, tie_proj: bool, rngs: nnx.Rngs):
        self.inp = adaptive.AdaptiveInput(VOCAB, DIM, cutoffs=CUTOFFS, factor=FACTOR, rngs=rngs)
        self.sm = adaptive.AdaptiveSoftmax(
            VOCAB,
            DIM,
            cutoffs=CUTOFFS,
            factor=FACTOR,
            dropout=0.2,
            tied=self.inp if tied else None,
            tie_proj=tie_proj,
            rngs=rngs,
        )


def _modules(tied: bool, tie_proj: bool = True):
    """Built by shape, then filled with numpy normals (no init programs to compile: the
    fast tier stays fast); shared (tied) parameters are filled once."""
    pair = nnx.eval_shape(lambda: _Pair(tied, tie_proj, nnx.Rngs(params=0)))
    rng = np.random.default_rng(0)
    for _, v in nnx.iter_graph(pair):
        if isinstance(v, nnx.Param):
            v.set_value(rng.normal(0, 0.5, v.shape).astype(np.float32))
    return pair.inp, pair.sm


TOKENS = np.array([[0, 4, 5, 11, 12, 22], [3, 7, 19, 1, 13, 8]])


def test_adaptive_input_matches_loops():
    inp, _ = _modules(tied=False)
    assert [e.shape for e in inp.embeddings] == [(5, 16), (7, 8), (11, 4)]
    assert [p.shape for p in inp.projections] == [(16, 16), (8, 16), (4, 16)]
    got = jax.jit(lambda t: inp(t))(TOKENS)
    tolerances.assert_close(np.asarray(got), ref_input(inp, TOKENS), atol=1e-6)


@pytest.mark.parametrize("tied,tie_proj", [(True, True), (True, False), (False, False)])
def test_adaptive_softmax_matches_factorisation(tied, tie_proj):
    inp, sm = _modules(tied, tie_proj)
    x = np.random.default_rng(0).normal(size=(2, 6, DIM))
    ref = ref_log_probs(sm, inp if tied else None, x)
    np.testing.assert_allclose(np.exp(ref).sum(-1), 1.0, rtol=1e-12)  # the reference itself
    x32 = jnp.asarray(x, jnp.float32)
    got, nll = jax.jit(lambda x: (sm.log_probs(x), sm.nll(x, TOKENS)))(x32)
    got, nll = np.asarray(got), np.asarray(nll)
    tolerances.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    tolerances.assert_close(np.exp(got.astype(np.float64)).sum(-1), np.ones((2, 6)), atol=1e-5)
    # TOKENS as targets cover the head (0, 4, 3, 1), cluster 0 (5, 11, 7, 8), cluster 1
    want = -np.take_along_axis(ref, TOKENS[..., None], -1)[..., 0]
    tolerances.assert_close(nll, want, rtol=1e-5, atol=1e-5)


def test_tied_softmax_owns_only_the_cluster_projection():
    """fairseq tie_adaptive_weights + tie_adaptive_proj: the head's words are band 0's
    embedding, tails use band i+1's projection (transposed) and embedding; the softmax owns
    the [dim, clusters] class projection alone."""
    inp, sm = _modules(tied=True)

    def count(m):
        return sum(math.prod(v.shape) for _, v in nnx.iter_graph(m) if isinstance(v, nnx.Param))

    pair = nnx.eval_shape(lambda: _Pair(True, True, nnx.Rngs(params=0)))
    assert count(pair) == count(pair.inp) + DIM * 2
    assert len(sm.tail_proj) == 0 and len(sm.tail_out) == 0 and sm.head_words is None
    _, untied_proj = _modules(tied=True, tie_proj=False)
    assert [p.shape for p in untied_proj.tail_proj] == [(16, 8), (16, 4)]


@pytest.mark.slow
def test_dropout_needs_a_key_and_changes_only_training():
    _, sm = _modules(tied=False)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(2, 6, DIM)), jnp.float32)
    nll = jax.jit(lambda x, key, train: sm.nll(x, TOKENS, train=train, key=key), static_argnums=2)
    eval_nll = nll(x, None, False)
    np.testing.assert_array_equal(nll(x, jax.random.key(0), False), eval_nll)
    train_nll = nll(x, jax.random.key(0), True)
    assert np.isfinite(train_nll).all() and not np.allclose(train_nll, eval_nll)
    with pytest.raises(ValueError, match="key"):
        sm.nll(x, TOKENS, train=True)


def test_bad_cutoffs_are_config_errors():
    for cuts in [(5, 5), (30,), (0, 4), ()]:
        with pytest.raises(errors.ConfigError, match="adaptive_cutoffs"):
            adaptive.bands(VOCAB, cuts)
    with pytest.raises(errors.ConfigError, match="adaptive_factor"):
        nnx.eval_shape(
            lambda: adaptive.AdaptiveInput(VOCAB, 4, cutoffs=CUTOFFS, factor=8, rngs=nnx.Rngs(0))
        )

    def mismatched():
        inp = adaptive.AdaptiveInput(VOCAB, DIM, cutoffs=(5,), factor=FACTOR, rngs=nnx.Rngs(0))
        return adaptive.AdaptiveSoftmax(VOCAB, DIM, cutoffs=CUTOFFS, tied=inp, rngs=nnx.Rngs(0))

    with pytest.raises(errors.ConfigError, match="differ"):
        nnx.eval_shape(mismatched)


def test_wiki103_bands():
    """fairseq's wiki103 recipe on its 267,744-word dictionary: bands of 20,000 / 40,000 /
    207,744 words in 1024 / 256 / 64 dimensions."""
    inp = nnx.eval_shape(lambda: adaptive.AdaptiveInput(267_744, 1024, rngs=nnx.Rngs(params=0)))
    assert [e.shape for e in inp.embeddings] == [(20000, 1024), (40000, 256), (207_744, 64)]
    assert [p.shape for p in inp.projections] == [(1024, 1024), (256, 1024), (64, 1024)]
