"""Parameter and FLOP counts: every attention mechanism alone, and whole models.

    counts = flops.count(config_lib.load("lra/text.py:preset=paper,model=samsa"))
    counts.params, counts.flops, counts.breakdown["attention"]
    flops.attention_flops("softmax", {}, n=1024, m=1024, heads=8, head_dim=64)

Nothing here describes a model. Parameters are read off the built model (`nnx.eval_shape`
of the task's `build_model`: shapes only, nothing allocated). FLOPs come from formulas that
live beside what they count and walk that same built model:
  * each attention mechanism registers its formula with itself
    (`attention.register(..., flops=...)`; conventions in `attention.cost`);
  * each backbone registers its formula with itself (`attnbench.nn.backbones.register(name,
    flops=...)`: norms, projections, the mechanism call, MLP of every layer);
  * the model counts its own embedding, pooling and head: `model.count_flops(tally)` (e.g.
    `lra.models`), which says how many sequences an example runs through the encoder.
A new domain gets counts by registering its backbone's formula and giving its model a
`count_flops`; nothing in this file changes.

Conventions (those of `attention.cost`, applied to the whole model):
  * FLOPs are FORWARD FLOPs, 2 per multiply-add (the papers' convention; see `ssa_*` below).
  * Matmul FLOPs are exact for the code as written; elementwise FLOPs (norms, activations,
    softmax, masking selects, bias and residual adds) are approximate. `elementwise=False`
    gives matmul FLOPs alone.
  * Data movement is 0 FLOPs: embedding lookups, gathers, concatenation, top-k, sorting
    (Sliceformer's sorts: about n log2 n comparisons per channel, which XLA's cost analysis
    charges as ~(log2 n + 6) "flops" per element).
  * Loops (chunked attention, GRF's slot scan, SSA's ensemble) are counted in full, every
    iteration (XLA's cost analysis charges a loop body only once).
  * Per example: one classifier example is one sequence; a Retrieval example is TWO documents
    through the shared encoder. Work a call shares by its whole batch (the dense GRF mask of a
    fixed graph) is divided by the call's batch.
  * Unknown is NaN, never 0: a mechanism registered without a FLOP formula makes the
    attention component (and so the totals) NaN; a backbone without one, every component it
    fills. Parameters are exact either way.

`transformer_forward_flops` and the `ssa_*` functions reproduce the SSA paper's compute
accounting (SSA, arXiv 2306.01705: Table 7 and the C columns of Tables 1-2). The paper defines C
(Sec. 4.1) but not how it is counted; the formula below is our derivation, and it reproduces
every printed C to 2 decimals and Table 7's totals (`tests/attnbench/nn/test_flops.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
from flax import nnx

import attention
from attnbench import config as config_lib
from attnbench import tasks
from attnbench.nn import layers

__all__ = [
    "Counts",
    "COMPONENTS",
    "Tally",
    "attention_flops",
    "attention_params",
    "count",
    "transformer_forward_flops",
    "SSA_RUNS",
    "ssa_training_flops",
    "ssa_table7",
    "ssa_compute_ratio",
]


# ------------------------------------------------------------------------------ mechanisms


def _formula(name: str):
    """The registered FLOP formula of `name`; ValueError (listing the mechanisms that have one)
    when `name` is unknown or registered without one."""
    known = [n for n in attention.names() if attention.flops_formula(n) is not None]
    if name not in attention.names():
        raise ValueError(
            f"no FLOP formula for attention {name!r}; known mechanisms: {', '.join(known)}"
        )
    formula = attention.flops_formula(name)
    if formula is None:
        raise ValueError(
            f"attention {name!r} was registered without a FLOP formula "
            f"(attention.register(..., flops=...)); known mechanisms: {', '.join(known)}"
        )
    return formula


def _hparams(name: str, hparams: Mapping[str, Any] | None) -> dict[str, Any]:
    hp = {k: v for k, v in dict(hparams or {}).items() if k != "name"}
    return {**attention.defaults(name), **hp}


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
    """Forward FLOPs of one call of mechanism `name` on ONE sequence (n queries, m keys): the
    formula the mechanism registered (`attention.flops_formula`).

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
      ValueError: an unknown mechanism, or one registered without a FLOP formula (the message
        lists the mechanisms that have one).
    """
    formula = _formula(name)
    call = attention.cost.Call(
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
    mm, ew = formula(call, _hparams(name, hparams))
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
    """`(trainable parameters, buffer scalars)` of one layer's mechanism: the shapes its `init`
    returns (`jax.eval_shape`; q/k/v/out projections excluded). `max_len` is the sequence
    length the layer is built for (Linformer's E/F columns, GRF's frozen walks)."""
    hp = _hparams(name, hparams)
    mech = attention.get(name, **{k: v for k, v in hp.items() if k in attention.defaults(name)})
    arrays = dict(
        jax.eval_shape(
            lambda: mech.init(
                jax.random.key(0),
                num_heads=int(heads),
                head_dim=int(head_dim),
                model_dim=int(model_dim or heads * head_dim),
                max_len=max_len,
                layer_index=int(layer_index),
                num_layers=int(layer_index) + 1,  # the shallowest model with this layer
            )
        )
    )
    buffers = arrays.pop("buffers", {})
    size = lambda tree: sum(math.prod(x.shape) for x in jax.tree.leaves(tree))  # noqa: E731
    return size(arrays), size(buffers)


# ------------------------------------------------------------------------------ whole models

COMPONENTS = ("embedding", "attention", "projections", "mlp", "norms/other", "head")
_OTHER = "norms/other"  # where parameters no formula claims are counted


@dataclasses.dataclass(frozen=True)
class Counts:
    """Exact parameter count and forward FLOPs per example of a model.

    Attributes:
      params: trainable parameter scalars (`nnx.Param`) of the built model, exact.
      buffers: constant scalars (`attnbench.nn.layers.Buffer`: frozen random features/walks, SSA's
        sigma), not trained.
      flops: forward FLOPs per example (matmul exact + elementwise approximate); NaN when a
        part has no formula (see the module docstring).
      matmul_flops: the matmul part of `flops` alone.
      breakdown: FLOPs per example by component (`COMPONENTS`); sums to `flops`.
      param_breakdown: parameters by component, as the formulas claim them (parameters no
        formula claims count as "norms/other"); sums to `params`.
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


def _variables(node) -> list:
    if isinstance(node, nnx.Variable):
        return [node]
    return [v for _, v in nnx.iter_graph(node) if isinstance(v, nnx.Variable)]


class Tally:
    """What the FLOP formulas of one model add to: forward FLOPs per example by component, and
    the component each parameter of the built model belongs to.

    Attributes:
      train: the training forward is counted.
      examples: examples per batch.
      elementwise: elementwise FLOPs are counted (else matmuls alone).
      sequences, length: sequences per example through the encoder, and tokens in each
        (set by `per_sequence`).
    """

    def __init__(self, *, train: bool, examples: int, elementwise: bool):
        self.train, self.examples, self.elementwise = bool(train), int(examples), elementwise
        self.sequences, self.length = 1, 0
        self.flops = dict.fromkeys(COMPONENTS, 0.0)
        self.matmul = 0.0
        self._times = 1  # sequences per example while counting per-sequence work
        self._claims: dict[int, str] = {}

    @property
    def batch(self) -> int:
        """Sequences in one mechanism call (for work the whole call shares)."""
        return self.examples * self.sequences

    @contextlib.contextmanager
    def per_sequence(self, sequences: int, length: int):
        """Inside, work is added per sequence: `sequences` of `length` tokens make an example
        (the Retrieval dual encoder runs two documents through one encoder)."""
        self.sequences, self.length, self._times = int(sequences), int(length), int(sequences)
        try:
            yield self
        finally:
            self._times = 1

    def add(self, component: str, matmul: float = 0.0, elementwise: float = 0.0) -> None:
        """Adds FLOPs to `component` (one of `COMPONENTS`)."""
        if component not in self.flops:
            raise ValueError(f"unknown component {component!r}; known: {', '.join(COMPONENTS)}")
        self.flops[component] += (matmul + (elementwise if self.elementwise else 0.0)) * self._times
        self.matmul += matmul * self._times

    def claim(self, component: str, node) -> None:
        """Counts the parameters of `node` (a module, a pytree of variables, a variable) in
        `component`; a parameter already claimed keeps its first component."""
        for v in _variables(node):
            self._claims.setdefault(id(v), component)

    def linear(self, component: str, module, tokens: int) -> None:
        """An `nnx.Linear` / `nnx.LinearGeneral` on `tokens` tokens: the matmul, the bias add,
        and its parameters."""
        self.claim(component, module)
        bias = 0 if module.bias is None else math.prod(module.bias.shape)
        self.add(component, 2 * tokens * math.prod(module.kernel.shape), tokens * bias)

    def mechanism(
        self,
        mechanism: attention.Mechanism,
        *,
        n: int,
        m: int,
        heads: int,
        head_dim: int,
        value_dim: int | None = None,
        model_dim: int,
        layer_index: int,
        masked: bool,
    ) -> None:
        """One call of a bound mechanism on one sequence, by its registered formula (NaN, as
        unknown, when it has none), into "attention"."""
        if mechanism.flops is None:
            self.add("attention", math.nan, math.nan)
            return
        call = attention.cost.Call(
            n=n,
            m=m,
            h=heads,
            dk=head_dim,
            dv=value_dim or head_dim,
            d_model=model_dim,
            batch=self.batch,
            train=self.train,
            layer_index=layer_index,
            masked=masked,
        )
        mm, ew = mechanism.flops(call)
        self.add("attention", mm, ew)

    def parameters(self, model) -> tuple[int, int, dict[str, int]]:
        """`(params, buffer scalars, params by component)` of the built `model`."""
        params, buffers, by_component = 0, 0, dict.fromkeys(COMPONENTS, 0)
        for v in _variables(model):
            size = math.prod(v.shape)
            if isinstance(v, nnx.Param):
                params += size
                by_component[self._claims.get(id(v), _OTHER)] += size
            elif isinstance(v, layers.Buffer):
                buffers += size
        return params, buffers, by_component


def count(
    config, *, train: bool = False, batch: int | None = None, elementwise: bool = True
) -> Counts:
    """Parameters and forward FLOPs per example of the model `config` builds.

    The model is built abstractly (`nnx.eval_shape`); its parameters are counted from it, its
    FLOPs by its own `count_flops(tally)` with the formulas of its backbone and mechanism.

    Args:
      config: a task config (`attnbench.config.load("lra/<task>.py:...")`).
      train: count the training forward (mechanisms that sample; dropout is not counted).
      batch: examples per batch for batch-shared work; default `config.batch_size` (a call
        sees that times the sequences per example).
      elementwise: include the approximate elementwise FLOPs.

    Raises:
      ValueError: the task's model has no `count_flops` method.
    """
    task = tasks.get(config.task)
    config = config_lib.resolve(config)  # counts do not depend on the compute dtype
    model = nnx.eval_shape(lambda: task.build_model(config, nnx.Rngs(params=config.seed)))
    if not hasattr(model, "count_flops"):
        raise ValueError(
            f"count: {type(model).__name__} (task {config.task}) has no FLOP formula: give it "
            "a `count_flops(tally)` method (see attnbench.nn.flops)"
        )
    tally = Tally(train=train, examples=int(batch or config.batch_size), elementwise=elementwise)
    model.count_flops(tally)
    params, buffers, param_breakdown = tally.parameters(model)
    return Counts(
        params=params,
        buffers=buffers,
        flops=float(sum(tally.flops.values())),
        matmul_flops=float(tally.matmul),
        breakdown=dict(tally.flops),
        param_breakdown=param_breakdown,
        sequences=tally.sequences,
        length=tally.length,
        batch=tally.batch,
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
    (our derivation; it reproduces SSA's Table 7 and C columns): `2·(4·d² + 2·d·d_ff)` per
    layer for the q/k/v/out and MLP matmuls (`2·12·d²` with d_ff = 4d) plus `4·N_src·d` for the
    attention scores and the weighted sum over N_src sources; 2 FLOPs per multiply-add,
    embeddings, norms and softmax ignored, the causal mask not discounted.

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


# The dense (S0) runs of SSA Table 7 (SSA, arXiv 2306.01705, App. B.1-B.2). d_model
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
