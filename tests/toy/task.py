"""`toy.sets`: which of three token kinds is most frequent in a set of 3-24 tokens, and how
large is the set?

A test task outside LRA whose examples have different sizes, so it exercises the data path that
graph and point-cloud domains need: a per-example `transform` (a random permutation of the set,
which keeps the label, drawn from the stream's per-example Generator) and a `collate` that pads
each batch to the smallest of a few bucket lengths (8, 16, 24: jit compiles at most three train
shapes). Examples are generated from the config's seed; the model is the shared pre-LN encoder
with mean pooling over real tokens and two heads: the majority kind (cross-entropy) and the set
size, stored normalised as ZINC's targets are (squared error), so the `classification` and
`regression` evaluators (MAE de-normalised with SIZE_MEAN / SIZE_STD) both run.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import nnx

from attnbench import tasks
from attnbench.data import pipeline
from attnbench.nn import layers

BUCKETS = (8, 16, 24)
KINDS = 3
SIZE_MEAN, SIZE_STD = 13.5, 6.34  # of sizes uniform in 3..24


class Sets:
    """In-memory ragged examples: `tokens` of length 3..24 (ids 1..3), `label` in 0..2."""

    def __init__(self, n: int, seed: int):
        rng = np.random.default_rng(seed)
        sizes = rng.integers(3, BUCKETS[-1] + 1, n)
        self.tokens = [rng.integers(1, KINDS + 1, s).astype(np.int32) for s in sizes]
        self.labels = [int(np.argmax(np.bincount(t, minlength=KINDS + 1)[1:])) for t in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, i: int) -> dict:
        size = (len(self.tokens[i]) - SIZE_MEAN) / SIZE_STD
        return {
            "tokens": self.tokens[i],
            "label": np.int32(self.labels[i]),
            "target": np.float32(size),
        }


def permute(example: dict, rng: np.random.Generator) -> dict:
    """The transform: the set in a random order (the label does not change)."""
    return {**example, "tokens": rng.permutation(example["tokens"])}


def collate(examples: list) -> dict:
    """Pads every set to the batch's bucket length with token 0 (masked out)."""
    length = pipeline.pad_to_bucket(max(len(e["tokens"]) for e in examples), BUCKETS)
    tokens = np.zeros((len(examples), length), np.int32)
    for row, e in enumerate(examples):
        tokens[row, : len(e["tokens"])] = e["tokens"]
    return {
        "tokens": tokens,
        "label": np.array([e["label"] for e in examples], np.int32),
        "target": np.array([e["target"] for e in examples], np.float32),
    }


class Model(nnx.Module):
    def __init__(self, config, rngs):
        m = config.model
        self.embed = nnx.Embed(KINDS + 1, m.dim, rngs=rngs)
        self.encoder = layers.TransformerEncoder(
            num_layers=m.num_layers,
            dim=m.dim,
            num_heads=m.num_heads,
            qkv_dim=m.qkv_dim,
            mlp_dim=m.mlp_dim,
            dropout_rate=m.dropout,
            attention_cfg=config.attention,
            max_len=BUCKETS[-1],
            positions="none",  # a set: no order
            rngs=rngs,
        )
        self.head = nnx.Linear(m.dim, KINDS, rngs=rngs)
        self.size = nnx.Linear(m.dim, 1, rngs=rngs)

    def __call__(self, tokens, *, train=False, key=None, **inputs):
        """`(logits [B, KINDS], normalised size [B])`."""
        mask = tokens != 0
        x = self.encoder(self.embed(tokens), mask=mask, train=train, key=key, **inputs)
        pooled = layers.pool(x, mask, "sum") / BUCKETS[-1]  # a sum: the size is visible
        return self.head(pooled), self.size(pooled)[:, 0]


@tasks.register("toy.sets")
class ToySets(tasks.Task):
    metric_names = tasks.CLASSIFICATION_METRICS

    def attention_length(self, config) -> int:
        return BUCKETS[-1]

    def load_data(self, config) -> tasks.Data:
        d = config.data
        splits = [Sets(n, d.seed + i) for i, n in enumerate((d.num_train, d.num_val, d.num_test))]
        return tasks.Data(
            *splits,
            source="generated",
            description={"generator": "tests/toy/task.py", "seed": d.seed},
            transform=permute,
            collate=collate,
        )

    def build_model(self, config, rngs):
        return Model(config, rngs)

    def loss(self, model, batch, *, train: bool, key, **inputs):
        logits, size = model(jnp.asarray(batch["tokens"]), train=train, key=key, **inputs)
        loss, metrics = tasks.classification_loss(logits, batch["label"], batch["weight"])
        w = batch["weight"].astype(jnp.float32)
        sq = (size - batch["target"]) ** 2 * w
        return loss + sq.sum() / jnp.maximum(w.sum(), 1.0), metrics

    def eval_outputs(self, model, batch):
        """Per-example outputs for `config.evals` (attnbench/evaluators.py)."""
        logits, size = model(jnp.asarray(batch["tokens"]), train=False)
        return {"logits": logits, "prediction": size}
