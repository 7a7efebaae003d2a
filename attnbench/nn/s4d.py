"""S4D, the diagonal structured state-space model (Gu, Gupta, Goel and Ré 2022, "On the
Parameterization and Initialization of Diagonal State Space Models", arXiv 2206.11893), in the
residual block structure S4 uses on LRA (Gu, Goel and Ré 2022, "Efficiently Modeling Long
Sequences with Structured State Spaces", arXiv 2111.00396, Sec. 4 and App. D), as a backbone:
`config.model.encoder = "s4d"`.

How it plugs in. `lra.models.SequenceEncoder` builds every backbone by name
(`attnbench.nn.backbones.build`); this module registers "s4d" when `lra.models` imports it, so
every LRA task (Retrieval's two towers included) can run it with `config.model.encoder="s4d"`.
The encoder maps embedded tokens `[B, L, H]` to `[B, L, H]`; pooling and heads are the task's.
It is not an attention mechanism: `config.attention` and the per-call attention inputs are
ignored, and so are `num_heads` and `qkv_dim` (`mlp_dim` is the classifier head's only).

The SSM layer (one per residual block), for each of the H channels independently. The continuous
system x'(t) = A x(t) + B u(t), y(t) = C x(t) + D u(t) has a complex diagonal A with N/2 modes
(N, `s4d_state`, is the real state size; the modes come in conjugate pairs, so only one of each
pair is kept and the output is twice the real part, S4D Sec. 3). Zero-order-hold discretisation
with step Delta (S4D Sec. 3, Eq. 4): A_bar = exp(Delta A), B_bar = (exp(Delta A) - 1) / A * B,
and the convolution kernel of length L (S4D Sec. 3, the Vandermonde form; Fig. 1 "two lines of
code")

    K[l] = 2 Re( sum_n C_n B_n (exp(Delta A_n) - 1) / A_n * exp(Delta A_n l) ),  l = 0..L-1,

    y = K * u + D u          (a causal convolution, computed by FFT of length 2L).

Bidirectional (S4's LRA configs set `bidirectional: true`; state-spaces/s4
src/models/sequence/kernels/fftconv.py `FFTConv.forward`): two kernels share A, B and Delta but
have their own C; the forward kernel K_f is causal and the backward one K_b reads the tokens
after t, shifted by one (the lag-0 term is the forward kernel's and D's):

    y[t] = sum_{s<=t} K_f[t-s] u[s] + sum_{s>t} K_b[s-t-1] u[s] + D u[t],

which is the official two-sided kernel `concat(K_f, flip(K_b))` circularly convolved at FFT
length 2L (the off-by-one of the backward direction is the official code's, kept on purpose).

Parameterisation and initialisation (S4D Sec. 3-4; state-spaces/s4 SSMKernelDiag / S4DKernel):
  A = -exp(log_A_real) + i A_imag, log_A_real = log(1/2) (real part -1/2);
      S4D-Lin (`s4d_init="lin"`, S4D Sec. 4.1 Eq. 8):  A_imag[n] = pi n;
      S4D-Inv (`s4d_init="inv"`, S4D Sec. 4.1 Eq. 7):  A_imag[n] = (N/pi) (N / (2n+1) - 1),
      n = 0..N/2-1; A and B are shared by groups of channels (`s4d_n_ssm` copies, S4's n_ssm).
  B = 1 (complex, trainable; S4D Sec. 4: B initialised to 1).
  C ~ complex normal, real and imaginary parts N(0, 1/2) (torch.randn of a complex dtype, the
      official init), one per direction and channel.
  Delta = exp(log_dt), log_dt ~ U[log dt_min, log dt_max] per channel (S4 Sec. 3.4 / S4D Sec. 3).
  D ~ N(0, 1) per channel (official `torch.randn`).

The residual block (S4 App. D.2; state-spaces/s4 backbones/block.py SequenceResidualBlock and
modules/s4block.py S4Block):

    prenorm:  x <- x + Dropout(GLU(W Dropout(GELU(SSM(mask * LN(x))))))
    postnorm: x <- LN(x + Dropout(GLU(W Dropout(GELU(SSM(mask * x))))))

W: a position-wise Linear(H, 2H) with bias (PyTorch's default init, U(+-1/sqrt(H))), GLU(a, b) =
a * sigmoid(b) (`final_act: glu`). With prenorm a final LayerNorm follows the last block (S4's
SequenceModel). Dropout rate `dropout` everywhere; `s4d_tie_dropout` shares one mask along the
sequence (S4's DropoutNd, used by the CIFAR config).

Padding (key-padding mask, True = real token): the SSM input is multiplied by the mask in every
layer before the convolution (as S4Block zeroes positions past each length), so a padded token
contributes nothing to any real token, in either direction; every other operation is per
position. Padded positions still receive outputs (the forward kernel carries real tokens into
them); the encoder sets them to zero at its output, so padded outputs are exactly 0 (pooling
ignores them anyway). Tested in tests/attnbench/nn/test_s4d.py.

Positions: none. The convolution is position-aware and S4 uses no position encoding; the factory
refuses `positions` other than "none" (a ConfigError names the field) rather than ignore it.

Config fields read (`config.model`; the `s4d_*` ones optional via `model_cfg.get`):
  num_layers, dim (H), dropout, dtype, positions (must be "none").
  s4d_state = 64            N, the real state size per channel (S4 layer default d_state; the
                            LRA configs use 4 for ListOps/Text/Retrieval, 64 for Image/Pathfinder)
  s4d_init = "lin"          "lin" (S4D-Lin) | "inv" (S4D-Inv)
  s4d_dt_min = 0.001, s4d_dt_max = 0.1   the log-uniform range of Delta (every LRA config)
  s4d_prenorm = True        pre-LN (True) or post-LN (False) residual blocks
  s4d_norm = "layer"        only LayerNorm (see the differences below)
  s4d_bidirectional = True  two kernels (True) or a causal one (False)
  s4d_n_ssm = 1             copies of (A, B) shared across channel groups; 0 = one per channel
  s4d_tie_dropout = False   one dropout mask per (example, channel) for the whole sequence

Computation: the kernel is built in float32 (float64 under x64 with float64 parameters), the FFT
convolution in the kernel's precision, and the result cast back to the compute dtype; the
linears and LayerNorms follow `attnbench.nn.layers`'s precision conventions.

S4D versus S4 (why S4D is used here). Full S4 parameterises A as normal plus low rank (DPLR,
the HiPPO-LegS matrix) and computes its kernel with a Cauchy kernel and the Woodbury identity;
S4D keeps S4's ZOH discretisation, Delta, D and block, but makes A diagonal, so the kernel is
the Vandermonde product above (S4D Sec. 3). The S4D paper reports that this loses little:
its abstract says S4D "performs comparably to S4 in almost all settings ... averaging 85% on the
Long Range Arena", and its LRA results table (S4D Sec. 5: S4D-LegS, S4D-Inv and S4D-Lin against
S4-LegS) puts the diagonal variants within about one point of S4 on most tasks.
The DPLR kernel is not implemented.

Deliberate differences from the paper and the official code, with reasons:
  - LayerNorm, not BatchNorm: most S4 LRA configs use `norm: batch`. BatchNorm needs running
    statistics carried between steps, which this framework's models do not have (a model's
    state is its parameters; `attnbench.nn.layers`), and its batch statistics would mix padded
    positions and other examples into each token; LayerNorm (eps 1e-5, PyTorch's) is S4's model
    default (`norm: layer`). `s4d_norm="batch"` is refused.
  - The SSM parameters (A, B, Delta) get the model's learning rate and weight decay: S4 gives
    them lr 0.001 and no weight decay (`lr: {dt, A, B: 0.001}`, `wd: 0.0`) through optimizer
    parameter groups, which the shared optimizer here does not have. Their names (`log_A_real`,
    `A_imag`, `B`, `log_dt`) let an optimizer mask select them.
  - Delta = exp(log_dt) (the S4D paper and the standalone S4D); the newer S4 kernels default to a
    softplus transform of the same initial values.
  - B is initialised to 1 as in the S4D paper; the repository's standalone S4D instead draws B at
    random and normalises it.
  - GELU is the exact (erf) one, PyTorch's nn.GELU, as S4.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnbench import errors
from attnbench.nn import backbones, layers

__all__ = ["s4d_kernel", "bidirectional_kernel", "fft_conv", "S4DLayer", "S4DBlock", "S4DEncoder"]

INITS = ("lin", "inv")
NORMS = ("layer",)


def init_A_imag(n_modes: int, state: int, init: str) -> np.ndarray:
    """Imaginary parts of the N/2 diagonal modes: S4D-Lin pi n, S4D-Inv (N/pi)(N/(2n+1) - 1)."""
    n = np.arange(n_modes, dtype=np.float64)
    if init == "lin":
        return np.pi * n
    if init == "inv":
        return state / np.pi * (state / (2 * n + 1) - 1)
    raise ValueError(f"unknown S4D init {init!r}; known: {', '.join(INITS)}")


def s4d_kernel(A, B, C, dt, length: int):
    """The ZOH-discretised diagonal SSM kernels by the Vandermonde product.

    A, B: complex `[H, M]` (M = N/2 modes), C: complex `[..., H, M]`, dt: real `[H]` ->
    real `[..., H, length]`: K[l] = 2 Re(sum_n C_n B_n (exp(dt A_n) - 1) / A_n exp(dt A_n l)).
    """
    dtA = A * dt[:, None].astype(A.dtype)  # [H, M]
    coeff = C * (B * (jnp.exp(dtA) - 1.0) / A)  # [..., H, M]
    steps = jnp.arange(length, dtype=dt.dtype)
    vandermonde = jnp.exp(dtA[..., None] * steps.astype(A.dtype))  # [H, M, L]
    return 2.0 * jnp.einsum("...hm,hml->...hl", coeff, vandermonde).real


def bidirectional_kernel(k_fwd, k_bwd):
    """The official two-sided kernel of length 2L, `concat(K_f, flip(K_b))` (`[H, L]` each)."""
    return jnp.concatenate([k_fwd, k_bwd[..., ::-1]], axis=-1)


def fft_conv(u, kernel):
    """u `[B, L, H]` (real), kernel `[H, K]` (K = L causal, 2L two-sided) -> `[B, L, H]`:
    the circular convolution at FFT length 2L, first L outputs (linear for the causal kernel)."""
    length = u.shape[1]
    n = 2 * length
    u_f = jnp.fft.rfft(u, n=n, axis=1)  # [B, n/2+1, H]
    k_f = jnp.fft.rfft(kernel, n=n, axis=-1).T  # [n/2+1, H]
    return jnp.fft.irfft(u_f * k_f[None], n=n, axis=1)[:, :length]


class S4DLayer(nnx.Module):
    """The SSM of one block: u `[B, L, H]` -> y = K * u + D u `[B, L, H]` (module docstring)."""

    def __init__(
        self,
        dim: int,
        *,
        state: int = 64,
        init: str = "lin",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        bidirectional: bool = True,
        n_ssm: int = 1,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
    ):
        if state < 2 or state % 2:
            raise ValueError(f"S4D state size must be even and >= 2 (conjugate pairs); got {state}")
        n_ssm = n_ssm or dim
        if dim % n_ssm:
            raise ValueError(f"s4d_n_ssm={n_ssm} does not divide the width {dim}")
        if not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max; got {dt_min}, {dt_max}")
        modes = state // 2
        self.dim, self.state, self.n_ssm, self.bidirectional = dim, state, n_ssm, bidirectional
        pd = param_dtype
        a_imag = np.broadcast_to(init_A_imag(modes, state, init), (n_ssm, modes))
        self.log_A_real = nnx.Param(jnp.full((n_ssm, modes), math.log(0.5), pd))
        self.A_imag = nnx.Param(jnp.asarray(a_imag, pd))
        # B = 1 + 0i, stored as (real, imag)
        self.B = nnx.Param(
            jnp.stack([jnp.ones((n_ssm, modes), pd), jnp.zeros((n_ssm, modes), pd)], -1)
        )
        directions = 2 if bidirectional else 1
        # complex standard normal: real and imaginary parts N(0, 1/2)
        c = jax.random.normal(rngs.params(), (directions, dim, modes, 2), pd) * math.sqrt(0.5)
        self.C = nnx.Param(c)
        u = jax.random.uniform(rngs.params(), (dim,), pd)
        self.log_dt = nnx.Param(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        self.D = nnx.Param(jax.random.normal(rngs.params(), (dim,), pd))

    def kernels(self, length: int):
        """The forward (and backward) kernels `[directions, H, length]` in the parameters'
        precision (at least float32)."""
        real = jnp.promote_types(self.log_dt[...].dtype, jnp.float32)
        cplx = jnp.result_type(real, jnp.complex64)
        copies = self.dim // self.n_ssm
        A = -jnp.exp(self.log_A_real[...].astype(real)) + 1j * self.A_imag[...].astype(real)
        B = self.B[...].astype(real)
        B = B[..., 0] + 1j * B[..., 1]
        A = jnp.tile(A.astype(cplx), (copies, 1))  # channel h uses copy h mod n_ssm (S4's repeat)
        B = jnp.tile(B.astype(cplx), (copies, 1))
        C = self.C[...].astype(real)
        C = (C[..., 0] + 1j * C[..., 1]).astype(cplx)
        dt = jnp.exp(self.log_dt[...].astype(real))
        return s4d_kernel(A, B, C, dt, length)

    def __call__(self, u):
        """u `[B, L, H]` (padding already zeroed) -> `[B, L, H]` in the kernels' precision."""
        k = self.kernels(u.shape[1])
        kernel = bidirectional_kernel(k[0], k[1]) if self.bidirectional else k[0]
        u = u.astype(k.dtype)
        return fft_conv(u, kernel) + u * self.D[...].astype(k.dtype)


def _norm(dim, dtype, param_dtype, rngs):
    return nnx.LayerNorm(dim, epsilon=1e-5, dtype=dtype, param_dtype=param_dtype, rngs=rngs)


class S4DBlock(nnx.Module):
    """One residual block: (pre- or post-) LayerNorm, masked SSM, GELU, dropout, Linear(H, 2H)
    with GLU, dropout, residual (module docstring)."""

    def __init__(
        self,
        dim: int,
        *,
        dropout_rate: float = 0.0,
        prenorm: bool = True,
        tie_dropout: bool = False,
        dtype=jnp.float32,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
        **ssm,
    ):
        self.norm = _norm(dim, dtype, param_dtype, rngs)
        self.ssm = S4DLayer(dim, param_dtype=param_dtype, rngs=rngs, **ssm)
        init = layers.torch_uniform(dim)
        self.out = nnx.Linear(
            dim,
            2 * dim,
            kernel_init=init,
            bias_init=init,
            dtype=dtype,
            param_dtype=param_dtype,
            rngs=rngs,
        )
        self.rate, self.prenorm, self.tie_dropout = dropout_rate, prenorm, tie_dropout
        self.dtype = jnp.dtype(dtype)

    def _dropout(self, x, key, train):
        if not self.tie_dropout or not train or self.rate == 0.0:
            return layers.dropout(x, self.rate, key, train)
        keep = layers.dropout(jnp.ones((x.shape[0], 1, x.shape[2]), x.dtype), self.rate, key, train)
        return x * keep

    def __call__(self, x, *, mask=None, train: bool = False, key=None):
        """x `[B, L, H]`, mask `[B, L]` (True = real) -> `[B, L, H]` in the compute dtype."""
        k1, k2 = layers.split_keys(key, 2)
        u = self.norm(x) if self.prenorm else x
        if mask is not None:
            u = jnp.where(mask[..., None], u, 0)  # padded inputs never reach the convolution
        y = jax.nn.gelu(self.ssm(u), approximate=False).astype(self.dtype)
        y = self._dropout(y, k1, train)
        a, b = jnp.split(self.out(y), 2, axis=-1)
        y = self._dropout(a * jax.nn.sigmoid(b), k2, train)
        x = (x + y).astype(self.dtype)
        return x if self.prenorm else self.norm(x)


class S4DEncoder(nnx.Module):
    """`num_layers` S4D blocks (and a final LayerNorm when pre-norm): `[B, L, H]` ->
    `[B, L, H]`, padded outputs zero. No positions (module docstring)."""

    def __init__(
        self,
        num_layers: int,
        dim: int,
        *,
        dropout_rate: float = 0.0,
        prenorm: bool = True,
        tie_dropout: bool = False,
        dtype=jnp.float32,
        param_dtype=jnp.float32,
        rngs: nnx.Rngs,
        **ssm,
    ):
        self.blocks = layers.block_stack(
            lambda i: S4DBlock(
                dim,
                dropout_rate=dropout_rate,
                prenorm=prenorm,
                tie_dropout=tie_dropout,
                dtype=dtype,
                param_dtype=param_dtype,
                rngs=rngs,
                **ssm,
            ),
            num_layers,
        )
        self.norm = _norm(dim, dtype, param_dtype, rngs) if prenorm else None
        self.dtype = jnp.dtype(dtype)

    def __call__(self, x, *, mask=None, train: bool = False, key=None, **inputs):
        """x `[B, L, H]` embedded tokens, mask `[B, L]` True for real tokens -> `[B, L, H]` in
        the compute dtype; `inputs` (per-call attention inputs) are ignored."""
        del inputs
        x = x.astype(self.dtype)
        for block, k in zip(self.blocks, layers.split_keys(key, len(self.blocks)), strict=True):
            x = block(x, mask=mask, train=train, key=k)
        if self.norm is not None:
            x = self.norm(x)
        if mask is not None:
            x = jnp.where(mask[..., None], x, 0).astype(self.dtype)
        return x


def _field(m, name, default, kind, check=None, known=None):
    value = m.get(name, default)
    if kind is bool and not isinstance(value, bool):
        raise errors.ConfigError(f"config.model.{name}={value!r}: must be True or False")
    try:
        value = kind(value)
    except (TypeError, ValueError) as e:
        raise errors.ConfigError(f"config.model.{name}={value!r}: {e}") from None
    if known is not None and value not in known:
        raise errors.ConfigError(
            f"config.model.{name}={value!r}: unknown; known: {', '.join(map(str, known))}"
        )
    if check is not None and not check(value):
        raise errors.ConfigError(f"config.model.{name}={value!r}: out of range")
    return value


@backbones.register("s4d")
def s4d(*, model_cfg, attention_cfg, max_len: int, rngs):
    """The S4D encoder from a config's model section (fields: the module docstring);
    `attention_cfg` and `max_len` are not used (the kernel is built for each call's length)."""
    del attention_cfg, max_len
    m = model_cfg
    if m.positions != "none":
        raise errors.ConfigError(
            f"config.model.positions={m.positions!r}: the s4d encoder adds no positions (S4 uses "
            "none: its convolution is position-aware); set config.model.positions='none'"
        )
    norm = _field(m, "s4d_norm", "layer", str)
    if norm != "layer":
        raise errors.ConfigError(
            f"config.model.s4d_norm={norm!r}: only 'layer' (BatchNorm needs running statistics, "
            "which models here do not carry; see attnbench/nn/s4d.py)"
        )
    state = _field(m, "s4d_state", 64, int, lambda v: v >= 2 and v % 2 == 0)
    n_ssm = _field(m, "s4d_n_ssm", 1, int, lambda v: v >= 0 and (v == 0 or m.dim % v == 0))
    dt_min = _field(m, "s4d_dt_min", 0.001, float, lambda v: v > 0)
    dt_max = _field(m, "s4d_dt_max", 0.1, float, lambda v: v >= dt_min)
    return S4DEncoder(
        m.num_layers,
        m.dim,
        dropout_rate=m.dropout,
        prenorm=_field(m, "s4d_prenorm", True, bool),
        tie_dropout=_field(m, "s4d_tie_dropout", False, bool),
        dtype=layers.compute_dtype(m.dtype),
        state=state,
        init=_field(m, "s4d_init", "lin", str, known=INITS),
        dt_min=dt_min,
        dt_max=dt_max,
        bidirectional=_field(m, "s4d_bidirectional", True, bool),
        n_ssm=n_ssm,
        rngs=rngs,
    )
