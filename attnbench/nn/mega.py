"""MEGA as an LRA backbone: Ma et al. 2023, "Mega: Moving Average Equipped Gated Attention"
(arXiv 2209.10655), Sec. 3: the Mega block (multi-dimensional damped EMA + single-head gated
attention) followed by the normalised feed-forward network, `num_layers` times.

How it plugs in: registered as the backbone "mega" (`attnbench.nn.backbones`); an LRA config
selects it with `config.model.encoder = "mega"`. It is called as every backbone,
`encoder(x, *, mask, train, key, **inputs)` on embedded `[B, N, dim]` inputs, mask `[B, N]`
True = real token; `inputs` (per-call attention inputs) are ignored, and `config.attention`
is not used: MEGA's attention is its own (below), not a registered mechanism.

Config fields read (`config.model`; `mega_*` are optional, `model_cfg.get(field, default)`):
  num_layers           Mega blocks (each = Mega layer + NFFN)
  dim                  model width d
  qkv_dim              default of `mega_z_dim`
  mlp_dim              NFFN hidden width (official `encoder_ffn_embed_dim`); default of
                       `mega_hidden_dim`
  dropout              dropout of the EMA output, of the attention-branch output, of the NFFN
                       output and of the embedded input (fairseq `--dropout`)
  dtype                compute dtype (`attnbench.nn.layers.compute_dtype`)
  positions            ignored: MEGA has no absolute positions (its order information is the
                       EMA and the relative-position bias); the official LRA encoder adds none
  mega_z_dim           width z of the shared representation Z / queries / keys (qkv_dim)
  mega_hidden_dim      width v of the values and of the reset gate (mlp_dim)
  mega_ndim            EMA expansion dimension h (16)
  mega_chunk_size      Mega-chunk: attention within chunks of this many tokens; -1 = full (-1)
  mega_attention       "softmax" | "laplace" attention function ("softmax")
  mega_rel_pos         "simple" | "rotary" relative-position bias ("simple")
  mega_norm            "layernorm" | "scalenorm" | "batchnorm" ("layernorm")
  mega_prenorm         True: pre-norm (and a final norm); False: post-norm (False)
  mega_truncation      EMA kernel length cap; 0 = the whole sequence (0)
  mega_attention_dropout  dropout on the attention weights (0.0)
  mega_hidden_dropout  dropout on the values and on the NFFN hidden layer (fairseq
                       `--act-dropout`, 0.0)

The block (paper Sec. 3; the formulas as facebookresearch/mega computes them, fairseq/modules/
exponential_moving_average.py, moving_average_gated_attention.py,
normalized_feedforward_network.py, mega_sentence_encoder_layer.py, models/lra/
mega_lra_encoder.py; read for facts, nothing copied):

  EMA (Sec. 3.1, Eq. 2-3), per channel c and expansion n, in both directions (the LRA encoder
  layers are bidirectional: separate parameters for the backward pass):
      u_t = beta_{c,n} x_{t,c};  h_t = alpha_{c,n} u_t + (1 - alpha_{c,n} delta_{c,n}) h_{t-1};
      y_{t,c} = sqrt(1/h) sum_n eta_{c,n} h_{t,n}
  computed as a convolution with its closed-form kernel
      K_{c,j} = sqrt(1/h) sum_n eta_{c,n} alpha_{c,n} beta_{c,n} (1 - alpha_{c,n} delta_{c,n})^j
  through the FFT; y = K_fwd * x (causal) + K_bwd * x (anti-causal, both include lag 0);
  alpha = sigmoid(.), delta = sigmoid(.) of unconstrained parameters.
  X' = silu(EMA(X) + omega * X)                          (code: the EMA layer's output)
  Z = silu(X' W_z + b_z);  gamma_r = silu(X' W_r + b_r)   (Eq. 6, 12: shared rep., reset gate)
  phi = sigmoid(X' W_u + b_u);  H_x = X' W_h + b_h       (Eq. 13, 14: update gate, X' term)
  V = silu(X W_v + b_v)                                   (Eq. 7)
  Q = kappa_q * Z + mu_q;  K = kappa_k * Z + mu_k        (Eq. 8-9)
  softmax: O = softmax(Q K^T / sqrt(z) + b_rel) V       (Eq. 10)
  laplace: O = f(Q K^T / n_real + b_rel) V, f(x) = (1 + erf((x - mu) / (sigma sqrt 2))) / 2,
           mu = sqrt(1/2), sigma = sqrt(1/(4 pi))        (Sec. 3.2 and App.; element-wise)
  H = silu(H_x + (gamma_r * O) U_h + b_h)                (Eq. 14)
  Y = phi * H + (1 - phi) * X                            (Eq. 15)
  NFFN (Sec. 3.4): Y' = silu(Y W_1 + b_1) W_2 + b_2 + Y
  each with the norm before (prenorm) or after the residual (postnorm); prenorm adds a final
  norm after the last block (the official encoder's `final_norm`).
  Relative bias: simple b_rel[i, j] = w[(j - i) + M - 1] (M = max_len, or the chunk size);
  rotary: b_rel[i, j] = RoPE_i(a) . RoPE_j(b) for learned vectors a, b in R^z.
  Mega-chunk (Sec. 3.5): Q, K, V split into chunks of `mega_chunk_size` tokens, attention
  within each (the bias is that of a chunk-length sequence); the EMA still spans the sequence.

Initialisation (official code): projections W_v, W_{z,r,u,h}, U_h, W_1, W_2 normal(0.02),
biases 0; kappa normal(0.02), mu 0; EMA alpha, delta logits normal(0.2), beta normal(0.02) +
(1, -1, 1, -1, ...), eta normal(1), omega normal(1); simple bias normal(0.02); rotary a, b
normal(0.02); norms: scale 1, bias 0 (eps 1e-5, as fairseq's SequenceNorm).

Padding: padded tokens are zeroed before the EMA convolution (they reach no real token through
it, in either direction), are masked out of the attention (softmax: -inf-like scores;
laplace: weights zeroed and the length normaliser counts real keys only), and batch norm takes
its statistics over real tokens only. Token-wise parts (norms, gates, FFN) do not mix tokens.

Deliberate differences from the paper / official code, and why:
  * The EMA output nonlinearity and residual, silu(EMA(X) + omega * X), are the official code's
    (the paper's Eq. 5 writes X' = EMA(X)); we follow the code that produced the LRA numbers.
  * Batch norm uses the statistics of the current batch's real tokens in training AND at
    evaluation: this trainer keeps no running statistics (parameters are the only state; see
    graphs/backbones/gps.py). The official PyTorch BatchNorm1d uses running averages at
    evaluation and includes padded positions in its statistics (LRA Image/Pathfinder, where
    the official configs use batch norm, have no padding).
  * A sequence longer than the chunk size that is not a multiple of it is padded inside the
    attention with masked tokens (the official LRA encoder pads the token ids for text and
    refuses images of such lengths); results on the real tokens are the same.
  * A fully padded chunk (all keys masked) falls back to unmasked scores under softmax, as the
    official code does; only padded queries see it.
  * The EMA convolution runs in float32 at least (as the official code's `.float()` FFT); the
    compute dtype elsewhere.
  * No FLOP formula is registered (FLOP counts report this backbone as unknown).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = [
    "NORMS",
    "ATTENTIONS",
    "REL_POS",
    "laplace",
    "ema_kernel",
    "ema_conv",
    "MultiDimEMA",
    "SimpleRelPos",
    "RotaryRelPos",
    "MegaNorm",
    "gated_attention",
    "MegaLayer",
    "NormalizedFFN",
    "MegaBlock",
    "MegaEncoder",
    "mega",
]

NORMS = ("layernorm", "scalenorm", "batchnorm")
ATTENTIONS = ("softmax", "laplace")
REL_POS = ("simple", "rotary")
_EPS = 1e-5  # fairseq SequenceNorm's eps, for every norm type
LAPLACE_MU = math.sqrt(0.5)
LAPLACE_SIGMA = math.sqrt(0.25 / math.pi)


def _normal(std):
    return nnx.initializers.normal(std)


def _linear(din, dout, dtype, rngs):
    """Linear with the official MEGA init: weight normal(0.02), bias 0."""
    return nnx.Linear(
        din,
        dout,
        kernel_init=_normal(0.02),
        bias_init=nnx.initializers.zeros,
        dtype=dtype,
        rngs=rngs,
    )


def _wide(dtype):
    """At least float32 (the EMA's FFT and the attention statistics)."""
    return jnp.promote_types(dtype, jnp.float32)


def laplace(x, mu: float = LAPLACE_MU, sigma: float = LAPLACE_SIGMA):
    """The Laplace attention function of Mega (Sec. 3.2): 0.5 (1 + erf((x - mu)/(sigma sqrt 2)))."""
    return 0.5 * (1.0 + jax.scipy.special.erf((x - mu) / (sigma * math.sqrt(2.0))))


# ------------------------------------------------------------------------------------------ EMA


def ema_kernel(alpha_logit, delta_logit, beta, eta, length: int, dtype):
    """Closed-form EMA kernel `[C, length]`: K[c, j] = sqrt(1/h) sum_n eta alpha beta q^j,
    q = 1 - alpha delta (parameters `[C, h]`, alpha = sigmoid(alpha_logit), delta likewise)."""
    alpha = jax.nn.sigmoid(alpha_logit.astype(dtype))
    delta = jax.nn.sigmoid(delta_logit.astype(dtype))
    q = 1.0 - alpha * delta
    ndim = alpha.shape[-1]
    j = jnp.arange(length, dtype=dtype)
    powers = jnp.exp(j[None, None, :] * jnp.log(q)[..., None])  # [C, h, L]
    weight = eta.astype(dtype) * alpha * beta.astype(dtype) * math.sqrt(1.0 / ndim)
    return jnp.einsum("cn,cnl->cl", weight, powers)


def ema_conv(x, k_fwd, k_bwd):
    """Bidirectional convolution through the FFT: `x [B, N, C]`, kernels `[C, L]` (L <= N) ->
    y[t] = sum_j k_fwd[j] x[t - j] + sum_j k_bwd[j] x[t + j]."""
    n = x.shape[1]
    size = n + k_fwd.shape[-1]  # no wrap-around into the first n outputs

    def causal(x, k):
        xf = jnp.fft.rfft(x, n=size, axis=1)
        kf = jnp.fft.rfft(k.T, n=size, axis=0)  # [F, C]
        return jnp.fft.irfft(xf * kf[None], n=size, axis=1)[:, :n]

    return causal(x, k_fwd) + jnp.flip(causal(jnp.flip(x, 1), k_bwd), 1)


class MultiDimEMA(nnx.Module):
    """The bidirectional multi-dimensional damped EMA with its output residual and SiLU:
    `x [B, N, d]` -> silu(EMA(x masked) + omega * x)."""

    def __init__(self, dim: int, ndim: int, *, truncation: int | None = None, rngs: nnx.Rngs):
        channels = 2 * dim  # forward and backward
        self.dim, self.ndim, self.truncation = dim, ndim, truncation
        self.alpha = nnx.Param(_normal(0.2)(rngs.params(), (channels, ndim), jnp.float32))
        self.delta = nnx.Param(_normal(0.2)(rngs.params(), (channels, ndim), jnp.float32))
        sign = jnp.where(jnp.arange(ndim) % 2 == 0, 1.0, -1.0).astype(jnp.float32)
        self.beta = nnx.Param(_normal(0.02)(rngs.params(), (channels, ndim), jnp.float32) + sign)
        self.eta = nnx.Param(_normal(1.0)(rngs.params(), (channels, ndim), jnp.float32))
        self.omega = nnx.Param(_normal(1.0)(rngs.params(), (dim,), jnp.float32))

    def kernel(self, length: int, dtype):
        """`[2d, L]`: rows :d the forward kernel, d: the backward one."""
        return ema_kernel(
            self.alpha[...], self.delta[...], self.beta[...], self.eta[...], length, dtype
        )

    def __call__(self, x, mask=None):
        dtype = _wide(x.dtype)
        n = x.shape[1]
        length = n if not self.truncation else min(self.truncation, n)
        k = self.kernel(length, dtype)
        xm = x if mask is None else jnp.where(mask[..., None], x, 0)
        y = ema_conv(xm.astype(dtype), k[: self.dim], k[self.dim :])
        return jax.nn.silu(y + self.omega[...].astype(dtype) * x.astype(dtype)).astype(x.dtype)


# ----------------------------------------------------------------------------- position biases


class SimpleRelPos(nnx.Module):
    """b[i, j] = w[(j - i) + M - 1], one learned scalar per offset, for up to M tokens."""

    def __init__(self, max_positions: int, *, rngs: nnx.Rngs):
        self.max_positions = max_positions
        self.weight = nnx.Param(_normal(0.02)(rngs.params(), (2 * max_positions - 1,), jnp.float32))

    def __call__(self, n: int):
        if n > self.max_positions:
            raise ValueError(f"sequence length {n} exceeds max positions {self.max_positions}")
        idx = jnp.arange(n)[None, :] - jnp.arange(n)[:, None] + self.max_positions - 1
        return self.weight[...][idx]


def _rotate(x, positions):
    """RoPE of `x [z]` at `positions`: halves (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
    half = x.shape[-1] // 2
    freq = jnp.exp(jnp.arange(half, dtype=jnp.float32) * -(math.log(10000.0) / half))
    angle = positions[:, None].astype(jnp.float32) * freq[None]
    sin, cos = jnp.sin(angle).astype(x.dtype), jnp.cos(angle).astype(x.dtype)
    x1, x2 = x[:half], x[half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


class RotaryRelPos(nnx.Module):
    """b[i, j] = RoPE_i(a) . RoPE_j(b), learned a, b in R^z (a function of j - i only)."""

    def __init__(self, zdim: int, *, rngs: nnx.Rngs):
        if zdim % 2:
            raise ValueError(f"rotary relative positions need an even z dim; got {zdim}")
        self.a = nnx.Param(_normal(0.02)(rngs.params(), (zdim,), jnp.float32))
        self.b = nnx.Param(_normal(0.02)(rngs.params(), (zdim,), jnp.float32))

    def __call__(self, n: int):
        pos = jnp.arange(n)
        return _rotate(self.a[...], pos) @ _rotate(self.b[...], pos).T


# ----------------------------------------------------------------------------------------- norms


class MegaNorm(nnx.Module):
    """fairseq SequenceNorm: layernorm, scalenorm (x g / sqrt(mean x^2 + eps), one scalar g)
    or batchnorm (per channel, statistics over the batch's real tokens; see the module
    docstring for why there are no running statistics). eps 1e-5."""

    def __init__(self, kind: str, dim: int, *, dtype, rngs: nnx.Rngs):
        if kind not in NORMS:
            raise ValueError(f"unknown MEGA norm {kind!r}; known: {', '.join(NORMS)}")
        self.kind = kind
        self.num_features = dim
        if kind == "scalenorm":
            self.scale = nnx.Param(jnp.ones((), jnp.float32))
        else:
            self.scale = nnx.Param(jnp.ones((dim,), jnp.float32))
            self.bias = nnx.Param(jnp.zeros((dim,), jnp.float32))
        self.dtype = dtype

    def __call__(self, x, mask=None):
        dt = _wide(x.dtype)
        h = x.astype(dt)
        if self.kind == "scalenorm":
            y = (
                h
                * self.scale[...].astype(dt)
                * jax.lax.rsqrt(jnp.mean(h * h, axis=-1, keepdims=True) + _EPS)
            )
            return y.astype(x.dtype)
        if self.kind == "layernorm":
            mean = h.mean(-1, keepdims=True)
            var = ((h - mean) ** 2).mean(-1, keepdims=True)
        else:  # batchnorm over (batch, real tokens)
            w = jnp.ones(h.shape[:2], dt) if mask is None else mask.astype(dt)
            count = jnp.maximum(w.sum(), 1.0)
            mean = jnp.einsum("bnd,bn->d", h, w) / count
            var = jnp.einsum("bnd,bn->d", (h - mean) ** 2, w) / count
        y = (h - mean) * jax.lax.rsqrt(var + _EPS)
        return (y * self.scale[...].astype(dt) + self.bias[...].astype(dt)).astype(x.dtype)


# ------------------------------------------------------------------------------------ attention


def gated_attention(q, k, v, mask, bias_fn, *, chunk_size: int, activation: str):
    """Single-head attention of Mega, optionally within chunks.

    q, k `[B, N, z]`, v `[B, N, e]`, mask `[B, N]` (True = real) or None, `bias_fn(c)` the
    `[c, c]` relative bias of a c-token sequence. Returns the output `[B, N, e]` (float32 at
    least) and the weights `[B, chunks, c, c]` (the sequence padded to whole chunks)."""
    b, n, z = q.shape
    dt = _wide(q.dtype)
    q, k, v = q.astype(dt), k.astype(dt), v.astype(dt)
    if mask is None:
        mask = jnp.ones((b, n), bool)
    c = n if chunk_size <= 0 or n <= chunk_size else chunk_size
    pad = -n % c
    inside = jnp.arange(n + pad) < n  # tokens of the sequence, not of the padding to chunks
    if pad:
        widths = ((0, 0), (0, pad), (0, 0))
        q, k, v = jnp.pad(q, widths), jnp.pad(k, widths), jnp.pad(v, widths)
        mask = jnp.pad(mask, ((0, 0), (0, pad)))
    chunks = (n + pad) // c
    q = q.reshape(b, chunks, c, z)
    k = k.reshape(b, chunks, c, z)
    v = v.reshape(b, chunks, c, v.shape[-1])
    m = mask.reshape(b, chunks, 1, c)
    inside = inside.reshape(1, chunks, 1, c)
    bias = bias_fn(c).astype(dt)
    scores = jnp.einsum("bkiz,bkjz->bkij", q, k)
    if activation == "softmax":
        scores = scores / math.sqrt(z) + bias
        any_real = m.any(-1, keepdims=True)
        # a fully padded chunk is left unmasked (official code), over the sequence's tokens
        keep = m | (~any_real & inside)
        scores = jnp.where(keep, scores, jnp.finfo(dt).min)
        weights = jax.nn.softmax(scores, axis=-1)
    elif activation == "laplace":
        lengths = jnp.maximum(m.sum(-1, keepdims=True), 1).astype(dt)
        weights = laplace(scores / lengths + bias) * m
    else:
        raise ValueError(f"unknown MEGA attention {activation!r}; known: {', '.join(ATTENTIONS)}")
    out = jnp.einsum("bkij,bkje->bkie", weights, v).reshape(b, chunks * c, -1)
    return out[:, :n], weights


# ---------------------------------------------------------------------------------------- layers


class MegaLayer(nnx.Module):
    """The Mega layer (EMA + gated attention + update-gate residual), pre- or post-norm."""

    def __init__(
        self,
        dim: int,
        zdim: int,
        hdim: int,
        ndim: int,
        *,
        max_len: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        hidden_dropout: float = 0.0,
        chunk_size: int = -1,
        attention: str = "softmax",
        rel_pos: str = "simple",
        norm: str = "layernorm",
        prenorm: bool = False,
        truncation: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if attention not in ATTENTIONS:
            raise ValueError(
                f"unknown MEGA attention {attention!r}; known: {', '.join(ATTENTIONS)}"
            )
        if rel_pos not in REL_POS:
            raise ValueError(f"unknown MEGA rel_pos {rel_pos!r}; known: {', '.join(REL_POS)}")
        self.dim, self.zdim, self.hdim = dim, zdim, hdim
        self.attention, self.chunk_size, self.prenorm = attention, chunk_size, prenorm
        self.dropout, self.attention_dropout = dropout, attention_dropout
        self.hidden_dropout = hidden_dropout
        self.norm = MegaNorm(norm, dim, dtype=dtype, rngs=rngs)
        self.ema = MultiDimEMA(dim, ndim, truncation=truncation, rngs=rngs)
        self.v_proj = _linear(dim, hdim, dtype, rngs)
        self.mx_proj = _linear(dim, dim + zdim + hdim + dim, dtype, rngs)  # u, z, r, h_x
        self.h_proj = _linear(hdim, dim, dtype, rngs)
        self.qk_scale = nnx.Param(_normal(0.02)(rngs.params(), (2, zdim), jnp.float32))
        self.qk_offset = nnx.Param(jnp.zeros((2, zdim), jnp.float32))
        positions = max_len if chunk_size <= 0 else min(chunk_size, max_len)
        if rel_pos == "simple":
            self.rel_pos = SimpleRelPos(positions, rngs=rngs)
        else:
            self.rel_pos = RotaryRelPos(zdim, rngs=rngs)
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        k_mx, k_v, k_att, k_h = layers.split_keys(key, 4)
        residual = x
        if self.prenorm:
            x = self.norm(x, mask)
        v = jax.nn.silu(self.v_proj(x))
        mx = layers.dropout(self.ema(x, mask), self.dropout, k_mx, train)
        base = self.mx_proj(mx)
        d, z = self.dim, self.zdim
        u = jax.nn.sigmoid(base[..., :d])
        zr = jax.nn.silu(base[..., d : d + z + self.hdim])
        zz, r = zr[..., :z], zr[..., z:]
        hx = base[..., d + z + self.hdim :]
        scale, offset = self.qk_scale[...].astype(zz.dtype), self.qk_offset[...].astype(zz.dtype)
        q = zz * scale[0] + offset[0]
        k = zz * scale[1] + offset[1]
        v = layers.dropout(v, self.hidden_dropout, k_v, train)
        if train and self.attention_dropout > 0:
            # dropout on the weights needs them whole: the same computation, weights dropped
            o = self._attend_dropped(q, k, v, mask, k_att)
        else:
            o, _ = gated_attention(
                q,
                k,
                v,
                mask,
                self.rel_pos,
                chunk_size=self.chunk_size,
                activation=self.attention,
            )
        o = o.astype(x.dtype)
        h = jax.nn.silu(hx + self.h_proj(o * r))
        h = layers.dropout(h, self.dropout, k_h, train)
        out = residual + u * (h - residual)
        if not self.prenorm:
            out = self.norm(out, mask)
        return out

    def _attend_dropped(self, q, k, v, mask, key):
        b, n, _ = q.shape
        _, weights = gated_attention(
            q, k, v, mask, self.rel_pos, chunk_size=self.chunk_size, activation=self.attention
        )
        weights = layers.dropout(weights, self.attention_dropout, key, True)
        chunks, c = weights.shape[1], weights.shape[2]
        vv = jnp.pad(v.astype(weights.dtype), ((0, 0), (0, chunks * c - n), (0, 0)))
        vv = vv.reshape(b, chunks, c, -1)
        return jnp.einsum("bkij,bkje->bkie", weights, vv).reshape(b, chunks * c, -1)[:, :n]


class NormalizedFFN(nnx.Module):
    """NFFN (Sec. 3.4): x + Dropout(W_2 Dropout_h(silu(W_1 norm(x)))), norm before (prenorm)
    or after the residual (postnorm)."""

    def __init__(
        self, dim, hidden, *, dropout, hidden_dropout, norm, prenorm, dtype, rngs: nnx.Rngs
    ):
        self.norm = MegaNorm(norm, dim, dtype=dtype, rngs=rngs)
        self.fc1 = _linear(dim, hidden, dtype, rngs)
        self.fc2 = _linear(hidden, dim, dtype, rngs)
        self.dropout, self.hidden_dropout, self.prenorm = dropout, hidden_dropout, prenorm

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        k1, k2 = layers.split_keys(key, 2)
        residual = x
        if self.prenorm:
            x = self.norm(x, mask)
        x = layers.dropout(jax.nn.silu(self.fc1(x)), self.hidden_dropout, k1, train)
        x = layers.dropout(self.fc2(x), self.dropout, k2, train) + residual
        if not self.prenorm:
            x = self.norm(x, mask)
        return x


class MegaBlock(nnx.Module):
    """Mega layer then NFFN (the official MegaSentenceEncoderLayer)."""

    def __init__(self, dim, zdim, hdim, ndim, ffn_dim, *, dtype, rngs, **kw):
        ffn_kw = {k: kw[k] for k in ("dropout", "hidden_dropout", "norm", "prenorm") if k in kw}
        self.mega = MegaLayer(dim, zdim, hdim, ndim, dtype=dtype, rngs=rngs, **kw)
        self.nffn = NormalizedFFN(
            dim,
            ffn_dim,
            dropout=ffn_kw.get("dropout", 0.0),
            hidden_dropout=ffn_kw.get("hidden_dropout", 0.0),
            norm=ffn_kw.get("norm", "layernorm"),
            prenorm=ffn_kw.get("prenorm", False),
            dtype=dtype,
            rngs=rngs,
        )

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        k1, k2 = layers.split_keys(key, 2)
        x = self.mega(x, mask=mask, train=train, key=k1)
        return self.nffn(x, mask=mask, train=train, key=k2)


class MegaEncoder(nnx.Module):
    """Embedding dropout, padded tokens zeroed, `num_layers` Mega blocks, a final norm when
    prenorm, padded tokens zeroed again (the official MegaLRAEncoder after its embedding).
    The residual stream is in the compute `dtype`."""

    def __init__(
        self,
        *,
        num_layers: int,
        dim: int,
        zdim: int,
        hdim: int,
        ndim: int,
        ffn_dim: int,
        max_len: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        hidden_dropout: float = 0.0,
        chunk_size: int = -1,
        attention: str = "softmax",
        rel_pos: str = "simple",
        norm: str = "layernorm",
        prenorm: bool = False,
        truncation: int | None = None,
        dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        kw = dict(
            max_len=max_len,
            dropout=dropout,
            attention_dropout=attention_dropout,
            hidden_dropout=hidden_dropout,
            chunk_size=chunk_size,
            attention=attention,
            rel_pos=rel_pos,
            norm=norm,
            prenorm=prenorm,
            truncation=truncation,
        )
        self.blocks = layers.block_stack(
            lambda i: MegaBlock(dim, zdim, hdim, ndim, ffn_dim, dtype=dtype, rngs=rngs, **kw),
            num_layers,
        )
        self.final_norm = MegaNorm(norm, dim, dtype=dtype, rngs=rngs) if prenorm else None
        self.rate, self.max_len, self.dtype = dropout, max_len, jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x: `[B, N, dim]` embedded tokens, mask: `[B, N]` True for real tokens; `inputs`
        ignored (MEGA takes no per-call attention inputs)."""
        n = x.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequence length {n} exceeds the encoder's max_len {self.max_len}")
        keys = layers.split_keys(key, len(self.blocks) + 1)
        x = layers.dropout(x, self.rate, keys[0], train).astype(self.dtype)
        if mask is not None:
            x = jnp.where(mask[..., None], x, 0).astype(self.dtype)
        for block, k in zip(self.blocks, keys[1:], strict=True):
            x = block(x, mask=mask, train=train, key=k)
        if self.final_norm is not None:
            x = self.final_norm(x, mask)
        if mask is not None:
            x = jnp.where(mask[..., None], x, 0).astype(self.dtype)
        return x


def _choice(m, field, default, known):
    value = m.get(field, default)
    if value not in known:
        raise errors.ConfigError(
            f"config.model.{field}={value!r}: unknown; known: {', '.join(map(str, known))}"
        )
    return value


@backbones.register("mega")
def mega(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The MEGA encoder from the model section (see the module docstring for the fields);
    `attention_cfg` and `positions` are not used."""
    m = model_cfg
    zdim = int(m.get("mega_z_dim", None) or m.qkv_dim)
    chunk = int(m.get("mega_chunk_size", -1))
    if chunk == 0 or chunk < -1:
        raise errors.ConfigError(f"config.model.mega_chunk_size={chunk}: -1 (full) or positive")
    rel_pos = _choice(m, "mega_rel_pos", "simple", REL_POS)
    if rel_pos == "rotary" and zdim % 2:
        raise errors.ConfigError(f"config.model.mega_rel_pos='rotary' needs an even z dim: {zdim}")
    return MegaEncoder(
        num_layers=m.num_layers,
        dim=m.dim,
        zdim=zdim,
        hdim=int(m.get("mega_hidden_dim", None) or m.mlp_dim),
        ndim=int(m.get("mega_ndim", 16)),
        ffn_dim=m.mlp_dim,
        max_len=max_len,
        dropout=m.dropout,
        attention_dropout=float(m.get("mega_attention_dropout", 0.0)),
        hidden_dropout=float(m.get("mega_hidden_dropout", 0.0)),
        chunk_size=chunk,
        attention=_choice(m, "mega_attention", "softmax", ATTENTIONS),
        rel_pos=rel_pos,
        norm=_choice(m, "mega_norm", "layernorm", NORMS),
        prenorm=bool(m.get("mega_prenorm", False)),
        truncation=int(m.get("mega_truncation", 0)) or None,
        dtype=layers.compute_dtype(m.dtype),
        rngs=rngs,
    )
