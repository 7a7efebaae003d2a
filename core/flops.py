"""Analytic parameter and FLOP counts: every attention mechanism alone, and the LRA models.

    counts = flops.count(config_lib.load("configs/lra/text.py:preset=paper,model=samsa"))
    counts.params, counts.flops, counts.breakdown["attention"]
    flops.attention_flops("softmax", {}, n=1024, m=1024, heads=8, head_dim=64)

Conventions:
  * FLOPs are FORWARD FLOPs, 2 per multiply-add (the papers' convention; SSA notes Sec. 1.5).
  * Matmul FLOPs (every dot/einsum, including sparse ones written as gather + multiply + sum,
    e.g. GRF's scatter/gather products) are exact for the code as written: chunk and window
    padding, SAMSA's support vectors, the CLS token, every q/k/v/output projection.
  * Elementwise FLOPs are APPROXIMATE: a per-element op count read off the code for norms,
    activations, softmax normalisation, masking selects, bias and residual adds (constants
    below; about what XLA's cost analysis charges). exp/tanh/rsqrt are transcendentals, not
    FLOPs, as in XLA, except where XLA expands a function into arithmetic (erf: `_GELU_ERF`).
    Small terms (per-row reductions, scalar work, random-number generation, dropout) are
    omitted. `elementwise=False` gives matmul FLOPs alone.
  * Data movement is 0 FLOPs: embedding lookups, gathers, concatenation, top-k, sorting.
    Sliceformer's sorts have no multiply-adds and are counted as 0 (about n log2 n
    comparisons per channel, which XLA's cost analysis charges as ~(log2 n + 6) "flops" per
    element).
  * Loops (chunked attention, GRF's slot scan, grf_dense's walk steps, SSA's ensemble) are
    counted in full, every iteration (XLA's cost analysis charges a loop body only once).
  * Per example: one classifier example is one sequence; a Retrieval example is TWO documents
    through the shared encoder. Work a call shares by its whole batch (the dense GRF mask of a
    fixed graph) is divided by the call's batch.

`transformer_forward_flops` and the `ssa_*` functions reproduce the SSA paper's compute
accounting (Table 7, the C columns of Tables 1-2; papers/notes/ssa.md Sec. 1.5).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attention

__all__ = [
    "Counts",
    "COMPONENTS",
    "MECHANISM_FLOPS",
    "MECHANISM_PARAMS",
    "attention_flops",
    "attention_params",
    "count",
    "transformer_forward_flops",
    "SSA_RUNS",
    "ssa_training_flops",
    "ssa_table7",
    "ssa_compute_ratio",
]

# Elementwise ops per element (approximate; see the module docstring).
_SOFTMAX = 5  # logit scale, max, subtract, sum, divide (exp is a transcendental)
_MASKED = 2  # a masked score: select before the softmax and select after it
_LAYERNORM = 7  # mean, centre, square, variance, normalise, scale, bias
_RMSNORM = 4  # square, mean, normalise, scale
_GELU_TANH = 8  # jax.nn.gelu (approximate=True): x^3, two scales, add, +1, two products
_GELU_ERF = 64  # exact GELU: XLA expands float32 erf into a rational polynomial (~60 ops)
_ELU_PLUS_ONE = 4  # linear attention's feature map


@dataclasses.dataclass(frozen=True)
class _Call:
    """One mechanism call: n queries, m keys, h heads of widths dk/dv, on `batch` sequences."""

    n: int
    m: int
    h: int
    dk: int
    dv: int
    d_model: int
    batch: int
    train: bool
    layer_index: int
    masked: bool


Flops = tuple[float, float]  # (matmul FLOPs, approximate elementwise FLOPs), per sequence


def _softmax_ew(c: _Call, scores: float) -> float:
    return scores * (_SOFTMAX + _MASKED * c.masked)


def _dense_softmax(c: _Call, hp) -> Flops:
    # QK^T 2·n·m·h·dk + PV 2·n·m·h·dv  (= 4·n·m·h·d): the reference.
    scores = c.n * c.m * c.h
    return 2 * scores * (c.dk + c.dv), _softmax_ew(c, scores)


def _chunked(c: _Call, hp) -> Flops:
    # Same 4·n·m·h·d on N, M padded up to multiples of the chunks; plus the streaming
    # rescale of the accumulator once per (query chunk, key chunk).
    qc, kc = min(hp["query_chunk"], c.n), min(hp["key_chunk"], c.m)
    n_pad, m_pad = math.ceil(c.n / qc) * qc, math.ceil(c.m / kc) * kc
    scores = n_pad * m_pad * c.h
    rescale = n_pad * c.h * (c.dv + 2) * 2 * (m_pad // kc)
    ew = scores * (_SOFTMAX + 1 + 2 * c.masked) + rescale + c.n * c.h * c.dv
    return 2 * scores * (c.dk + c.dv), ew


def _samsa(c: _Call, hp) -> Flops:
    # Importance scorer on the M keys: two d x d layers and d -> h, 2·m·(2·d² + d·h); the
    # n x k attention 2·n·k·h·(dk + dv); training (and soft mode) also mixes the top-k with
    # the next k tokens: the k x k comparison einsum 2·k²·h·(dk + dv).
    d, k = c.d_model, hp["k"]
    scorer = 2 * c.m * (2 * d * d + d * c.h)
    scorer_ew = c.m * (_GELU_ERF * d + _RMSNORM * d + 3 * d + c.h)  # bias adds, residual
    pool = c.m + 2 * k if hp["support"] else c.m
    ew = scorer_ew + c.h * pool * (c.train or hp["noise_at_eval"])  # Gumbel noise
    mm = scorer + 2 * c.n * k * c.h * (c.dk + c.dv)
    ew += _softmax_ew(c, c.n * k * c.h)
    sparse = hp["mode"] == "hard" and not c.train
    if not sparse:
        mm += 2 * k * k * c.h * (c.dk + c.dv)
        # sigmoid of the k x k score differences, the gradient cap, the weights; the top-tier
        # products (and the straight-through difference in hard mode).
        ew += k * k * c.h * (12 if hp["grad_cap"] else 6)
        ew += k * c.h * (c.dk + c.dv) * (4 if hp["mode"] == "hard" else 2)
    return mm, ew


def _sliceformer(variant: str | None):
    def formula(c: _Call, hp) -> Flops:
        # Sorting has no multiply-adds: 0 matmul FLOPs (about n·log2(n) comparisons per
        # channel, not counted). Elementwise: the padding bookkeeping (ranks, selects) and the
        # perm variant's averaging, a few ops per value element.
        var = variant or hp["variant"]
        elems = c.n * c.h * c.dv
        padded = c.masked and not hp["ignore_mask"]
        if var == "ascend" and not padded:
            return 0.0, 0.0
        ew = 4 * elems if padded else 0.0
        if var == "perm":
            ew += elems * (hp["num_perms"] + 1)
        return 0.0, ew

    return formula


def _ssa(c: _Call, hp) -> Flops:
    # Training: each target scores only its sampled sources, 4·n·S·h·d with S = keep·m
    # (unbiased: round(keep·m) shared sources; windows: w = 1/keep windows of n/w targets and
    # n/w sources, N padded to a multiple of w). Evaluation: dense softmax ("renormalisation"),
    # or `ensemble_samples` subsampled passes.
    sub = hp.get("subsample")
    sampled = (c.train if sub is None else bool(sub)) or (
        not c.train and sub is None and hp["eval_mode"] == "ensemble"
    )
    if not sampled:
        return _dense_softmax(c, hp)
    passes = hp["ensemble_samples"] if (not c.train and sub is None) else 1
    causal, sampling = hp["causal"], hp["sampling"]
    if sampling in ("unbiased", "graph") and not (causal and sampling == "unbiased"):
        targets, sources = c.n, min(c.m, max(1, round(hp["keep"] * c.m)))
    else:
        w = round(1.0 / hp["keep"])
        windowed_1d = sampling == "local_1d" or (sampling == "unbiased" and causal)
        targets = c.n + ((-c.n) % w if windowed_1d and c.n == c.m else 0)
        sources = targets // w
    scores = targets * sources * c.h
    mm = 2 * scores * (c.dk + c.dv)
    ew = _softmax_ew(c, scores) + (c.n * c.h * c.dv if passes > 1 else 0)
    return passes * mm, passes * ew


def _gfsa_plain(c: _Call, hp) -> bool:
    return bool(hp.get("even_layers_only")) and c.layer_index % 2 == 1


def _gfsa(c: _Call, hp) -> Flops:
    # Softmax's 4·n·m·h·d plus the second-order term A(AV), 2·n·m·h·dv (never A², which would
    # be 2·n·m·n·h); a GFSA_even odd layer is plain softmax.
    mm, ew = _dense_softmax(c, hp)
    if _gfsa_plain(c, hp):
        return mm, ew
    return mm + 2 * c.n * c.m * c.h * c.dv, ew + 9 * c.n * c.h * c.dv


def _gfsa_exact(c: _Call, hp) -> Flops:
    # QK^T 2·n·m·h·dk and K successive products A(A(...(AV))), K·2·n·m·h·dv.
    mm, ew = _dense_softmax(c, hp)
    if _gfsa_plain(c, hp):
        return mm, ew
    extra = (hp["order"] - 1) * 2 * c.n * c.m * c.h * c.dv
    return mm + extra, ew + 6 * c.n * c.h * c.dv


def _gfsa_linear(c: _Call, hp) -> Flops:
    # One Efficient-Attention product A X = rho_q (rho_k^T X) costs 2·(m + n)·h·dk·dv; GFSA
    # needs AV and A(AV) (a plain GFSA_even layer only AV).
    one = 2 * (c.m + c.n) * c.h * c.dk * c.dv
    products = 1 if _gfsa_plain(c, hp) else 2
    ew = (c.n + c.m) * c.h * c.dk * (_SOFTMAX - 1) + c.masked * 2 * c.m * c.h * c.dk
    if products == 2:
        ew += 9 * c.n * c.h * c.dv
    return products * one, ew


def _grf(c: _Call, hp) -> Flops:
    # Masked linear attention through S = n_walks·(max_walk_len + 1) sparse feature slots per
    # token: the scatter T_v += phi_j[v]·relu(k_j)[v_j, 1]^T and the gather relu(q_i)^T T_v,
    # 2 + 2 FLOPs per (token, slot, dk, dv + 1) entry: 4·n·S·h·dk·(dv + 1); slots are padded to
    # a multiple of `slot_chunk`. This is the general path (resampled walks, and models built
    # abstractly). Frozen walks built concretely take the node-major support path instead, about
    # 4·n·C·h·dk·(dv + 1) with C the most start nodes visiting one node (45-53 on grids at the
    # defaults, against S = 220): C is known only after the walks are sampled, so for those
    # models this count is an upper bound, about 4x the work done.
    e = c.dv + 1
    chunk = min(hp["slot_chunk"], hp["n_walks"] * (hp["max_walk_len"] + 1))
    slots = math.ceil(hp["n_walks"] * (hp["max_walk_len"] + 1) / chunk) * chunk
    mm = c.h * c.n * slots * (4 * c.dk * e + 2 * e)
    ew = c.h * c.n * (c.dk * e + 2 * c.dk + slots * (e + 2) + 3 * e)  # k v^T outer, relu, ...
    if hp["cls_token"]:
        mm += c.h * (2 * (c.n - 1) * c.dk * e + 2 * c.dk * e)
        ew += c.h * c.n * c.dk * e
    return mm, ew


def _grf_dense(c: _Call, hp) -> Flops:
    # Per example: masked linear attention with an explicit n x n mask, 2·n²·h·(dk + dv).
    # Per call (one graph for the batch on a grid; per example for k-NN): the mask
    # Phi Phi^T, 2·h·N_g³ (dominant), after `max_walk_len` sparse products W·P, 2·K·N_g² each.
    n_g = c.n - int(hp["cls_token"])
    if hp["graph"] == "grid":
        degree, shared = 4, True
    elif hp["graph"] == "knn":
        degree, shared = hp["knn_k"], False
    else:
        raise ValueError(
            "grf_dense with graph='input': the neighbour-list width is data, not a "
            "hyper-parameter; its FLOPs are not counted"
        )
    steps = hp["max_walk_len"]
    mask_mm = 2 * c.h * n_g**3 + steps * 2 * degree * n_g**2
    mask_ew = c.h * n_g**2 * (2 * steps + 1)
    per_call = c.batch if shared else 1
    scores = c.n * c.m * c.h
    mm = 2 * scores * (c.dk + c.dv) + mask_mm / per_call
    ew = scores * (2 + c.masked) + mask_ew / per_call + 2 * c.h * c.n * c.dk
    return mm, ew


def _linear(c: _Call, hp) -> Flops:
    # Right to left: phi(K)^T V 2·m·h·dk·dv, then phi(Q)·(K^T V) 2·n·h·dk·dv and the
    # normaliser 2·n·h·dk; causal: exact 64-token blocks (2·n·64·h·(dk + dv)) plus the
    # running-state products.
    fm = _ELU_PLUS_ONE if hp["feature_map"] == "elu+1" else 1
    ew = (c.n + c.m) * c.h * c.dk * fm + c.m * c.h * c.dk * (1 + c.masked) + 2 * c.n * c.h * c.dv
    if not hp["causal"]:
        mm = 2 * c.m * c.h * c.dk * c.dv + 2 * c.n * c.h * c.dk * c.dv + 2 * c.n * c.h * c.dk
        return mm, ew
    blk = min(64, c.n)
    n_pad = math.ceil(c.n / blk) * blk
    mm = 2 * n_pad * blk * c.h * (c.dk + c.dv)  # intra-block scores and numerator
    mm += 2 * 2 * n_pad * c.h * c.dk * c.dv + 2 * n_pad * c.h * c.dk  # block states, prefix
    # Causal selects and row sums of the block scores; exclusive prefix sums of the nb block
    # states (a cumsum, which XLA evaluates as a window of nb adds per element, and the
    # subtraction); adding the earlier blocks' contribution.
    nb = n_pad // blk
    states = nb * c.h * c.dk * (c.dv + 1)
    ew += 2 * n_pad * blk * c.h + (nb + 1) * states + n_pad * c.h * (c.dv + 1)
    return mm, ew


def _performer(c: _Call, hp) -> Flops:
    # r random features: feature logits 2·(n + m)·h·dk·r, then as linear attention with
    # r features: 2·m·h·r·dv + 2·n·h·r·(dv + 1).
    r = hp["num_features"]
    mm = (
        2 * (c.n + c.m) * c.h * c.dk * r + 2 * c.m * c.h * r * c.dv + 2 * c.n * c.h * r * (c.dv + 1)
    )
    ew = (c.n + c.m) * c.h * (3 * c.dk + 5 * r) + c.m * c.h * r * (1 + 2 * c.masked)
    return mm, ew + 2 * c.n * c.h * c.dv


def _linformer(c: _Call, hp) -> Flops:
    # Sequence projections E K, F V 2·r·m·h·(dk + dv), then softmax over r projected
    # positions 2·n·r·h·(dk + dv).
    r = hp["proj_len"]
    mm = 2 * r * (c.m + c.n) * c.h * (c.dk + c.dv)
    ew = c.n * r * c.h * _SOFTMAX + c.masked * 2 * c.m * c.h * (c.dk + c.dv)
    return mm, ew


def _local(c: _Call, hp) -> Flops:
    # Computed, not only attended: blocks of c = max(window, 1) queries score span·c keys
    # (span 3, causal 2), 2·n·span·c·h·(dk + dv) with n padded to whole blocks; the band
    # |i - j| <= window itself is only (2·window + 1) keys per query.
    blk = min(max(hp["window"], 1), c.n)
    n_pad = math.ceil(c.n / blk) * blk
    scores = n_pad * (2 if hp["causal"] else 3) * blk * c.h
    return 2 * scores * (c.dk + c.dv), scores * (_SOFTMAX + 2)


# The forward FLOP formula of each registered mechanism (dominant terms in each one's comment).
MECHANISM_FLOPS: dict[str, Callable[[_Call, Mapping[str, Any]], Flops]] = {
    "softmax": _dense_softmax,
    "softmax_chunked": _chunked,
    "samsa": _samsa,
    "sliceformer": _sliceformer(None),
    "sliceformer_ascend": _sliceformer("ascend"),
    "sliceformer_descend": _sliceformer("descend"),
    "sliceformer_half": _sliceformer("half"),
    "sliceformer_perm2": _sliceformer("perm"),
    "sliceformer_perm4": _sliceformer("perm"),
    "sliceformer_max_exchange": _sliceformer("max_exchange"),
    "sliceformer_shuffle": _sliceformer("shuffle"),
    "sliceformer_shuffle_independent": _sliceformer("shuffle"),
    "ssa": _ssa,
    "gfsa": _gfsa,
    "gfsa_exact": _gfsa_exact,
    "gfsa_linear": _gfsa_linear,
    "grf": _grf,
    "grf_dense": _grf_dense,
    "linear": _linear,
    "performer": _performer,
    "linformer": _linformer,
    "local": _local,
}
_FIXED_HPARAMS = {"sliceformer_perm2": {"num_perms": 2}, "sliceformer_perm4": {"num_perms": 4}}


def _none(hp, *, h, hd, d, max_len, layer_index):
    return 0, 0


def _samsa_params(hp, *, h, hd, d, max_len, layer_index):
    scorer = 2 * (d * d + d) + d + d * h + h  # w1, b1, w2, b2, RMSNorm scale, w3, b3
    support = h * 2 * hp["k"] + 2 * (2 * hp["k"] * h * hd) if hp["support"] else 0
    return scorer + support, 0


def _gfsa_params(hp, *, h, hd, d, max_len, layer_index):
    if hp.get("even_layers_only") and layer_index % 2 == 1:
        return 0, 1  # the plain-layer marker buffer
    return h * (3 if hp.get("learn_w0_w1") else 1), 0


def _grf_params(hp, *, h, hd, d, max_len, layer_index):
    f = h * (hp["max_walk_len"] + 1)
    if hp.get("resample", True):  # grf_dense has no walks (no `resample` hyper-parameter)
        return f, 0
    grid = hp["grid"]
    nodes = grid[0] * grid[1] if grid is not None else max_len - int(hp["cls_token"])
    # The frozen walks (nodes and loads). A concrete init also stores the support path's
    # `walk_slots` (the walks' size again) and `support_tokens` [H, nodes, C], whose C depends on
    # the sampled walks: neither is counted here.
    return f, 2 * h * nodes * hp["n_walks"] * (hp["max_walk_len"] + 1)


def _linformer_params(hp, *, h, hd, d, max_len, layer_index):
    return hp["proj_len"] * max_len * (1 if hp["share_kv"] else 2), 0


# Trainable parameters and constant buffers of one layer's mechanism: (params, buffers).
MECHANISM_PARAMS: dict[str, Callable[..., tuple[int, int]]] = {
    **{name: _none for name in MECHANISM_FLOPS},
    "samsa": _samsa_params,
    "ssa": lambda hp, **kw: (0, 1),  # the per-layer sigma
    "performer": lambda hp, *, hd, **kw: (0, hp["num_features"] * hd),  # frozen features
    "gfsa": _gfsa_params,
    "gfsa_exact": _gfsa_params,
    "gfsa_linear": _gfsa_params,
    "grf": _grf_params,
    "grf_dense": _grf_params,
    "linformer": _linformer_params,
}


def _hparams(name: str, hparams: Mapping[str, Any] | None) -> dict[str, Any]:
    if name not in MECHANISM_FLOPS:
        raise ValueError(
            f"no FLOP formula for attention {name!r}; known mechanisms: "
            f"{', '.join(sorted(MECHANISM_FLOPS))}"
        )
    hp = {k: v for k, v in dict(hparams or {}).items() if k != "name"}
    defaults = attention.defaults(name) if name in attention.names() else {}
    return {**defaults, **_FIXED_HPARAMS.get(name, {}), **hp}


def attention_flops(
    name: str,
    hparams: Mapping[str, Any] | None,
    *,
    n: int,
    m: int,
    heads: int,
    head_dim: int,
    value_dim: int | None = None,
    train: bool = False,
    model_dim: int | None = None,
    batch: int = 1,
    layer_index: int = 0,
    masked: bool = False,
    elementwise: bool = True,
) -> float:
    """Forward FLOPs of one call of mechanism `name` on ONE sequence (n queries, m keys).

    The q/k/v and output projections of the layer are not included (`count` adds them).

    Args:
      name: a registered mechanism (`attention.names()`).
      hparams: its hyper-parameters (missing ones take the registry's defaults); a config's
        attention section (with `name`) works too.
      n, m: queries and keys; heads: H; head_dim: Dk; value_dim: Dv (default Dk).
      train: the training path (SSA samples sources, SAMSA mixes top-k with the next k).
      model_dim: width of the layer input (SAMSA's importance scorer); default H·Dk.
      batch: sequences in the call; work shared by the batch (grf_dense's mask on a fixed grid)
        is divided by it.
      layer_index: 0-based depth (GFSA_even's odd layers are plain attention).
      masked: a key-padding mask is passed (adds the masking selects to the elementwise count).
      elementwise: include the approximate elementwise FLOPs (else matmul FLOPs alone).

    Returns:
      FLOPs (float).

    Raises:
      ValueError: an unknown mechanism (the message lists the known ones).
    """
    hp = _hparams(name, hparams)
    call = _Call(
        n=int(n),
        m=int(m),
        h=int(heads),
        dk=int(head_dim),
        dv=int(value_dim or head_dim),
        d_model=int(model_dim or heads * head_dim),
        batch=int(batch),
        train=bool(train),
        layer_index=int(layer_index),
        masked=bool(masked),
    )
    mm, ew = MECHANISM_FLOPS[name](call, hp)
    return float(mm + (ew if elementwise else 0.0))


def attention_params(
    name: str,
    hparams: Mapping[str, Any] | None,
    *,
    heads: int,
    head_dim: int,
    model_dim: int | None = None,
    max_len: int | None = None,
    layer_index: int = 0,
) -> tuple[int, int]:
    """`(trainable parameters, buffer scalars)` of one layer's mechanism (what its `init`
    returns; q/k/v/out projections excluded). `max_len` is the sequence length the layer is
    built for (Linformer's E/F columns, GRF's frozen walks)."""
    hp = _hparams(name, hparams)
    return MECHANISM_PARAMS[name](
        hp,
        h=int(heads),
        hd=int(head_dim),
        d=int(model_dim or heads * head_dim),
        max_len=max_len,
        layer_index=int(layer_index),
    )


# ------------------------------------------------------------------------------ whole models

COMPONENTS = ("embedding", "attention", "projections", "mlp", "norms/other", "head")

# LRA task -> (data module, dual encoder).
_LRA_TASKS = {
    "lra.listops": ("lra.listops", False),
    "lra.text": ("lra.text", False),
    "lra.image": ("lra.image", False),
    "lra.pathfinder": ("lra.pathfinder", False),
    "lra.retrieval": ("lra.retrieval", True),
}


@dataclasses.dataclass(frozen=True)
class Counts:
    """Exact parameter count and forward FLOPs per example of a model.

    Attributes:
      params: trainable parameter scalars (`nnx.Param`), exact.
      buffers: constant scalars (frozen random features/walks, SSA's sigma), not trained.
      flops: forward FLOPs per example (matmul exact + elementwise approximate).
      matmul_flops: the matmul part of `flops` alone.
      breakdown: FLOPs per example by component (`COMPONENTS`); sums to `flops`.
      param_breakdown: parameters by component; sums to `params`.
      sequences: sequences per example (2 for the Retrieval dual encoder).
      length: tokens per sequence the encoder sees (CLS included).
      batch: sequences per call assumed for batch-shared work.
    """

    params: int
    buffers: int
    flops: float
    matmul_flops: float
    breakdown: Mapping[str, float]
    param_breakdown: Mapping[str, int]
    sequences: int
    length: int
    batch: int

    def table(self) -> str:
        """A plain-text table of the breakdown."""
        rows = [f"{'component':<14}{'params':>14}{'FLOPs/example':>18}{'share':>8}"]
        for comp in COMPONENTS:
            share = self.breakdown[comp] / self.flops if self.flops else 0.0
            rows.append(
                f"{comp:<14}{self.param_breakdown[comp]:>14,}"
                f"{self.breakdown[comp]:>18.4g}{share:>8.1%}"
            )
        rows.append(f"{'total':<14}{self.params:>14,}{self.flops:>18.4g}{1:>8.0%}")
        return "\n".join(rows)


def _task_info(task: str) -> tuple[int, int, bool]:
    """(vocabulary size, classes, dual encoder) of an LRA task."""
    if task not in _LRA_TASKS:
        raise ValueError(f"count: unknown task {task!r}; known: {', '.join(_LRA_TASKS)}")
    module_name, dual = _LRA_TASKS[task]
    module = importlib.import_module(module_name)
    vocab = module.VOCAB_SIZE if hasattr(module, "VOCAB_SIZE") else len(module.VOCAB)
    return int(vocab), int(module.NUM_CLASSES), dual


class _Tally:
    def __init__(self, elementwise: bool):
        self.elementwise = elementwise
        self.flops = dict.fromkeys(COMPONENTS, 0.0)
        self.matmul = 0.0
        self.params = dict.fromkeys(COMPONENTS, 0)

    def add(self, comp: str, mm: float = 0.0, ew: float = 0.0, params: int = 0):
        self.flops[comp] += mm + (ew if self.elementwise else 0.0)
        self.matmul += mm
        self.params[comp] += params


def _dense(t: _Tally, comp: str, tokens: int, fan_in: int, fan_out: int, bias: bool = True):
    """An nnx.Linear on `tokens` tokens: the matmul, the bias add, the kernel and bias."""
    params = fan_in * fan_out + fan_out * bias
    t.add(comp, 2 * tokens * fan_in * fan_out, tokens * fan_out * bias, params)


def count(
    config, *, train: bool = False, batch: int | None = None, elementwise: bool = True
) -> Counts:
    """Parameters and forward FLOPs per example of the model `config` builds (an LRA task:
    the classifier or the Retrieval dual encoder; the transformer or SAMSA encoder; any
    registered mechanism).

    Args:
      config: a task config (`core.config.load("configs/lra/<task>.py:...")`).
      train: count the training forward (mechanisms that sample; dropout is not counted).
      batch: sequences per call for batch-shared work; default `config.batch_size` (times two
        for the dual encoder).
      elementwise: include the approximate elementwise FLOPs.
    """
    vocab, classes, dual = _task_info(config.task)
    m = config.model
    hp = config.attention.to_dict() if hasattr(config.attention, "to_dict") else config.attention
    hp = dict(hp)
    name = hp.pop("name")
    mech = attention.get(name, **{k: v for k, v in hp.items() if k in attention.defaults(name)})
    d, f, heads, qkv, layers = m.dim, m.mlp_dim, m.num_heads, m.qkv_dim, m.num_layers
    if m.encoder not in ("transformer", "samsa"):
        raise ValueError(f"count: unknown model.encoder {m.encoder!r}; known: transformer, samsa")
    samsa_enc = m.encoder == "samsa"
    hd = qkv // heads
    n = config.data.max_length + (m.pool == "cls")
    seqs = 2 if dual else 1
    batch = int(batch or config.batch_size) * seqs
    t = _Tally(elementwise)
    buffers = 0

    # Embedding: a lookup (0 FLOPs), the CLS token, positions added.
    t.add("embedding", params=vocab * d + d * (m.pool == "cls"))
    if m.positions == "learned" and not samsa_enc:
        t.add("embedding", params=n * d)
    if m.positions != "none" or samsa_enc:
        t.add("embedding", ew=n * d)
    norm_ops, norm_params = (_RMSNORM, d) if samsa_enc else (_LAYERNORM, 2 * d)
    if samsa_enc:
        t.add("norms/other", params=1)  # the shared residual scale
    for i in range(layers):
        t.add("norms/other", ew=2 * norm_ops * n * d, params=2 * norm_params)
        t.add("norms/other", ew=(4 if samsa_enc else 2) * n * d)  # residual adds (and scales)
        n_in = 3 if mech.needs_qk else 1
        t.add("projections", mm=2 * n * d * qkv * (n_in + 1), params=d * qkv * (n_in + 1))
        call = dict(heads=heads, head_dim=hd, model_dim=d, layer_index=i)
        mech_params, mech_buffers = attention_params(name, hp, max_len=n, **call)
        buffers += mech_buffers
        shape = dict(n=n, m=n, train=train, batch=batch, masked=True, **call)
        mm = attention_flops(name, hp, elementwise=False, **shape)
        ew = attention_flops(name, hp, **shape) - mm
        t.add("attention", mm=mm, ew=ew, params=mech_params)
        _dense(t, "mlp", n, d, f)
        _dense(t, "mlp", n, f, d)
        t.add("mlp", ew=_GELU_TANH * n * f)
    t.add("norms/other", ew=norm_ops * n * d, params=norm_params)  # final norm
    if m.pool in ("mean", "sum"):
        t.add("norms/other", mm=2 * n * d, ew=d * (m.pool == "mean"))

    # Per example: `seqs` sequences through the encoder, then the head.
    for comp in COMPONENTS:
        t.flops[comp] *= seqs
    t.matmul *= seqs
    if dual:
        width = 4 * d if m.interaction == "NLI" else 2 * d
        t.add("head", ew=2 * d * (m.interaction == "NLI"))
        _dense(t, "head", 1, width, f)
        _dense(t, "head", 1, f, f // 2)
        _dense(t, "head", 1, f // 2, classes)
        t.add("head", ew=f + f // 2)  # ReLUs
    else:
        _dense(t, "head", 1, d, f)
        _dense(t, "head", 1, f, classes)
        t.add("head", ew=f)  # ReLU
    return Counts(
        params=int(sum(t.params.values())),
        buffers=int(buffers),
        flops=float(sum(t.flops.values())),
        matmul_flops=float(t.matmul),
        breakdown=dict(t.flops),
        param_breakdown=dict(t.params),
        sequences=seqs,
        length=n,
        batch=batch,
    )


# --------------------------------------------------------------------- SSA's compute accounting


def transformer_forward_flops(
    *,
    layers: int,
    d_model: int,
    d_ff: int | None = None,
    n_ctx: int,
    n_sources: int | Sequence[int] | None = None,
) -> float:
    """Forward FLOPs per token of `layers` transformer layers, as the SSA paper counts compute
    (papers/notes/ssa.md Sec. 1.5): `2·(4·d² + 2·d·d_ff)` per layer for the q/k/v/out and MLP
    matmuls (`2·12·d²` with d_ff = 4d) plus `4·N_src·d` for the attention scores and the
    weighted sum over N_src sources; 2 FLOPs per multiply-add, embeddings, norms and softmax
    ignored, the causal mask not discounted.

    Args:
      layers, d_model: depth and width; d_ff: MLP width (default 4·d_model).
      n_ctx: context length (the sources of a dense layer).
      n_sources: sources per target: None (dense, n_ctx), one int for every layer, or one per
        layer (SSA with w windows: n_ctx / w in the sampled layers).
    """
    d_ff = 4 * d_model if d_ff is None else d_ff
    if n_sources is None:
        n_sources = [n_ctx] * layers
    elif isinstance(n_sources, int):
        n_sources = [n_sources] * layers
    if len(n_sources) != layers:
        raise ValueError(f"n_sources has {len(n_sources)} entries for {layers} layers")
    dense = 2 * (4 * d_model * d_model + 2 * d_model * d_ff) * layers
    return float(dense + sum(4 * s * d_model for s in n_sources))


# The dense (S0) runs of SSA Table 7 (paper App. B; papers/notes/ssa.md Sec. 2.1-2.3). d_model
# 1024 is the fairseq transformer_lm_wiki103 width the models share (16 layers, FFN 4096).
SSA_RUNS: dict[str, dict[str, int]] = {
    # ALiBi decoder, input length 3072, 64,000 steps, batch 64 (App. B.1)
    "WikiText-103": dict(layers=16, d_model=1024, n_ctx=3072, steps=64_000, batch=64),
    # same decoder on bytes, input length 4096, 10,000 steps, batch 64 (App. B.1)
    "Enwik8": dict(layers=16, d_model=1024, n_ctx=4096, steps=10_000, batch=64),
    # 3072 sub-pixel tokens, 100,000 steps, batch 128 (App. B.2)
    "CIFAR-10": dict(layers=16, d_model=1024, n_ctx=3072, steps=100_000, batch=128),
}


def _ssa_sources(run: Mapping[str, int], windows: int, sampled_layers: int | None) -> list[int]:
    """Sources per layer: SSA with `windows` windows in the LAST `sampled_layers` layers
    (S<l>-L<w>; all layers when None)."""
    layers = run["layers"]
    sampled = layers if sampled_layers is None else sampled_layers
    if not 0 <= sampled <= layers:
        raise ValueError(f"sampled_layers={sampled_layers} for a {layers}-layer model")
    return [run["n_ctx"]] * (layers - sampled) + [run["n_ctx"] // windows] * sampled


def ssa_training_flops(run: str, *, windows: int = 1, sampled_layers: int | None = None) -> float:
    """Total training compute (forward FLOPs, SSA's convention) of `run` in `SSA_RUNS`:
    per-token FLOPs x steps x batch x context length."""
    r = SSA_RUNS[run]
    per_token = transformer_forward_flops(
        layers=r["layers"],
        d_model=r["d_model"],
        n_ctx=r["n_ctx"],
        n_sources=_ssa_sources(r, windows, sampled_layers),
    )
    return per_token * r["steps"] * r["batch"] * r["n_ctx"]


def ssa_table7() -> dict[str, float]:
    """SSA Table 7's baseline (S0) training compute of each run, in ExaFLOP (1e18)."""
    return {run: ssa_training_flops(run) / 1e18 for run in SSA_RUNS}


def ssa_compute_ratio(
    run: str, windows: int, *, sampled_layers: int | None = None, finetune: float = 0.0
) -> float:
    """The C column of SSA Tables 1-2: compute of S<l>-L<w> relative to the dense S0. With
    `finetune` (the dense "+FT" fraction of training, 0.1 in the paper) the total is
    `(1 - finetune)·C + finetune`."""
    ratio = ssa_training_flops(run, windows=windows, sampled_layers=sampled_layers)
    ratio /= ssa_training_flops(run)
    return (1.0 - finetune) * ratio + finetune
