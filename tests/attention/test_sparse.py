"""Property tests of the fixed sparse patterns (bigbird, longformer, sparse_transformer and their
`_dense` forms): blocked == dense in float64, the papers' claims on the pattern (read off the
gradient structure of the blocked code), causality, float32 vs float64, awkward lengths, bad
hyper-parameters, and no N x N intermediate in the blocked forms. The float64 reference
comparisons of every mask kind are in test_table.py (cases in ref_sparse.py)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attention
from attention import sparse_patterns
from tests.attention import ref_sparse as ref
from tests.attention.test_baselines import _intermediate_sizes
from tests.tolerances import assert_close, reference_precision

NAMES = ("bigbird", "longformer", "sparse_transformer")


def _qkv(seed=0, b=2, n=13, h=2, d=4, dv=3):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, n, h, d)),
        rng.normal(size=(b, n, h, dv)),
    )


def _f64(*xs):
    return tuple(jnp.asarray(x, jnp.float64) for x in xs)


def _init(mech, h=2, d=4, max_len=13, seed=0):
    return mech.init(jax.random.key(seed), num_heads=h, head_dim=d, max_len=max_len)


def _mask(kind, b, h, n, seed=1):
    rng = np.random.default_rng(seed)
    if kind == "none":
        return None
    if kind == "key_padding":
        pad = np.ones((b, n), bool)
        pad[0, n - 3 :] = False
        return pad
    if kind == "head_broadcast":  # [B, 1, N, N]
        return rng.random((b, 1, n, n)) > 0.3
    full = rng.random((b, h, n, n)) > 0.3
    full[0, 0, 1] = False  # a fully masked query
    return full


# (name, hparams, n): block-aligned, ragged, shorter than one block, causal and bidirectional.
CONFIGS = [
    ("bigbird", dict(block_size=4, num_random_blocks=2), 37),
    ("bigbird", dict(block_size=4, num_random_blocks=2), 32),
    ("bigbird", dict(block_size=3, num_window_blocks=5, num_global_blocks=1), 40),
    ("bigbird", dict(block_size=4, num_global_blocks=0, num_random_blocks=3), 29),
    ("bigbird", dict(block_size=16), 11),  # shorter than one block
    ("bigbird", dict(block_size=2, num_random_blocks=6), 9),  # fewer candidates than r
    ("longformer", dict(window=6, num_global=2), 23),
    ("longformer", dict(window=6, num_global=2, causal=True), 23),
    ("longformer", dict(window=5, num_global=0), 16),
    ("longformer", dict(window=0, num_global=1, causal=True), 9),
    ("longformer", dict(window=40, num_global=3), 11),  # window beyond N
    ("sparse_transformer", dict(pattern="fixed", stride=4, c=2), 23),
    ("sparse_transformer", dict(pattern="fixed", stride=4, c=1, causal=True), 24),
    ("sparse_transformer", dict(pattern="strided", stride=4), 23),
    ("sparse_transformer", dict(pattern="strided", stride=5, causal=True), 27),
    ("sparse_transformer", dict(pattern="fixed", stride=16, c=4), 11),  # shorter than one block
    ("sparse_transformer", dict(pattern="strided", stride=1, causal=True), 7),
]
_IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in hp.items())}-N{N}" for n, hp, N in CONFIGS]
# `make test` (10-minute budget) runs one ragged configuration per pattern; the rest are `slow`.
_FAST = {0, 7, 11, 13}
_TIERED = [
    pytest.param(*c, id=i, marks=() if j in _FAST else pytest.mark.slow)
    for j, (c, i) in enumerate(zip(CONFIGS, _IDS, strict=True))
]
_DENSE_SLOW = [*NAMES, *(pytest.param(f"{n}_dense", marks=pytest.mark.slow) for n in NAMES)]


def _reference(name, hp, params, q, k, v, mask):
    b, n, h, _ = q.shape
    full = (
        None
        if mask is None
        else np.broadcast_to(mask[:, None, None, :] if mask.ndim == 2 else mask, (b, h, n, n))
    )
    if name == "bigbird":
        return ref.bigbird_reference(jax.tree.map(np.asarray, params), q, k, v, full, **hp)
    if name == "longformer":
        return ref.longformer_reference(None, q, k, v, full, **hp)
    return ref.sparse_transformer_reference(None, q, k, v, full, **hp)


@pytest.mark.parametrize("mask_kind", ["none", "key_padding", "head_broadcast", "full_4d"])
@pytest.mark.parametrize("name,hp,n", _TIERED)
def test_blocked_equals_dense_and_the_reference_in_float64(name, hp, n, mask_kind):
    """Blocked and dense forms agree to float64 precision (jitted) and equal the loop reference,
    causal variants included, for N not a multiple of the block and N below one block."""
    q, k, v = _qkv(n=n)
    mask = _mask(mask_kind, 2, 2, n)
    blocked, dense = attention.get(name, **hp), attention.get(f"{name}_dense", **hp)
    with jax.enable_x64(True):
        params = _init(blocked, max_len=n)
        got = jax.jit(blocked.apply)(params, *_f64(q, k, v), mask=mask)
        want = jax.jit(dense.apply)(params, *_f64(q, k, v), mask=mask)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    expected = _reference(name, hp, params, q, k, v, mask)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    if mask_kind == "full_4d":
        np.testing.assert_array_equal(np.asarray(got)[0, 1, 0], 0.0)  # fully masked query


@pytest.mark.parametrize(
    "shape",
    [
        (2, 1, 1, 1),
        (1, 1, 23, 23),
        pytest.param((2, 2, 1, 23), marks=pytest.mark.slow),
        pytest.param((2, 2, 23, 1), marks=pytest.mark.slow),
    ],
    ids=str,
)
@pytest.mark.parametrize(
    "name,hp",
    [
        ("bigbird", dict(block_size=4, num_random_blocks=1)),
        ("longformer", dict(window=4, num_global=2)),
        ("sparse_transformer", dict(pattern="fixed", stride=4, c=1)),
        ("sparse_transformer", dict(pattern="strided", stride=4)),
    ],
)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_every_broadcast_mask_shape_matches_dense(name, hp, shape):
    """Masks broadcast on any axis (per sequence only, shared by the batch, per key and head,
    per query) are read at the right pairs by the blocked forms' per-tile gathers."""
    q, k, v = _qkv(seed=11, n=23)
    mask = np.random.default_rng(12).random(shape) > 0.3
    if shape == (2, 1, 1, 1):
        mask[:] = np.array([True, False]).reshape(shape)  # the second sequence fully masked
    blocked, dense = attention.get(name, **hp), attention.get(f"{name}_dense", **hp)
    with jax.enable_x64(True):
        params = _init(blocked, max_len=23)
        got = jax.jit(blocked.apply)(params, *_f64(q, k, v), mask=mask)
        want = dense.apply(params, *_f64(q, k, v), mask=mask)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    if shape == (2, 1, 1, 1):
        np.testing.assert_array_equal(np.asarray(got)[1], 0.0)


def _pattern_from_gradients(name, hp, n, h=2, params=None):
    """`[H, N, N]` bool: where d out[i, h] / d v[j, h] (the probability p_ij) != 0, read off
    the blocked code."""
    mech = attention.get(name, **hp)
    q, k, v = _qkv(seed=3, b=1, n=n, h=h)
    with jax.enable_x64(True):
        params = _init(mech, h=h, max_len=n) if params is None else params
        q, k, v = _f64(q, k, v)
        # d out / d v: [1, N, H, Dv, 1, N, H, Dv] -> nonzero pattern per head.
        jac = jax.jacrev(lambda vv: mech.apply(params, q, k, vv))(v)
    jac = np.abs(np.asarray(jac))[0, :, :, :, 0].sum(axis=(2, 5))  # [N, H, N, H]
    pattern = np.stack([jac[:, hi, :, hi] for hi in range(h)]) > 0
    assert not any(  # heads never mix
        np.abs(jac[:, a, :, b_]).max() for a in range(h) for b_ in range(h) if a != b_
    )
    return pattern, params


@pytest.mark.parametrize(
    "name,hp,n",
    [
        ("bigbird", dict(block_size=3, num_random_blocks=2), 31),
        ("longformer", dict(window=4, num_global=2), 17),
        ("longformer", dict(window=4, num_global=2, causal=True), 17),
        ("sparse_transformer", dict(pattern="fixed", stride=4, c=2), 18),
        ("sparse_transformer", dict(pattern="strided", stride=4, causal=True), 18),
    ],
)
def test_gradients_are_zero_exactly_outside_the_pattern(name, hp, n):
    """The sparsity pattern is really respected: out_i depends on v_j iff (i, j) is allowed
    (the loop reference's pattern): p_ij > 0 exactly on the pattern, 0 elsewhere."""
    pattern, params = _pattern_from_gradients(name, hp, n)
    if name == "bigbird":
        want = ref.bigbird_pattern(
            np.asarray(params["buffers"]["ranks"]),
            n,
            hp["block_size"],
            hp.get("num_window_blocks", 3),
            hp.get("num_global_blocks", 2),
            hp["num_random_blocks"],
        )
    elif name == "longformer":
        want = ref.longformer_pattern(n, **hp)[None].repeat(2, 0)
    else:
        want = ref.sparse_transformer_pattern(n, **hp)[None].repeat(2, 0)
    np.testing.assert_array_equal(pattern, want)


def test_bigbird_attends_window_global_and_random_blocks_each_once():
    """App. D (ITC): each interior query block sees w + g + r distinct key blocks, its random
    blocks differ between heads and are the same at every call (frozen at init), and the
    global blocks (first and last) attend to and are attended by everything."""
    bs, n, r = 2, 40, 2
    hp = dict(block_size=bs, num_random_blocks=r)
    pattern, params = _pattern_from_gradients("bigbird", hp, n)
    nb = n // bs
    blocks = pattern[:, ::bs, ::bs]  # [H, nb, nb]
    assert blocks[:, [0, -1], :].all() and blocks[:, :, [0, -1]].all()
    interior = blocks[:, 2:-2].sum(-1)
    np.testing.assert_array_equal(interior, 3 + 2 + r)
    assert (blocks[0] != blocks[1]).any()  # per-head random blocks
    again, _ = _pattern_from_gradients("bigbird", hp, n, params=params)
    np.testing.assert_array_equal(again, pattern)
    other = attention.get("bigbird", **hp).init(
        jax.random.key(7), num_heads=2, head_dim=4, max_len=n
    )
    assert (np.asarray(other["buffers"]["ranks"]) != np.asarray(params["buffers"]["ranks"])).any()
    assert nb == blocks.shape[1]


def test_bigbird_random_blocks_are_uniform_over_the_candidates():
    """The priorities give each candidate block the same chance (random blocks are uniform,
    Sec. 2): frequencies over many draws within 5 sigma of r / #candidates."""
    nb, r, draws = 12, 3, 400
    mech = attention.get("bigbird", block_size=1, num_random_blocks=r)
    ranks = mech.init(jax.random.key(0), num_heads=draws, head_dim=1, max_len=nb)["buffers"]
    ids, ok = sparse_patterns.random_blocks(
        ranks["ranks"], nb, num_window_blocks=3, num_global_blocks=2, r=r
    )
    assert np.asarray(ok).all()
    x = 6  # candidates: blocks 1..4 and 8..10 (not 5..7, not 0 or 11)
    counts = np.bincount(np.asarray(ids[:, x]).ravel(), minlength=nb)
    cand = [1, 2, 3, 4, 8, 9, 10]
    assert counts[[0, 5, 6, 7, 11]].sum() == 0
    p = r / len(cand)
    sigma = np.sqrt(draws * p * (1 - p))
    assert np.all(np.abs(counts[cand] - draws * p) < 5 * sigma), counts


@pytest.mark.parametrize(
    "name,hp",
    [
        ("bigbird", dict(block_size=4)),  # one block: everything
        ("bigbird", dict(block_size=2, num_window_blocks=7, num_global_blocks=0)),
        ("longformer", dict(window=20, num_global=0)),
        ("longformer", dict(window=0, num_global=9)),  # every token global
        ("sparse_transformer", dict(pattern="fixed", stride=16, c=1)),  # one block
        ("sparse_transformer", dict(pattern="strided", stride=9)),  # band covers everything
    ],
)
def test_pattern_covering_every_pair_is_softmax_attention(name, hp):
    """Exactness limit: where the pattern reaches every key, the method is softmax attention."""
    q, k, v = _qkv(seed=4, n=7)
    pad = np.ones((2, 7), bool)
    pad[1, 5:] = False
    mech = attention.get(name, **hp)
    with jax.enable_x64(True):
        params = _init(mech, max_len=7)
        got = jax.jit(mech.apply)(params, *_f64(q, k, v), mask=pad)
        want = attention.get("softmax").apply({}, *_f64(q, k, v), mask=pad)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_longformer_global_tokens_see_everything_and_equal_softmax_rows():
    """Sec. 3.1: a global token attends to the whole sequence (its row is softmax attention)."""
    q, k, v = _qkv(seed=5, n=21)
    mech = attention.get("longformer", window=2, num_global=2)
    with jax.enable_x64(True):
        got = mech.apply({}, *_f64(q, k, v))
        full = attention.get("softmax").apply({}, *_f64(q, k, v))
    np.testing.assert_allclose(got[:, :2], full[:, :2], rtol=1e-12, atol=1e-13)
    assert np.abs(np.asarray(got[:, 2:] - full[:, 2:])).max() > 1e-3


@pytest.mark.parametrize("pattern", ["strided", "fixed"])
def test_sparse_transformer_connects_every_pair_in_two_steps(pattern):
    """Sec. 4.2-4.3: with p = 2 factorised heads every position i attends to every j <= i
    through a path of at most two steps (S = A o A is the full causal pattern), read off the
    gradients of the causal blocked code; the bidirectional sets connect every pair (N a
    multiple of l: a last, partial block has no summary cell for the others to reach)."""
    n, stride = 20, 4
    for causal in (True, False):
        hp = dict(pattern=pattern, stride=stride, c=1, causal=causal)
        a, _ = _pattern_from_gradients("sparse_transformer", hp, n)
        a = a[0].astype(int)
        two = (a @ a) > 0
        want = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
        np.testing.assert_array_equal(two, want)
        assert a.sum() < 0.7 * want.sum()  # while one step is sparse


@pytest.mark.parametrize(
    "name,hp",
    [
        ("longformer", dict(window=6, num_global=2, causal=True)),
        ("sparse_transformer", dict(pattern="strided", stride=3, causal=True)),
        ("sparse_transformer", dict(pattern="fixed", stride=4, c=2, causal=True)),
    ],
)
@pytest.mark.parametrize("form", ["", "_dense"])
def test_causal_output_is_independent_of_later_inputs(name, hp, form):
    """Causal variants: out_i does not change when q, k, v after i change."""
    n, i = 19, 9
    q, k, v = _qkv(seed=6, n=n)
    q2, k2, v2 = (x.copy() for x in (q, k, v))
    rng = np.random.default_rng(7)
    for x in (q2, k2, v2):
        x[:, i + 1 :] = rng.normal(size=x[:, i + 1 :].shape) * 3
    mech = attention.get(name + form, **hp)
    with jax.enable_x64(True):
        a = mech.apply({}, *_f64(q, k, v))
        b = mech.apply({}, *_f64(q2, k2, v2))
    np.testing.assert_allclose(a[:, : i + 1], b[:, : i + 1], rtol=1e-13, atol=1e-14)
    assert np.abs(np.asarray(a[:, i + 1 :] - b[:, i + 1 :])).max() > 1e-3


@pytest.mark.parametrize("name,hp,n", _TIERED[::3])
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_float32_matches_float64(name, hp, n):
    q, k, v = _qkv(seed=8, n=n)
    mask = _mask("key_padding", 2, 2, n)
    mech = attention.get(name, **hp)
    params = _init(mech, max_len=n)
    got = jax.jit(mech.apply)(params, *(jnp.asarray(x, jnp.float32) for x in (q, k, v)), mask=mask)
    assert got.dtype == jnp.float32
    with jax.enable_x64(True), reference_precision():
        want = mech.apply(params, *_f64(q, k, v), mask=mask)
    assert_close(got, np.asarray(want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", _DENSE_SLOW)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_bfloat16_inputs_give_bfloat16_and_jit_equals_eager(name):
    mech = attention.get(name)
    q, k, v = (jnp.asarray(x, jnp.bfloat16) for x in _qkv(seed=9, n=70))
    params = _init(mech, max_len=70)
    out = jax.jit(mech.apply)(params, q, k, v)
    assert out.dtype == jnp.bfloat16 and np.isfinite(np.asarray(out, np.float32)).all()
    eager = mech.apply(params, q, k, v)
    assert_close(out, eager, what="jit vs eager")


@pytest.mark.parametrize("name", _DENSE_SLOW)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_train_mode_dropout_is_deterministic_per_key_and_needs_a_key(name):
    mech = attention.get(name, dropout_rate=0.3)
    q, k, v = _qkv(seed=10, n=20)
    params = _init(mech, max_len=20)
    with jax.enable_x64(True):
        q, k, v = _f64(q, k, v)
        train = jax.jit(functools.partial(mech.apply, train=True))
        a = train(params, q, k, v, key=jax.random.key(0))
        np.testing.assert_array_equal(a, train(params, q, k, v, key=jax.random.key(0)))
        assert not np.allclose(a, train(params, q, k, v, key=jax.random.key(1)))
        evaluation = mech.apply(params, q, k, v)
        np.testing.assert_array_equal(
            evaluation, mech.apply(params, q, k, v, key=jax.random.key(1))
        )
        with pytest.raises(ValueError, match="needs `key`"):
            mech.apply(params, q, k, v, train=True)


@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_bigbird_sequence_above_max_len_is_refused_and_shorter_ones_work():
    mech = attention.get("bigbird", block_size=4)
    params = _init(mech, max_len=20)  # 5 blocks
    q, k, v = _qkv(n=21)
    with pytest.raises(ValueError, match=r"N=21 .*max_len >= 21"):
        mech.apply(params, q, k, v)
    with pytest.raises(ValueError, match=r"N=21"):
        attention.get("bigbird_dense", block_size=4).apply(params, q, k, v)
    q, k, v = _qkv(n=10)  # 3 of the 5 blocks drawn for
    with jax.enable_x64(True):
        got = mech.apply(params, *_f64(q, k, v))
    want = _reference("bigbird", dict(block_size=4), params, q, k, v, None)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="max_len"):
        mech.init(jax.random.key(0), num_heads=2, head_dim=4)
    with pytest.raises(ValueError, match="buffers"):
        mech.apply({}, q, k, v)
    with pytest.raises(ValueError, match="H=3"):
        mech.apply(params, *(np.concatenate([x, x[:, :, :1]], 2) for x in (q, k, v)))


@pytest.mark.parametrize(
    "name,hparams,match",
    [
        ("bigbird", dict(block_size=0), "block_size=0"),
        ("bigbird", dict(num_window_blocks=2), "num_window_blocks=2 must be odd"),
        ("bigbird", dict(num_window_blocks=0), "num_window_blocks=0"),
        ("bigbird", dict(num_global_blocks=-1), "num_global_blocks=-1"),
        ("bigbird", dict(num_random_blocks=1.5), "num_random_blocks=1.5"),
        ("longformer", dict(window=-2), "window=-2"),
        ("longformer", dict(num_global=-1), "num_global=-1"),
        ("longformer", dict(causal="yes"), "causal='yes'"),
        ("sparse_transformer", dict(pattern="axial"), "pattern='axial'"),
        ("sparse_transformer", dict(stride=0), "stride=0"),
        ("sparse_transformer", dict(stride=8, c=9), "c=9 must be at most stride=8"),
        ("sparse_transformer", dict(c=0), "c=0"),
    ],
)
@pytest.mark.parametrize("form", ["", "_dense"])
def test_bad_hyper_parameters_are_named(name, hparams, match, form):
    name = name + form
    problems = attention.check(name, hparams, num_tokens=64)
    assert len(problems) == 1 and match in problems[0] and problems[0].startswith(name)
    mech = attention.get(name, **{"block_size": 4, **hparams} if "bigbird" in name else hparams)
    q, k, v = _qkv(n=8)
    params = {"buffers": {"ranks": jnp.zeros((2, 8, 8), jnp.int32)}}
    with pytest.raises(ValueError, match=match.split(" ")[0].replace("(", r"\(")):
        mech.apply(params, q, k, v)


def test_strided_pattern_ignores_c_and_defaults_pass_the_check():
    for name in (*NAMES, *(f"{n}_dense" for n in NAMES)):
        assert attention.check(name, {}, num_tokens=4001) == []
        assert attention.check(name, {}, num_tokens=3) == []
    assert (
        attention.check("sparse_transformer", dict(pattern="strided", stride=4), num_tokens=8) == []
    )


def test_self_attention_only_and_bad_masks_are_named():
    q, k, v = _qkv(n=8)
    mech = attention.get("longformer", window=2)
    with pytest.raises(ValueError, match="N == M"):
        mech.apply({}, q, k[:, :6], v[:, :6])
    with pytest.raises(ValueError, match="does not broadcast"):
        mech.apply({}, q, k, v, mask=np.ones((2, 2, 8, 7), bool))
    with pytest.raises(ValueError, match="boolean"):
        mech.apply({}, q, k, v, mask=np.ones((2, 8)))


def _largest(fn, *args):
    """Largest intermediate (forward and backward) of fn, as (size, shape)."""
    loss = lambda q, k, v: fn(q, k, v).sum()
    best = (0, ())
    for f in (fn, jax.grad(loss, (0, 1, 2))):
        for shape, size in _intermediate_sizes(jax.make_jaxpr(f)(*args).jaxpr):
            best = max(best, (size, shape))
    return best


@pytest.mark.parametrize(
    "name,hp",
    [
        ("bigbird", {}),
        ("longformer", dict(window=128)),
        ("sparse_transformer", dict(pattern="strided")),
        ("sparse_transformer", dict(pattern="fixed")),
        ("sparse_transformer", dict(pattern="fixed", causal=True)),
    ],
)
def test_blocked_forms_build_no_n_by_n_array(name, hp):
    """Traced at N = 2048 and 4096 (jaxpr only, nothing runs): no intermediate has two axes of
    N, BigBird's and Longformer's largest grows linearly, the Sparse Transformer's stays well
    below N^2 (its cost is N (3l + N/l) strided, N (l + cN/l) fixed); the dense form does build
    the N x N scores (the test can fail)."""
    b, h, d = 1, 2, 16
    sizes = {}
    for n in (2048, 4096):
        mech = attention.get(name, **hp)
        params = jax.eval_shape(lambda m=mech, n=n: _init(m, h=h, d=d, max_len=n))
        x = jax.ShapeDtypeStruct((b, n, h, d), jnp.float32)
        fn = functools.partial(mech.apply, params)
        size, shape = _largest(fn, x, x, x)
        jaxpr = jax.make_jaxpr(fn)(x, x, x).jaxpr
        assert all(s.count(n) < 2 for s, _ in _intermediate_sizes(jaxpr)), name
        assert size < b * h * n * n / 3, (size, shape)
        sizes[n] = size
    if name in ("bigbird", "longformer"):
        assert sizes[4096] <= 2.05 * sizes[2048], sizes
    dense = attention.get(f"{name}_dense", **hp)
    params = jax.eval_shape(lambda: _init(dense, h=h, d=d, max_len=2048))
    x = jax.ShapeDtypeStruct((b, 2048, h, d), jnp.float32)
    shapes = [
        s
        for s, _ in _intermediate_sizes(
            jax.make_jaxpr(functools.partial(dense.apply, params))(x, x, x).jaxpr
        )
    ]
    assert any(s.count(2048) >= 2 for s in shapes)


# (name, hparams): matmul-dominated sizes (head_dim 64), as tests/attnbench/nn/test_flops.py.
FLOP_CASES = [
    ("bigbird", dict(block_size=32)),
    ("bigbird_dense", dict(block_size=32)),
    ("longformer", dict(window=64, num_global=1)),
    ("longformer", dict(window=64, num_global=1, causal=True)),
    ("longformer_dense", dict(window=64)),
    ("sparse_transformer", dict(pattern="fixed", stride=64, c=16)),
    ("sparse_transformer", dict(pattern="strided", stride=32, causal=True)),
    ("sparse_transformer_dense", {}),
]


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name,hparams", FLOP_CASES)
@pytest.mark.slow  # precision, dropout, FLOPs: `make test-slow` (test_table.py is fast)
def test_flop_formula_matches_the_compiled_cost(name, hparams, masked):
    """The registered formula counts what the code computes: its matmul FLOPs are within XLA's
    compiled count, which it matches within the elementwise estimate plus 0.5% (the tolerance
    of tests/attnbench/nn/test_flops.py)."""
    n, h, d = 250, 4, 64
    mech = attention.get(name, **hparams)
    params = jax.eval_shape(lambda: _init(mech, h=h, d=d, max_len=n))
    x = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
    mask = jax.ShapeDtypeStruct((1, n), jnp.bool_) if masked else None

    def forward(params, q, k, v, mask):
        return mech.apply(params, q, k, v, mask=mask)

    analysis = jax.jit(forward).lower(params, x, x, x, mask).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    compiled = float(analysis.get("flops", 0.0))
    call = attention.cost.Call(n=n, m=n, h=h, dk=d, dv=d, d_model=h * d, masked=masked)
    matmul, elementwise = mech.flops(call)
    analytic = matmul + elementwise
    assert elementwise <= 0.1 * analytic
    assert matmul <= compiled
    assert abs(compiled - analytic) <= elementwise + 0.005 * compiled, (analytic, compiled)
