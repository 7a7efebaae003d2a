"""GLUE fine-tuning registered with the trainer: `config.task = "language.glue"`.

A BERT / RoBERTa (or ALBERT) encoder with a sequence-classification head
(`language.backbones.encoder_bert.BertEncoderModel`; ALBERT through `language.hf_albert`) is
trained on one GLUE task, sentence or sentence pair, as HF `run_glue_no_trainer` does (the
script GFSA's authors ran, jeongwhanchoi/GFSA `NLP/run_glue_no_trainer.py`): softmax
cross-entropy over the task's labels, or for STS-B (regression, one output) the mean squared
error of the output against the score (HF's `problem_type="regression"`: `MSELoss` on
`logits.squeeze()`). The recipe is `configs/language/glue.py`.

Data (`config.data`):
  task       cola | sst2 | mrpc | qqp | stsb | mnli | mnli-mm | qnli | rte | wnli; "mnli-mm" is
             MNLI trained the same way and tested on the mismatched dev split.
  source     "official": the GLUE release under `dir` (default `<data root>/glue`, where
             `attnbench-data fetch glue` puts the original TSV release), the original
             TSV folders or the nyu-mll/glue parquet files, auto-detected by
             `language.data.glue.load` (`format` = "tsv" / "parquet" forces one;
             `skip_malformed` skips and counts broken TSV rows). "standin": the offline
             mini-GLUE of `language.data.glue_standin` (Python documentation sentences; NOT
             GLUE), sizes `standin_train` / `standin_val` / `standin_test`, seed
             `standin_seed`, vocabulary `standin_vocab`, folder `standin_dir`.
  Splits: GFSA reports the GLUE dev sets (there are no test labels), so the dev split is the
  run's test split (`test_last` = the model after the last epoch, as the authors' script logs
  it), MNLI's `validation_matched` (mnli) or `validation_mismatched` (mnli-mm); it is also the
  validation split evaluated after every epoch, as the script does (MNLI: matched). The
  stand-in has separate val and test documents.
  Tokens: `language.data.glue.encode` (HF's truncation "longest_first" to `max_length`, padded
  to it); the padding is the encoder's key-padding mask (`attention_mask`).

Model (`config.model`):
  checkpoint  a Hugging Face folder (`config.json` + `model.safetensors` + the tokenizer
              files): BERT / RoBERTa through `language.hf_encoders.load_hf_encoder` with the
              config's attention section (GFSA's w_K starts at 0, so with w0 = 0 the loaded
              model is the checkpoint's at step 0), ALBERT (`model_type` "albert") through
              `language.hf_albert.load_hf_albert`. Its sizes replace the model section's. The
              tokenizer comes from the same folder (or `config.data.tokenizer_dir`):
              `vocab.txt` -> WordPiece (lowercased unless `tokenizer_config.json` says
              `do_lower_case: false`), `vocab.json` + `merges.txt` -> byte-level BPE, else
              `tokenizer.json` (`tokenizers.Tokenizer.from_file`; ALBERT's own
              `hf_albert.albert_tokenizer` where it exists).
  ""          (no checkpoint) an encoder drawn fresh from the model section (`family`
              "bert" / "roberta": `encoder_bert.settings` fields; "albert":
              `encoder_albert.settings` fields), the stand-in's use; on the stand-in the
              tokenizer is its own WordPiece, in RoBERTa's pair layout for family "roberta".
  family      bert | roberta | albert: must agree with the checkpoint's `model_type`. ALBERT's
              modules (`language.hf_albert`, `language.backbones.encoder_albert`) are imported
              only when used; where they are absent, a ConfigError says so.
Checked before training: `max_length` against the model's positions, every token id against
its vocabulary, token types against its type vocabulary (JAX would clamp them silently), and,
for RoBERTa's positions counted from the padding, the tokenizer's pad id against the model's.

Evaluation: the `glue` evaluator (registered here) collects the predictions (argmax, or the
output for STS-B) of the real examples and reports the task's metrics through
`language.glue_metrics.task_metrics` under the names the tables read: `mcc` (CoLA), `f1` and
`accuracy` (MRPC, QQP), `spearman` and `pearson` (STS-B), `accuracy` (the others), and `loss`
(cross-entropy or MSE). A correlation of constant predictions is undefined: NaN (as scipy).
`config.best_metric` is the task's primary metric (`glue_metrics.primary`).

Deliberate differences from `run_glue_no_trainer`: sequences are padded to `max_length`
instead of to the longest in the batch (the same outputs, since the padding is masked; more
compute), and dropout masks are drawn from JAX keys.
"""

from __future__ import annotations

import importlib
import json
import os
import pathlib

import jax.numpy as jnp
import numpy as np

from attnbench import errors, evaluators, tasks
from attnbench.data import cache, catalog
from language import glue_metrics, hf_encoders
from language.backbones import encoder_bert
from language.data import glue, glue_standin

__all__ = [
    "TASKS",
    "FAMILIES",
    "METRIC_NAMES",
    "glue_name",
    "metrics_of",
    "primary_metric",
    "GlueEvaluator",
    "Glue",
    "checkpoint_tokenizer",
    "encoder_settings",
]

TASKS = (*glue.TASKS, "mnli-mm")
FAMILIES = ("bert", "roberta", "albert")
# What the GLUE folder holds, for the missing-folder errors: either release (language.data.glue)
GLUE_HOLDING = (
    "the task folders of the original TSV release (CoLA/, SST-2/, ..., RTE/) or the nyu-mll/glue "
    "parquet files (<task>/<split>-*.parquet)"
)
# language.glue_metrics' names -> the summary's (attnbench.evaluators.METRICS)
METRIC_NAMES = {
    "matthews_correlation": "mcc",
    "f1": "f1",
    "accuracy": "accuracy",
    "spearmanr": "spearman",
    "pearson": "pearson",
}
_METRIC_FUNCS = {
    "matthews_correlation": glue_metrics.matthews_corrcoef,
    "f1": glue_metrics.f1,
    "accuracy": glue_metrics.accuracy,
    "spearmanr": glue_metrics.spearman,
    "pearson": glue_metrics.pearson,
}


def glue_name(task: str) -> str:
    """The `glue.TASKS` name of a config task ("mnli-mm" is "mnli")."""
    return "mnli" if task == "mnli-mm" else task


def metrics_of(task: str) -> tuple[str, ...]:
    """The summary names of the metrics `task` reports, its primary metric first."""
    return tuple(METRIC_NAMES[m] for m in glue_metrics.TASK_METRICS[glue_name(task)])


def primary_metric(task: str) -> str:
    """The summary name of the metric GFSA's Table 1 prints for `task`."""
    return METRIC_NAMES[glue_metrics.primary(glue_name(task))]


def _check_task(task) -> None:
    if task not in TASKS:
        raise errors.ConfigError(f"unknown GLUE task {task!r}; known: {', '.join(TASKS)}")


@evaluators.register("glue")
class GlueEvaluator(evaluators.Evaluator):
    """`outputs[logits]` `[B, C]` against `batch[labels]`: the GLUE metrics of `task` over the
    real (weight > 0) examples (module docstring), and the loss."""

    def __init__(self, *, task: str, logits: str = "logits", labels: str = "label"):
        _check_task(task)
        self.task = glue_name(task)
        self.regression = glue.TASKS[self.task].is_regression
        self.keys = (logits, labels)
        self.reports = (*metrics_of(task), "loss")
        self.predictions: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.loss_sum, self.n = 0.0, 0

    def update(self, outputs, batch) -> None:
        keep = np.asarray(batch["weight"]) > 0
        logits = np.asarray(outputs[self.keys[0]], np.float64)[keep]
        labels = np.asarray(batch[self.keys[1]])[keep]
        if not len(labels):
            return
        if self.regression:
            pred = logits[:, 0]
            labels = labels.astype(np.float64)
            self.loss_sum += float(np.sum((pred - labels) ** 2))
        else:
            labels = labels.astype(np.int64)
            shifted = logits - logits.max(-1, keepdims=True)
            log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
            self.loss_sum += float(-log_probs[np.arange(len(labels)), labels].sum())
            pred = logits.argmax(-1)
        self.predictions.append(pred)
        self.labels.append(labels)
        self.n += len(labels)

    def result(self) -> dict[str, float]:
        if not self.n:
            return {name: float("nan") for name in self.reports}
        pred, labels = np.concatenate(self.predictions), np.concatenate(self.labels)
        out = {}
        for name in glue_metrics.TASK_METRICS[self.task]:
            try:
                out[METRIC_NAMES[name]] = _METRIC_FUNCS[name](pred, labels)
            except ValueError:  # a correlation of a constant vector: undefined
                out[METRIC_NAMES[name]] = float("nan")
        out["loss"] = self.loss_sum / self.n
        return out

    def reference(self) -> dict[str, float]:
        """The majority-class rate of the evaluated labels (classification tasks)."""
        if self.regression or not self.n:
            return {}
        counts = np.bincount(np.concatenate(self.labels))
        return {"majority_class_rate": float(counts.max() / self.n)}


# ------------------------------------------------------------------------- checkpoints


def _checkpoint_dir(config) -> pathlib.Path | None:
    """`config.model.checkpoint` as a folder, None when empty; ConfigError when missing."""
    given = str(config.model.get("checkpoint", "") or "")
    if not given:
        return None
    path = pathlib.Path(os.path.expanduser(given))
    if not path.is_dir():
        raise errors.ConfigError(
            f"config.model.checkpoint={given!r}: no such folder; give a Hugging Face BERT / "
            "RoBERTa / ALBERT folder holding config.json, model.safetensors and the tokenizer "
            "files (e.g. bert-base-uncased under the data root, which checkpoint=auto reads), "
            "or checkpoint=none for an encoder from scratch"
        )
    return path


def _hf_config(directory: pathlib.Path) -> dict:
    """The checkpoint's config.json, checked (`hf_encoders.read_config` for BERT / RoBERTa)."""
    path = directory / "config.json"
    if not path.is_file():
        raise errors.DataError(
            f"{path}: no such file; a Hugging Face checkpoint folder holds config.json and "
            "model.safetensors (save_pretrained)"
        )
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a JSON file ({e})") from None
    if not isinstance(raw, dict):
        raise errors.DataError(f"{path}: not a JSON object")
    if raw.get("model_type") == "albert":
        return _albert().read_config(directory)
    if raw.get("model_type") not in hf_encoders.MODEL_TYPES:
        raise errors.DataError(
            f"{path}: model_type={raw.get('model_type')!r} is not supported; known: "
            f"{', '.join((*hf_encoders.MODEL_TYPES, 'albert'))}"
        )
    return hf_encoders.read_config(directory)


def _albert(module: str = "language.hf_albert"):
    """`language.hf_albert` (or `language.backbones.encoder_albert`), imported lazily, or a
    ConfigError where it does not exist yet."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            raise errors.ConfigError(
                f"ALBERT is not available yet: {module.replace('.', '/')}.py is not in this "
                "version; use encoder=bert or encoder=roberta"
            ) from None
        raise


def _lowercase(directory: pathlib.Path) -> bool:
    """`do_lower_case` of the folder's tokenizer_config.json (HF BertTokenizer's default:
    True)."""
    path = directory / "tokenizer_config.json"
    if not path.is_file():
        return True
    try:
        value = json.loads(path.read_text()).get("do_lower_case", True)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as e:
        raise errors.DataError(f"{path}: not a JSON object ({e})") from None
    return bool(value)


def _tokenizer_json(path: pathlib.Path):
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 (the Rust parser's errors are not exported)
        raise errors.DataError(f"{path}: not a tokenizers JSON file ({e})") from None
    if tok.padding is None:
        vocab = tok.get_vocab()
        pad = next((p for p in ("[PAD]", "<pad>") if p in vocab), None)
        if pad is None:
            raise errors.DataError(
                f"{path}: no padding configured and no [PAD] / <pad> token in its vocabulary"
            )
        tok.enable_padding(pad_id=vocab[pad], pad_token=pad)
    return tok


def checkpoint_tokenizer(directory, model_type: str | None = None):
    """The tokenizer of a Hugging Face folder (module docstring: vocab.txt, vocab.json +
    merges.txt, tokenizer.json; ALBERT's own loader first where it exists)."""
    d = pathlib.Path(directory)
    if model_type == "albert":
        own = getattr(_albert(), "albert_tokenizer", None)
        if own is not None:
            return own(d)
    if (d / "vocab.txt").is_file():
        return glue.wordpiece_tokenizer(d / "vocab.txt", lowercase=_lowercase(d))
    if (d / "vocab.json").is_file() and (d / "merges.txt").is_file():
        return glue.byte_level_bpe_tokenizer(d / "vocab.json", d / "merges.txt")
    if (d / "tokenizer.json").is_file():
        return _tokenizer_json(d / "tokenizer.json")
    raise errors.DataError(
        f"{d}: no tokenizer files: expected vocab.txt (WordPiece), vocab.json + merges.txt "
        "(byte-level BPE) or tokenizer.json; download them with the checkpoint"
    )


_SIZES = ("vocab_size", "dim", "num_layers", "num_heads", "mlp_dim", "max_positions")


def encoder_settings(model_cfg, num_labels: int) -> dict:
    """The settings of a fresh encoder of the model section (its encoder fields) with
    `num_labels` outputs: `encoder_bert.settings` (family bert / roberta) or
    `encoder_albert.settings` (family albert, its `embedding_dim` besides)."""
    m = model_cfg.to_dict() if hasattr(model_cfg, "to_dict") else dict(model_cfg)
    if m.get("family") == "albert":
        module = _albert("language.backbones.encoder_albert")
        fields = (*_SIZES, "embedding_dim", *module.DEFAULTS)
    else:
        module, fields = encoder_bert, (*_SIZES, *encoder_bert.DEFAULTS)
    picked = {k: m[k] for k in fields if k in m}
    picked["num_labels"] = int(num_labels)
    return module.settings(picked)


def _limits(config, checkpoint: pathlib.Path | None, num_labels: int) -> dict:
    """The model's vocabulary, type vocabulary, longest input, position scheme and pad id."""
    if checkpoint is None:
        s = encoder_settings(config.model, num_labels)
        where = "config.model"
    else:
        hf = _hf_config(checkpoint)
        where = str(checkpoint / "config.json")
        if hf["model_type"] == "albert":
            s = _albert().settings_from_config(hf, num_labels)
        else:
            s = hf_encoders.settings_from_config(hf, num_labels)
    scheme = s.get("position_ids", "sequential")  # ALBERT: 0..N-1
    return dict(
        vocab_size=int(s["vocab_size"]),
        type_vocab_size=int(s["type_vocab_size"]),
        max_len=(
            encoder_bert.BertEncoderModel.max_sequence_length(s)
            if "position_ids" in s
            else int(s["max_positions"])
        ),
        position_ids=scheme,
        pad_token_id=int(s["pad_token_id"]),
        where=where,
    )


def _where(path: pathlib.Path) -> str:
    """`path`, relative to the data root where it lies under it (no machine paths)."""
    try:
        return f"<data root>/{path.resolve().relative_to(cache.data_root().resolve())}"
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------- the task


@tasks.register("language.glue")
class Glue(tasks.Task):
    """One GLUE task (or its stand-in) fine-tuned on a BERT-family encoder."""

    metric_names = ("loss",)

    def check_config(self, config) -> list[str]:
        d, m, out = config.data, config.model, []
        if d.get("task") not in TASKS:
            out.append(f"config.data.task={d.get('task')!r}: unknown; known: {', '.join(TASKS)}")
        if d.get("source") not in ("official", "standin"):
            out.append(f"config.data.source={d.get('source')!r}: known: official, standin")
        if d.get("format", "") not in ("", "tsv", "parquet"):
            out.append(f"config.data.format={d.get('format')!r}: '' (auto), 'tsv' or 'parquet'")
        length = d.get("max_length")
        if not isinstance(length, int) or isinstance(length, bool) or length < 4:
            out.append(f"config.data.max_length={length!r}: >= 4 (room for the special tokens)")
        if m.get("family") not in FAMILIES:
            out.append(f"config.model.family={m.get('family')!r}: known: {', '.join(FAMILIES)}")
        if not m.get("checkpoint") and int(m.get("vocab_size", 0) or 0) < 1:
            out.append(
                f"config.model.vocab_size={m.get('vocab_size')!r}: an encoder without a "
                "checkpoint needs its vocabulary size (>= the tokenizer's)"
            )
        if float(config.get("dense_finetune_fraction", 0.0) or 0.0):
            out.append(
                f"config.dense_finetune_fraction={config.dense_finetune_fraction}: SSA's dense "
                "fine-tuning phase is not a GLUE recipe; set it to 0"
            )
        if config.get("best_mode") != "max":
            out.append(f"config.best_mode={config.get('best_mode')!r}: GLUE metrics are 'max'")
        return out

    def attention_length(self, config) -> int | None:
        return int(config.data.max_length)

    # ---- data ----------------------------------------------------------------------------

    def _tokenizer(self, config, checkpoint, standin):
        d = config.data
        given = str(d.get("tokenizer_dir", "") or "")
        if given:
            folder = pathlib.Path(os.path.expanduser(given))
            if not folder.is_dir():
                raise errors.ConfigError(
                    f"config.data.tokenizer_dir={given!r}: no such folder (a folder holding "
                    "vocab.txt, vocab.json + merges.txt or tokenizer.json)"
                )
            return checkpoint_tokenizer(folder), f"tokenizer files of {_where(folder)}"
        if checkpoint is not None:
            kind = _hf_config(checkpoint)["model_type"]
            return checkpoint_tokenizer(checkpoint, kind), f"tokenizer of {_where(checkpoint)}"
        if standin is not None:
            layout = "roberta" if config.model.family == "roberta" else "bert"
            return standin.tokenizer(layout), f"the stand-in's WordPiece ({layout} pair layout)"
        raise errors.ConfigError(
            "official GLUE text needs a tokenizer: give config.model.checkpoint (its folder's "
            "tokenizer) or config.data.tokenizer_dir"
        )

    def load_data(self, config) -> tasks.Data:
        self.check(config)
        d = config.data
        name, base = d.task, glue_name(d.task)
        t = glue.TASKS[base]
        checkpoint = _checkpoint_dir(config)
        if d.source == "standin":
            sizes = dict(train=d.standin_train, val=d.standin_val, test=d.standin_test)
            s = glue_standin.build(
                base,
                seed=int(d.standin_seed),
                sizes=sizes,
                vocab_size=int(d.standin_vocab),
                source_dir=str(d.get("standin_dir", "") or "") or None,
            )
            test_name = "test_mismatched" if name == "mnli-mm" else "test"
            splits = {
                "train": s.splits["train"],
                "val": s.splits["val"],
                "test": s.splits[test_name],
            }
            tokenizer, how = self._tokenizer(config, checkpoint, s)
            description = dict(s.description)
        else:
            # config.data.dir, else the catalog's folder (<data root>/glue) once fetched; a
            # DataError naming `attnbench-data fetch glue` when neither is there
            root = pathlib.Path(catalog.official_dir("glue", d.dir, holding=GLUE_HOLDING))
            root = root.expanduser()
            if not root.is_dir():
                raise errors.DataError(
                    f"{root}: GLUE data folder not found (config.data.dir); fetch the original "
                    "TSV release with `attnbench-data fetch glue` and leave config.data.dir "
                    f"empty, or set it to the folder holding {GLUE_HOLDING}"
                )
            dev = "validation_matched" if base == "mnli" else "validation"
            test_split = "validation_mismatched" if name == "mnli-mm" else dev
            kw = dict(source=d.get("format", "") or None, skip_malformed=bool(d.skip_malformed))
            splits = {"train": glue.load(base, "train", root, **kw)}
            splits["val"] = glue.load(base, dev, root, **kw)
            splits["test"] = (
                splits["val"] if test_split == dev else glue.load(base, test_split, root, **kw)
            )
            tokenizer, how = self._tokenizer(config, checkpoint, None)
            description = dict(
                dataset=f"GLUE {name}",
                format=splits["train"].source,
                dir=_where(root) if not d.dir else str(root),
                splits={"train": "train", "val": dev, "test": test_split},
                note="GLUE dev is the validation and the test split (no test labels)",
            )
            skipped = {k: len(v.skipped_lines) for k, v in splits.items() if v.skipped_lines}
            if skipped:
                description["skipped_malformed_rows"] = skipped
        limits = _limits(config, checkpoint, t.num_labels)
        length = int(d.max_length)
        if length > limits["max_len"]:
            raise errors.ConfigError(
                f"config.data.max_length={length} exceeds the {limits['max_len']} positions of "
                f"the model ({limits['where']})"
            )
        pad = tokenizer.padding["pad_id"]
        if limits["position_ids"] == "from_padding" and pad != limits["pad_token_id"]:
            raise errors.DataError(
                f"the tokenizer pads with id {pad} but the model ({limits['where']}) counts "
                f"positions from pad_token_id {limits['pad_token_id']}: is the tokenizer from "
                "this checkpoint?"
            )
        arrays, full, done = {}, {}, {}
        for key, split in splits.items():  # the dev split once where it is val and test
            if id(split) not in done:
                done[id(split)] = _encode(split, tokenizer, length, limits, t)
            arrays[key], full[key] = done[id(split)]
        description.update(
            tokenizer=how,
            max_length=length,
            at_max_length=full,  # examples that fill max_length (cut, or exactly that long)
            num_labels=t.num_labels,
        )
        return tasks.Data(
            tasks.Split(arrays["train"]),
            tasks.Split(arrays["val"]),
            tasks.Split(arrays["test"]),
            source=d.source,
            description=description,
        )

    # ---- model ---------------------------------------------------------------------------

    def build_model(self, config, rngs):
        self.check(config)
        labels = glue.TASKS[glue_name(config.data.task)].num_labels
        checkpoint = _checkpoint_dir(config)
        family = config.model.family
        dtype = str(config.model.get("dtype", "float32"))
        if checkpoint is not None:
            kind = _hf_config(checkpoint)["model_type"]
            if kind != family:
                raise errors.ConfigError(
                    f"config.model.family={family!r} but {checkpoint}/config.json is a {kind} "
                    f"checkpoint; pass encoder={kind} (or --config.model.family={kind})"
                )
            load = _albert().load_hf_albert if kind == "albert" else hf_encoders.load_hf_encoder
            model, _ = load(
                checkpoint,
                num_labels=labels,
                attention_cfg=config.attention,
                dtype=dtype,
                seed=int(config.seed),
                # ContraNorm (Table 1's "+ ContraNorm"): no parameters, so the model section's
                # settings go into the checkpoint's model
                contranorm=encoder_bert.contranorm_settings(config.model),
            )
            return model
        s = encoder_settings(config.model, labels)
        if family == "albert":
            encoder = _albert("language.backbones.encoder_albert").AlbertEncoderModel
        else:
            encoder = encoder_bert.BertEncoderModel
        return encoder(s, config.attention, rngs=rngs)

    # ---- steps ---------------------------------------------------------------------------

    def _logits(self, model, batch, *, train: bool, key):
        return model(
            batch["input_ids"],
            attention_mask=batch["attention_mask"],
            token_type_ids=batch["token_type_ids"],
            train=train,
            key=key,
        )

    def loss(self, model, batch, *, train: bool, key, **inputs):
        if inputs:
            raise errors.ConfigError(f"language.glue takes no attention inputs, got {inputs}")
        logits = self._logits(model, batch, train=train, key=key)
        if logits.shape[-1] == 1:  # STS-B: HF's regression, MSE on the one output
            weight = batch["weight"].astype(jnp.float32)
            err = (logits[:, 0].astype(jnp.float32) - batch["label"].astype(jnp.float32)) ** 2
            total, count = (err * weight).sum(), weight.sum()
            return total / jnp.maximum(count, 1.0), {"loss": (total, count)}
        return tasks.classification_loss(logits, batch["label"], batch["weight"])

    def eval_outputs(self, model, batch) -> dict:
        return {"logits": self._logits(model, batch, train=False, key=None)}

    def default_evals(self, config) -> dict:
        return {"glue": {"type": "glue", "task": config.data.task}}

    def example_batch(self, config, batch_size: int, seed: int = 0) -> dict:
        """Random token ids over the model section's vocabulary at `max_length`."""
        rng = np.random.default_rng(seed)
        n = int(config.data.max_length)
        vocab = max(int(config.model.get("vocab_size", 0) or 0), 2)
        t = glue.TASKS[glue_name(config.data.task)]
        label = (
            rng.uniform(0, 5, batch_size).astype(np.float32)
            if t.is_regression
            else rng.integers(0, t.num_labels, batch_size).astype(np.int32)
        )
        return {
            "input_ids": rng.integers(1, vocab, (batch_size, n)).astype(np.int32),
            "attention_mask": np.ones((batch_size, n), np.uint8),
            "token_type_ids": np.zeros((batch_size, n), np.uint8),
            "label": label,
            "weight": np.ones(batch_size, np.float32),
        }


def _encode(split: glue.GlueSplit, tokenizer, length: int, limits: dict, t: glue.GlueTask):
    """The arrays of one split and how many of its examples fill `length`; DataError for ids
    or token types outside the model's tables, or a split without labels."""
    if split.labels is None:
        raise errors.DataError(
            f"{split.path}: GLUE {split.task} {split.split} has no labels (a test split?)"
        )
    enc = glue.encode(split, tokenizer, max_length=length)
    ids, types = enc["input_ids"], enc["token_type_ids"]
    if ids.size and int(ids.max()) >= limits["vocab_size"]:
        raise errors.DataError(
            f"the tokenizer gives token id {int(ids.max())} on {split.task} {split.split}, but "
            f"the model ({limits['where']}) has {limits['vocab_size']} token embeddings: is the "
            "tokenizer from this checkpoint?"
        )
    if types.size and int(types.max()) >= limits["type_vocab_size"]:
        raise errors.DataError(
            f"the tokenizer gives token type {int(types.max())} on {split.task} {split.split}, "
            f"but the model ({limits['where']}) has {limits['type_vocab_size']} token types: "
            "is the tokenizer from this checkpoint?"
        )
    label = split.labels.astype(np.float32 if t.is_regression else np.int32)
    arrays = {
        "input_ids": ids.astype(np.int32),
        "attention_mask": enc["attention_mask"].astype(np.uint8),
        "token_type_ids": types.astype(np.uint8),
        "label": label,
    }
    return arrays, int(np.count_nonzero(enc["attention_mask"][:, -1])) if len(ids) else 0
