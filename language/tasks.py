"""The causal language-modelling task registered with the trainer: `config.task = "language.lm"`.

A decoder (`language.models.build_decoder`: any mechanism that supports a causal mask) is
trained on windows of a token stream (`language.data.windows.TrainWindows`, a random offset per
window) with the mean next-token negative log-likelihood, and evaluated by the
`language_model` evaluator (`config.evals`) on sliding windows (`config.data.window_stride`:
every token scored once, with the most left context the windows give) or, for images, one
window per image. Data: `language.data.corpora` (`config.data.dataset`, `config.data.source`).

GPT-2 checkpoints: with `config.model.checkpoint` (a Hugging Face GPT-2 folder, `config.json` +
`model.safetensors`) `build_model` loads it with `language.gpt2.load_hf_gpt2` and the
config's attention section (softmax, or e.g. GFSA, whose w_K starts at 0 so the loaded model
is unchanged); the checkpoint's sizes replace the model section's. A missing folder, or a
checkpoint whose vocabulary or positions do not fit `config.data`, is a ConfigError.

Model-level self-ensemble (SSA Sec. 3.5, Tables 4, 10): `config.model.ensemble_passes = S > 0`
makes evaluation also average the predicted probabilities of S full forward passes with SSA's
subsampling on (`subsample=True`) and dropout off, keys from `config.model.ensemble_seed`:
nll = -log(mean_s p_s(target)), reported by a second evaluator as `<metric>_ensemble` beside
the dense ("renormalized") pass's metrics, which still pick the best checkpoint.
"""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from attnbench import errors, tasks
from language import (
    glue_task,  # noqa: F401  (registers language.glue with the trainer)
    gpt2,
    models,
)
from language.data import corpora, distaug, windows

__all__ = ["LanguageModelling", "lm_loss"]

IMAGE_START = 256  # the start symbol of an image sequence (language.data.windows.ImageWindows)


def lm_loss(nll, mask, weight):
    """Mean scored negative log-likelihood (nats) as `(loss, {"loss": (sum, count)})`."""
    m = mask.astype(jnp.float32) * weight.astype(jnp.float32)[:, None]
    total, count = (nll.astype(jnp.float32) * m).sum(), m.sum()
    return total / jnp.maximum(count, 1.0), {"loss": (total, count)}


def _input_vocab(config) -> int:
    """Tokens the decoder embeds: the corpus's, plus the start symbols for images (one, or one
    per DistAug condition: `language.data.distaug`); the output layer then has those classes more,
    never a target."""
    v = int(config.data.vocab_size)
    if config.data.dataset != "cifar10":
        return v
    return v + distaug.conditions(distaug.parse(config.data.get("distaug", "")))


def _load_checkpoint(config, checkpoint: str) -> models.Decoder:
    """The Hugging Face GPT-2 checkpoint in folder `checkpoint` with the config's attention;
    ConfigError for a missing folder or one whose model does not fit `config.data`."""
    if not os.path.isdir(os.path.expanduser(checkpoint)):
        raise errors.ConfigError(
            f"config.model.checkpoint={checkpoint!r}: no such folder; give a Hugging Face "
            "GPT-2 folder holding config.json and model.safetensors (e.g. the `gpt2` "
            "checkpoint), or '' to train from scratch"
        )
    model, loaded = gpt2.load_hf_gpt2(
        os.path.expanduser(checkpoint),
        attention_cfg=config.attention,
        dtype=str(config.model.get("dtype", "float32")),
    )
    vocab, length = _input_vocab(config), int(config.data.length)
    if int(loaded.vocab_size) != vocab:
        raise errors.ConfigError(
            f"config.data.vocab_size={config.data.vocab_size}, but the checkpoint "
            f"{checkpoint}/config.json has vocab_size {loaded.vocab_size}: set "
            f"--config.data.vocab_size={loaded.vocab_size} (and config.data.bpe_dir to its "
            "tokenizer)"
        )
    if length > int(loaded.max_len):
        raise errors.ConfigError(
            f"config.data.length={length} exceeds the {loaded.max_len} positions of the "
            f"checkpoint {checkpoint}/config.json (n_positions)"
        )
    return model


@tasks.register("language.lm")
class LanguageModelling(tasks.Task):
    """Next-token prediction on a corpus of `language.data.corpora`."""

    metric_names = ("loss",)

    def check_config(self, config) -> list[str]:
        d, out = config.data, []
        if int(d.length) < 1:
            out.append(f"config.data.length={d.length} must be >= 1")
        if not 0 < int(d.eval_stride) <= int(d.length):
            out.append(
                f"config.data.eval_stride={d.eval_stride}: between 1 and config.data.length "
                f"({d.length})"
            )
        if d.get("distaug", "") and d.dataset != "cifar10":
            out.append(
                f"config.data.distaug={d.distaug!r}: Distribution Augmentation applies to image "
                f"sequences (dataset cifar10), not {d.dataset}; set it to ''"
            )
        if config.best_mode != "min":
            out.append(f"config.best_mode={config.best_mode!r}: {config.best_metric} is min")
        return out

    def attention_length(self, config) -> int | None:
        return int(config.data.length)

    def load_data(self, config) -> tasks.Data:
        self.check(config)
        d = config.data
        corpus = corpora.load(d)
        if corpus.vocab_size != int(d.vocab_size):
            raise errors.ConfigError(
                f"config.data.vocab_size={d.vocab_size}, but the {corpus.source} "
                f"{d.dataset} corpus has {corpus.vocab_size} symbols: set "
                f"--config.data.vocab_size={corpus.vocab_size}"
            )
        length, stride = int(d.length), int(d.eval_stride)
        limit = int(d.get("eval_tokens", 0))  # 0 = the whole split

        def evaluation(name):
            split = corpus.splits[name]
            if corpus.is_images:
                return windows.ImageWindows(split[:limit] if limit else split)
            stream = split[: limit + 1] if limit else split
            return windows.SlidingWindows(stream, window=length, stride=stride, what=name)

        transform = None
        if corpus.is_images:
            train = windows.ImageWindows(corpus.splits["train"], start_token=IMAGE_START)
            if train[0]["tokens"].shape[0] != length:
                raise errors.ConfigError(
                    f"config.data.length={length}: {d.dataset} images are "
                    f"{train[0]['tokens'].shape[0]} sub-pixels long"
                )
            types = distaug.parse(d.get("distaug", ""))
            if types:  # Distribution Augmentation of the training images
                transform = distaug.DistAug(corpus.image_shape, types, start_token=IMAGE_START)
        else:
            train = windows.TrainWindows(corpus.splits["train"], length)
            transform = train.random_offset
        description = dict(corpus.description)
        description.update(unit=corpus.unit, window=length, eval_stride=stride)
        if limit:
            description["eval_tokens"] = limit
        if transform is not None and corpus.is_images:
            description["distaug"] = (
                f"{' + '.join(transform.types)}: {transform.num_conditions} start symbols; "
                "evaluation conditions on the identity"
            )
        return tasks.Data(
            train,
            evaluation("val"),
            evaluation("test"),
            source=corpus.source,
            description=description,
            transform=transform,
        )

    def build_model(self, config, rngs):
        self.check(config)
        checkpoint = str(config.model.get("checkpoint", "") or "")
        if checkpoint:
            model = _load_checkpoint(config, checkpoint)
        else:
            model = models.build_decoder(
                config.model,
                config.attention,
                vocab_size=_input_vocab(config),
                max_len=int(config.data.length),
                rngs=rngs,
            )
        # static settings of evaluation (module docstring), read by `eval_outputs`
        model.ensemble_passes = int(config.model.get("ensemble_passes", 0))
        model.ensemble_seed = int(config.model.get("ensemble_seed", 0))
        return model

    def _nll(self, model, batch, *, train: bool, key, **inputs):
        return model.nll(batch["tokens"], batch["targets"], train=train, key=key, **inputs)

    def loss(self, model, batch, *, train: bool, key, **inputs):
        nll = self._nll(model, batch, train=train, key=key, **inputs)
        return lm_loss(nll, batch["mask"], batch["weight"])

    def eval_outputs(self, model, batch):
        """Per-token nll (nats) of the dense ("renormalized") pass and the scored mask, for the
        `language_model` evaluator; with the model's `ensemble_passes`, also `nll_ensemble`,
        the self-ensemble's (a second evaluator reads it: both from one run)."""
        out = {"nll": self._nll(model, batch, train=False, key=None), "mask": batch["mask"]}
        passes = int(model.ensemble_passes)  # set by build_model
        if passes:
            keys = jax.random.split(jax.random.key(model.ensemble_seed), passes)
            each = jax.lax.map(
                lambda k: self._nll(model, batch, train=False, key=k, subsample=True), keys
            )  # [S, B, N]
            log_mean_p = jax.nn.logsumexp(-each.astype(jnp.float32), axis=0) - math.log(passes)
            out["nll_ensemble"] = -log_mean_p
        return out

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Random tokens of `config.data.length`, every position scored, for timing."""
        rng = np.random.default_rng(seed)
        n, v = int(config.data.length), int(config.data.vocab_size)
        tokens = rng.integers(0, v, (batch_size, n + 1)).astype(np.int32)
        return {
            "tokens": tokens[:, :-1],
            "targets": tokens[:, 1:],
            "mask": np.ones((batch_size, n), np.float32),
            "weight": np.ones(batch_size, np.float32),
        }
