"""timm's released ViT / DeiT, CaiT and Swin checkpoints loaded into
`vision.models.ImageClassifier`.

    model = task.build_model(config, rngs)  # vision.tasks loads config.model.checkpoint, if set
    info = timm_checkpoints.load_timm("hub/deit_small_patch16_224", model, config.model,
                                      mean=config.data.mean, std=config.data.std)
    model, info = timm_checkpoints.build_loaded(build, path, config.model, rngs)  # build(rngs)

`load_timm` fills a built model, or its shapes (`nnx.eval_shape`); `build_loaded` (what
`vision.tasks` calls) builds the shapes, fills them, and draws real initial values only when
the file leaves some parameter unfilled (a missing head, a mechanism's own).

What is read (`find_files`, `read_tensors`):
  * a folder: `model.safetensors` (a Hugging Face hub `timm/<model>` folder), else
    `pytorch_model.bin`, else its one `.safetensors` / `.pth` / `.pt` / `.bin` file; its
    `config.json` (timm's `save_config_for_hf`: `architecture`, `num_classes`, `global_pool`,
    `pretrained_cfg` with `mean` / `std` / `crop_pct`, optional `model_args`) when present;
  * a file: `.safetensors` through the `safetensors` package (numpy; bfloat16 files through
    its jax reader), `.pth` / `.pt` / `.bin` / `.pth.tar` through
    `attnbench.data.formats.torch_pickle` (a restricted unpickler: nothing in the file runs).
    A torch file may hold the state dict itself or a checkpoint dict with it under `model`
    (DeiT's and CaiT's releases) or `state_dict` (timm's training checkpoints), taken in that
    order as timm's `checkpoint_filter_fn`s do; a leading `module.` (DistributedDataParallel)
    is stripped. `config.json` beside a `model.safetensors` / `pytorch_model.bin` named as a
    file is read too.

Tensor names and layouts (timm `timm/models/vision_transformer.py`, `cait.py`,
`swin_transformer.py`; torch `nn.Linear` weights are `[out, in]`, `nn.Conv2d` `[out, in, kh, kw]`):
  ViT / DeiT  patch_embed.proj.{weight,bias}, cls_token [1, 1, D], pos_embed [1, 1 + N, D] (or
              [1, N, D]: `no_embed_class`, DeiT III), blocks.{i}.norm1, blocks.{i}.attn.qkv
              (one [3D, D] map whose rows are (q|k|v, head, channel): timm reshapes its output
              to (3, heads, head_dim)), blocks.{i}.attn.proj, blocks.{i}.norm2,
              blocks.{i}.mlp.fc1 / fc2, LayerScale blocks.{i}.ls1.gamma / ls2.gamma (or the
              older gamma_1 / gamma_2), norm, head.
  CaiT        patch_embed.proj, cls_token, pos_embed [1, N, D] (patches only), blocks.{i}.norm1,
              .attn.qkv, .attn.proj, .attn.proj_l / .attn.proj_w (the talking-heads maps,
              `nn.Linear(heads, heads)` over the head axis of the logits and of the
              probabilities), .norm2, .mlp.fc1 / fc2, .gamma_1 / .gamma_2;
              blocks_token_only.{j}.norm1, .attn.q / .attn.k / .attn.v (separate [D, D] maps),
              .attn.proj, .norm2, .mlp.fc1 / fc2, .gamma_1 / .gamma_2; norm, head.
  Swin        patch_embed.proj, patch_embed.norm, layers.{s}.blocks.{i}.norm1, .attn.qkv,
              .attn.proj, .attn.relative_position_bias_table [(2w-1)^2, heads], .norm2,
              .mlp.fc1 / fc2; patch merging layers.{s}.downsample.norm / .reduction (no bias)
              at the start of stage s > 0 (timm >= 0.9), or at the end of stage s (the official
              release, and timm before 0.9: read when layers.0.downsample is present); norm;
              head.fc (timm >= 0.9) or head (official). The buffers relative_position_index
              (checked equal to ours) and attn_mask of older files are skipped.

Every tensor the model needs must be present with its shape and a floating dtype, else one
DataError naming it; a tensor the model does not use is a DataError too (skipped only by the
names above). A file without a head (timm's `num_classes=0` export) leaves the model's head at
its initial values; so are a mechanism's own parameters (GFSA's per-head weights): both are
listed in the returned `initialised`.

Architecture. The checkpoint's architecture is read from its tensors (width, depth, patch size,
MLP width, biases, LayerScale, CaiT's class-attention blocks and heads, Swin's depths, heads
and window, the classes of its head, the image size its positions are for) and from
`config.json` (the heads of a ViT / DeiT, which no tensor shape shows: from
`model_args.num_heads`, else from the architecture's name, timm's tiny / small / medium / base /
large / huge = 3 / 6 / 8 / 12 / 16 / 16 heads; a ViT / DeiT file without either is taken to have
config.model.num_heads). A config that builds another model is one ConfigError listing each
differing field beside the checkpoint's value; so is a mechanism without query / key
projections (the checkpoint's would go unused), CaiT without talking-heads maps (use
`talking_heads`, or `gfsa` with `talking_heads=True`), and `config.data.mean` / `std` other than
the `pretrained_cfg` of `config.json`.

Deliberate differences from timm:
  * no resampling: timm interpolates `pos_embed`, the patch embedding and Swin's bias tables to
    another image, patch or window size; here such a checkpoint is a ConfigError naming the
    size it fits (a silent resample would change the model the numbers are reported for);
  * DeiT III's positions without a class token become ours with a zero class-token position
    (identical outputs; our class-token position is then a trained parameter when fine-tuned);
  * distilled DeiT (`dist_token`, `head_dist`) is refused: our ViT has no distillation token,
    which attends with the others, so its outputs cannot be reproduced;
  * `pre_logits` (old ImageNet-21k ViTs), which timm drops silently, is an unknown tensor here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import safetensors
import safetensors.numpy
from flax import nnx

from attnbench import errors
from attnbench.data.formats import torch_pickle
from attnbench.nn import layers
from vision.backbones import swin as swin_backbone

__all__ = [
    "WEIGHT_FILES",
    "TORCH_SUFFIXES",
    "VIT_HEADS",
    "Architecture",
    "find_files",
    "read_tensors",
    "read_timm_config",
    "architecture",
    "Checkpoint",
    "read_checkpoint",
    "load_timm",
    "build_loaded",
]

# A checkpoint folder's weights, in the order they are looked for (Hugging Face hub names).
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TORCH_SUFFIXES = (".pth", ".pt", ".bin", ".pth.tar")
# timm's ViT / DeiT sizes by name -> heads (vision_transformer.py, deit.py model registrations).
VIT_HEADS = {"tiny": 3, "small": 6, "medium": 8, "base": 12, "large": 16, "huge": 16}
_VIT_NAME = re.compile(r"^(?:vit|deit3?)_(tiny|small|medium|base|large|huge)_patch\d+")
# config.json architecture prefixes of each kind we build.
_FAMILIES = {"transformer": ("vit_", "deit_", "deit3_"), "cait": ("cait_",), "swin": ("swin_",)}
_KIND_NAMES = {"transformer": "ViT / DeiT", "cait": "CaiT", "swin": "Swin"}
# Swin buffers that older files saved (timm's checkpoint_filter_fn skips them too).
_SWIN_BUFFERS = ("relative_position_index", "attn_mask")


@dataclasses.dataclass
class Architecture:
    """What a checkpoint's tensors (and config.json) say about the model it holds.

    Attributes:
      kind: "transformer" (ViT / DeiT), "cait" or "swin" (`config.model.encoder`).
      fields: config.model fields the checkpoint fixes, by our names.
      classes: outputs of its head; None without a head.
      grid: patches per side its positions are for (ViT / CaiT); None for Swin.
      windows: Swin's window per stage (from the bias tables); () otherwise.
      pos_with_cls: a ViT's pos_embed includes the class token's row.
      layer_scale_names: a ViT's LayerScale tensor names per block, or None.
      head: the head's tensor prefix ("head", or Swin's "head.fc").
      old_swin: Swin's patch merging saved at the end of each stage (official release).
      name: config.json's architecture, if any.
    """

    kind: str
    fields: dict
    classes: int | None
    grid: int | None = None
    windows: tuple = ()
    pos_with_cls: bool = True
    layer_scale_names: tuple[str, str] | None = None
    head: str = "head"
    old_swin: bool = False
    name: str | None = None


# ------------------------------------------------------------------------------ files


def find_files(path) -> tuple[str, str | None]:
    """`(weights file, config.json or None)` of a checkpoint folder or file (module docstring).

    Raises:
      DataError: no such path, or a folder without a weights file (or with several).
    """
    path = os.path.expanduser(os.fspath(path))
    if os.path.isdir(path):
        for name in WEIGHT_FILES:
            if os.path.isfile(os.path.join(path, name)):
                return os.path.join(path, name), _config_beside(path)
        found = sorted(n for n in os.listdir(path) if n.endswith((".safetensors", *TORCH_SUFFIXES)))
        if len(found) != 1:
            what = f"several ({', '.join(found)}): name one" if found else "none"
            raise errors.DataError(
                f"{path}: no {' or '.join(WEIGHT_FILES)}, and {what} of its .safetensors / "
                ".pth / .pt / .bin files (a timm checkpoint: a Hugging Face timm/<model> folder "
                "or a state-dict file)"
            )
        return os.path.join(path, found[0]), _config_beside(path)
    if not os.path.isfile(path):
        raise errors.DataError(
            f"{path}: no such file or folder (a timm checkpoint: a Hugging Face timm/<model> "
            "folder, its model.safetensors, or a .pth state dict)"
        )
    beside = os.path.basename(path) in WEIGHT_FILES
    return path, _config_beside(os.path.dirname(path) or ".") if beside else None


def _config_beside(folder: str) -> str | None:
    path = os.path.join(folder, "config.json")
    return path if os.path.isfile(path) else None


def read_timm_config(path: str | None) -> dict | None:
    """timm's `config.json` as a dict; None for no file or a JSON object that is not timm's
    (no `architecture`, e.g. a transformers config).

    Raises:
      DataError: a file that is not a JSON object, or an architecture that is not a string.
    """
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise errors.DataError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(cfg, dict):
        raise errors.DataError(f"{path}: not a JSON object")
    if "architecture" not in cfg:
        return None
    if not isinstance(cfg["architecture"], str):
        raise errors.DataError(f"{path}: architecture={cfg['architecture']!r} is not a name")
    return cfg


def read_tensors(path: str) -> dict[str, np.ndarray]:
    """The state dict in `path` (`.safetensors` or a torch file), names with any leading
    `module.` stripped.

    Raises:
      DataError: an unreadable file, one of another format, an entry that is not a tensor,
        or two names that are one after stripping.
    """
    lower = path.lower()
    if lower.endswith(".safetensors"):
        raw = _read_safetensors(path)
    elif lower.endswith(TORCH_SUFFIXES):
        raw = _read_torch(path)
    else:
        raise errors.DataError(
            f"{path}: not a .safetensors or torch (.pth, .pt, .bin) file; timm's .npz releases "
            "(the original ViT) are not read: take the Hugging Face timm/ folder instead"
        )
    out: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, np.ndarray):
            raise errors.DataError(
                f"{path}: entry {name!r} is a {type(value).__name__}, not a tensor (a state dict "
                "maps names to tensors; a checkpoint dict holds one under 'model' or "
                "'state_dict')"
            )
        key = name.removeprefix("module.")
        if key in out:
            raise errors.DataError(
                f"{path}: tensors {origin[key]!r} and {name!r} are the same parameter; keep one"
            )
        out[key], origin[key] = value, name
    return out


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    try:
        return safetensors.numpy.load_file(path)
    except Exception as first:  # noqa: BLE001 (the package raises several types)
        numpy_error = f"{type(first).__name__}: {first}"
    try:  # bfloat16, which numpy's reader has no type for: through jax, as ml_dtypes arrays
        with safetensors.safe_open(path, framework="flax") as f:
            return {k: np.asarray(f.get_tensor(k)) for k in f.keys()}
    except Exception:  # noqa: BLE001
        raise errors.DataError(f"{path}: not a readable safetensors file ({numpy_error})") from None


def _read_torch(path: str) -> dict:
    obj = torch_pickle.load(path)
    if isinstance(obj, dict):
        for key in ("model", "state_dict"):  # timm's checkpoint_filter_fn order
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
    if not isinstance(obj, dict):
        raise errors.DataError(f"{path}: holds a {type(obj).__name__}, not a state dict")
    return obj


# ------------------------------------------------------------------------------ architecture


def _need(t: dict, name: str, ndim: int, where: str) -> np.ndarray:
    if name not in t:
        raise errors.DataError(f"{where}: missing tensor {name!r}")
    if t[name].ndim != ndim:
        raise errors.DataError(
            f"{where}: tensor {name!r} has shape {tuple(t[name].shape)}; expected {ndim} axes"
        )
    return t[name]


def _count(t: dict, prefix: str, where: str) -> int:
    """How many `prefix{i}.` blocks the names hold; DataError unless they are 0..n-1."""
    found = set()
    for name in t:
        if name.startswith(prefix):
            index = name[len(prefix) :].split(".", 1)[0]
            if index.isdigit():
                found.add(int(index))
    if found != set(range(len(found))):
        raise errors.DataError(
            f"{where}: the {prefix}<i> tensors are numbered {sorted(found)}, not "
            f"0..{len(found) - 1} (a block is missing)"
        )
    return len(found)


def _square_side(n: int) -> int | None:
    side = math.isqrt(max(n, 0))
    return side if side * side == n and side > 0 else None


def _kind(t: dict, where: str) -> str:
    if "dist_token" in t or "head_dist.weight" in t:
        raise errors.DataError(
            f"{where}: a distilled DeiT (dist_token, head_dist): our ViT has no distillation "
            "token, which attends with the others, so its outputs cannot be reproduced; use the "
            "non-distilled release (e.g. deit_small_patch16_224)"
        )
    if "layers.0.blocks.0.attn.qkv.weight" in t:
        return "swin"
    if any(n.startswith("blocks_token_only.") for n in t):
        return "cait"
    if "blocks.0.attn.qkv.weight" in t:
        return "transformer"
    first = ", ".join(sorted(t)[:4])
    raise errors.DataError(
        f"{where}: not a timm ViT / DeiT, CaiT or Swin state dict (none of "
        "blocks.0.attn.qkv.weight, blocks_token_only.*, layers.0.blocks.0.attn.qkv.weight); "
        f"its first tensors: {first or 'none'}"
    )


def _heads_from_config(cfg: dict | None) -> int | None:
    """A ViT / DeiT's heads from timm's config.json (`model_args`, else the name)."""
    if cfg is None:
        return None
    args = cfg.get("model_args")
    if isinstance(args, dict) and isinstance(args.get("num_heads"), int):
        return args["num_heads"]
    m = _VIT_NAME.match(cfg["architecture"])
    return VIT_HEADS[m.group(1)] if m else None


def _head_classes(t: dict, prefix: str, where: str) -> int | None:
    if prefix + ".weight" not in t:
        return None
    return int(_need(t, prefix + ".weight", 2, where).shape[0])


def architecture(t: dict, cfg: dict | None = None, where: str = "checkpoint") -> Architecture:
    """The architecture of state dict `t` (normalised names) and timm `config.json` `cfg`.

    Raises:
      DataError: not one of the layouts read here, a tensor the reading needs missing, or a
        config.json of another architecture.
    """
    kind = _kind(t, where)
    name = cfg["architecture"] if cfg else None
    if name is not None:
        family = next((k for k, prefixes in _FAMILIES.items() if name.startswith(prefixes)), None)
        if family is None or name.startswith("swinv2"):
            raise errors.DataError(
                f"{where}: config.json's architecture {name!r} is not one read here (ViT / DeiT "
                "vit_* deit_* deit3_*, CaiT cait_*, Swin swin_*)"
            )
        if family != kind:
            raise errors.DataError(
                f"{where}: config.json names {name!r} ({_KIND_NAMES[family]}) but the tensors "
                f"are a {_KIND_NAMES[kind]}'s"
            )
        pool = cfg.get("global_pool")
        wanted = "avg" if kind == "swin" else "token"
        if pool not in (None, wanted):
            raise errors.DataError(
                f"{where}: config.json's global_pool={pool!r}; a {_KIND_NAMES[kind]} is read "
                f"with {wanted!r} pooling only"
            )
    proj = _need(t, "patch_embed.proj.weight", 4, where)
    dim, channels, ph, pw = (int(s) for s in proj.shape)
    if channels != 3 or ph != pw:
        raise errors.DataError(
            f"{where}: patch_embed.proj.weight has shape {tuple(proj.shape)}; expected square "
            "patches of 3 channels [D, 3, p, p]"
        )
    if kind == "swin":
        return _swin_architecture(t, dim, ph, name, where)
    qkv = _need(t, "blocks.0.attn.qkv.weight", 2, where)
    if qkv.shape[0] % 3:
        raise errors.DataError(
            f"{where}: blocks.0.attn.qkv.weight has {qkv.shape[0]} rows, not 3 x width"
        )
    _need(t, "cls_token", 3, where)
    tokens = int(_need(t, "pos_embed", 3, where).shape[1])
    common = dict(
        encoder=kind,
        patch_size=ph,
        dim=dim,
        num_layers=_count(t, "blocks.", where),
        qkv_dim=int(qkv.shape[0]) // 3,
        mlp_dim=int(_need(t, "blocks.0.mlp.fc1.weight", 2, where).shape[0]),
        qkv_bias="blocks.0.attn.qkv.bias" in t,
        gelu="erf",  # nn.GELU, exact
    )
    if kind == "cait":
        grid = _square_side(tokens)
        if grid is None:
            raise errors.DataError(
                f"{where}: CaiT's pos_embed has {tokens} rows, not a square grid of patches"
            )
        heads = int(_need(t, "blocks.0.attn.proj_l.weight", 2, where).shape[0])
        fields = dict(common, class_layers=_count(t, "blocks_token_only.", where), num_heads=heads)
        return Architecture(kind, fields, _head_classes(t, "head", where), grid=grid, name=name)
    with_cls = _square_side(tokens - 1) is not None
    grid = _square_side(tokens - 1) or _square_side(tokens)
    if grid is None:
        raise errors.DataError(
            f"{where}: pos_embed has {tokens} rows: neither a square grid of patches nor one "
            "plus the class token"
        )
    if "blocks.0.ls1.gamma" in t:
        scale_names = ("ls1.gamma", "ls2.gamma")
    elif "blocks.0.gamma_1" in t:
        scale_names = ("gamma_1", "gamma_2")
    else:
        scale_names = None
    fields = dict(
        common,
        out_bias="blocks.0.attn.proj.bias" in t,
        layer_scale=scale_names is not None,
        pool="cls",
        positions="learned",
    )
    heads = _heads_from_config(cfg)
    if heads is not None:
        fields["num_heads"] = heads
    return Architecture(
        kind,
        fields,
        _head_classes(t, "head", where),
        grid=grid,
        pos_with_cls=with_cls,
        layer_scale_names=scale_names,
        name=name,
    )


def _swin_architecture(t: dict, dim: int, patch: int, name, where: str) -> Architecture:
    stages = _count(t, "layers.", where)
    depths = tuple(_count(t, f"layers.{s}.blocks.", where) for s in range(stages))
    tables = [
        _need(t, f"layers.{s}.blocks.0.attn.relative_position_bias_table", 2, where)
        for s in range(stages)
    ]
    windows = []
    for s, table in enumerate(tables):
        side = _square_side(int(table.shape[0]))
        if side is None or side % 2 == 0:
            raise errors.DataError(
                f"{where}: layers.{s}.blocks.0.attn.relative_position_bias_table has "
                f"{table.shape[0]} rows, not (2w - 1)^2 for a window w"
            )
        windows.append((side + 1) // 2)
    fc1 = _need(t, "layers.0.blocks.0.mlp.fc1.weight", 2, where)
    head = "head.fc" if "head.fc.weight" in t else "head"
    fields = dict(
        encoder="swin",
        patch_size=patch,
        dim=dim,
        depths=depths,
        swin_heads=tuple(int(tb.shape[1]) for tb in tables),
        window_size=windows[0],
        mlp_ratio=float(fc1.shape[0]) / dim,
        qkv_bias="layers.0.blocks.0.attn.qkv.bias" in t,
        relative_position_bias=True,
        gelu="erf",
    )
    return Architecture(
        "swin",
        fields,
        _head_classes(t, head, where),
        windows=tuple(windows),
        head=head,
        old_swin="layers.0.downsample.reduction.weight" in t,
        name=name,
    )


# ------------------------------------------------------------------------------ config check


def _ours(model, model_cfg, kind: str) -> dict:
    """Our model's values of the fields `architecture` reads (from the built model)."""
    enc = model.encoder
    gelu = lambda mlp: "tanh" if mlp.approximate else "erf"  # noqa: E731
    out = dict(encoder=model.backbone, patch_size=model.patch_size)
    out["dim"] = model.patch_embed.out_features
    if kind == "swin":
        first = enc.stages[0][0]
        out.update(
            depths=tuple(len(stage) for stage in enc.stages),
            swin_heads=tuple(stage[0].num_heads for stage in enc.stages),
            window_size=int(model_cfg.window_size),
            mlp_ratio=first.mlp.fc1.out_features / out["dim"],
            qkv_bias=first.attn.value.bias is not None,
            relative_position_bias=first.relative_position_bias,
            gelu=gelu(first.mlp),
        )
        return out
    block = enc.blocks[0]
    _, heads, head_dim = block.attn.value.kernel.shape
    out.update(
        num_layers=len(enc.blocks),
        qkv_dim=heads * head_dim,
        num_heads=heads,
        mlp_dim=block.mlp.fc1.out_features,
        qkv_bias=block.attn.value.bias is not None,
        gelu=gelu(block.mlp),
    )
    if kind == "cait":
        out["class_layers"] = len(enc.class_blocks)
    else:
        out.update(
            out_bias=block.attn.out.bias is not None,
            layer_scale=block.layer_scale is not None,
            pool=model.pool_mode,
            positions=enc.positions,
        )
    return out


def _differences(arch: Architecture, model, model_cfg, where: str) -> list[str]:
    """Each config field whose model differs from the checkpoint's, as `field=ours (theirs)`."""
    if model.backbone != arch.kind:
        return [
            f"config.model.encoder={model.backbone!r} (the checkpoint is a "
            f"{_KIND_NAMES[arch.kind]}: encoder {arch.kind!r})"
        ]
    ours = _ours(model, model_cfg, arch.kind)
    out = []
    for field, theirs in arch.fields.items():
        mine = ours[field]
        same = math.isclose(mine, theirs) if field == "mlp_ratio" else mine == theirs
        if same:
            continue
        if field == "layer_scale":
            hint = "has LayerScale: set it" if theirs else "has none: set None"
            out.append(f"config.model.layer_scale={model_cfg.get('layer_scale')!r} (it {hint})")
        else:
            shown = model_cfg.get(field, mine) if field not in ("qkv_bias", "out_bias") else mine
            out.append(f"config.model.{field}={shown!r} (the checkpoint's: {theirs!r})")
    if arch.grid is not None and ours["patch_size"] == arch.fields["patch_size"]:
        side = model.grid[0]
        if side != arch.grid:
            px = arch.grid * arch.fields["patch_size"]
            out.append(
                f"config.data.image_size={model.image_size} (the checkpoint's positions are a "
                f"{arch.grid}x{arch.grid} grid of patches: {px} px)"
            )
    if arch.kind == "swin" and ours["window_size"] == arch.fields["window_size"]:
        mine = tuple(stage[0].window_size for stage in model.encoder.stages)
        if len(mine) == len(arch.windows) and mine != arch.windows:
            out.append(
                f"config.data.image_size={model.image_size} (windows {mine} per stage; the "
                f"checkpoint's bias tables are for {arch.windows})"
            )
    classes = model.head.out_features
    if arch.classes is not None and classes != arch.classes:
        out.append(
            f"config.data.num_classes / config.model.head_classes give a {classes}-class head "
            f"(the checkpoint's: {arch.classes})"
        )
    return out


def _mechanism_problems(model, kind: str) -> list[str]:
    out = []
    names = set()
    for _, node in nnx.iter_graph(model):
        if isinstance(node, layers.Attention) and not node.mechanism.needs_qk:
            names.add(node.mechanism.name)
    for name in sorted(names):
        out.append(
            f"config.attention.name={name!r} has no query / key projections: the checkpoint's "
            "would go unused"
        )
    if kind == "cait":
        plain = {
            b.attn.mechanism.name
            for b in model.encoder.blocks
            if "talking_heads" not in b.attn.mechanism_params
        }
        for name in sorted(plain):
            out.append(
                f"config.attention.name={name!r}: the checkpoint's blocks use talking-heads "
                "attention (attn.proj_l, attn.proj_w), which it has no maps for: use "
                "talking_heads, or gfsa with talking_heads=True"
            )
    return out


def _normalisation_problems(cfg: dict | None, mean, std) -> list[str]:
    pre = (cfg or {}).get("pretrained_cfg")
    if not isinstance(pre, dict):
        return []
    out = []
    for field, ours in (("mean", mean), ("std", std)):
        theirs = pre.get(field)
        if ours is None or not isinstance(theirs, list | tuple):
            continue
        if len(theirs) != len(ours) or not np.allclose(theirs, ours, rtol=0, atol=1e-6):
            values = ",".join(f"{float(v):g}" for v in theirs)
            out.append(
                f"config.data.{field}={tuple(ours)} (the checkpoint was trained on images "
                f"normalised with {field} ({values}): --config.data.{field}=({values}))"
            )
    return out


# ------------------------------------------------------------------------------ loading


class _Plan:
    """timm tensor name -> (expected shape, setter) for every parameter of our model it fills."""

    def __init__(self):
        self.entries: dict[str, tuple[tuple, object]] = {}
        self.done: set[int] = set()

    def _set(self, param, value: np.ndarray) -> None:
        if tuple(param.shape) != value.shape:  # shapes were checked against the file: our bug
            raise AssertionError(f"mapping error: {value.shape} into {tuple(param.shape)}")
        param.set_value(jnp.asarray(value, jnp.float32))
        self.done.add(id(param))

    def add(self, name: str, shape, setter) -> None:
        self.entries[name] = (tuple(int(s) for s in shape), setter)

    def same(self, name: str, param) -> None:
        self.add(name, param.shape, lambda v: self._set(param, v))

    def linear(self, prefix: str, layer: nnx.Linear) -> None:
        """torch `nn.Linear` `[out, in]` (+ bias) -> flax kernel `[in, out]`."""
        self.add(
            prefix + ".weight", layer.kernel.shape[::-1], lambda v: self._set(layer.kernel, v.T)
        )
        if layer.bias is not None:
            self.same(prefix + ".bias", layer.bias)

    def norm(self, prefix: str, ln: nnx.LayerNorm) -> None:
        self.same(prefix + ".weight", ln.scale)
        self.same(prefix + ".bias", ln.bias)

    def conv(self, prefix: str, conv: nnx.Conv) -> None:
        """torch `[out, in, kh, kw]` -> flax `[kh, kw, in, out]`."""
        kh, kw, cin, cout = conv.kernel.shape
        self.add(
            prefix + ".weight",
            (cout, cin, kh, kw),
            lambda v: self._set(conv.kernel, v.transpose(2, 3, 1, 0)),
        )
        self.same(prefix + ".bias", conv.bias)

    def heads_in(self, prefix: str, proj: nnx.LinearGeneral) -> None:
        """One torch `[H*hd, D]` map -> our `[D, H, hd]` kernel (bias `[H*hd]` -> `[H, hd]`)."""
        d, h, hd = proj.kernel.shape
        self.add(
            prefix + ".weight",
            (h * hd, d),
            lambda v: self._set(proj.kernel, v.T.reshape(d, h, hd)),
        )
        if proj.bias is not None:
            self.add(prefix + ".bias", (h * hd,), lambda v: self._set(proj.bias, v.reshape(h, hd)))

    def qkv(self, prefix: str, attn: layers.Attention) -> None:
        """timm's fused `[3*H*hd, D]` qkv (rows: q|k|v, head, channel) -> our three kernels."""
        parts = (attn.query, attn.key, attn.value)
        d, h, hd = attn.value.kernel.shape

        def weight(v):
            for proj, w in zip(parts, v.reshape(3, h * hd, d), strict=True):
                self._set(proj.kernel, w.T.reshape(d, h, hd))

        self.add(prefix + ".weight", (3 * h * hd, d), weight)
        if attn.value.bias is not None:

            def bias(v):
                for proj, b in zip(parts, v.reshape(3, h, hd), strict=True):
                    self._set(proj.bias, b)

            self.add(prefix + ".bias", (3 * h * hd,), bias)

    def heads_out(self, prefix: str, out: nnx.LinearGeneral) -> None:
        """torch `[D, H*hd]` output projection -> our `[H, hd, D]` kernel."""
        h, hd, d = out.kernel.shape
        self.add(
            prefix + ".weight", (d, h * hd), lambda v: self._set(out.kernel, v.T.reshape(h, hd, d))
        )
        if out.bias is not None:
            self.same(prefix + ".bias", out.bias)

    def mlp(self, prefix: str, mlp: layers.MlpBlock) -> None:
        self.linear(prefix + ".fc1", mlp.fc1)
        self.linear(prefix + ".fc2", mlp.fc2)


def _vit_plan(plan: _Plan, model, arch: Architecture) -> None:
    enc = model.encoder
    plan.conv("patch_embed.proj", model.patch_embed)
    plan.same("cls_token", model.cls)
    pos = enc.pos_embedding
    n, d = pos.shape
    if arch.pos_with_cls:
        plan.add("pos_embed", (1, n, d), lambda v: plan._set(pos, v[0]))
    else:  # DeiT III: positions on the patches only = a zero class-token position
        zero = np.zeros((1, d), np.float32)
        plan.add("pos_embed", (1, n - 1, d), lambda v: plan._set(pos, np.concatenate([zero, v[0]])))
    for i, block in enumerate(enc.blocks):
        p = f"blocks.{i}."
        plan.norm(p + "norm1", block.ln1)
        plan.qkv(p + "attn.qkv", block.attn)
        plan.heads_out(p + "attn.proj", block.attn.out)
        plan.norm(p + "norm2", block.ln2)
        plan.mlp(p + "mlp", block.mlp)
        if arch.layer_scale_names is not None:
            plan.same(p + arch.layer_scale_names[0], block.gamma1)
            plan.same(p + arch.layer_scale_names[1], block.gamma2)
    plan.norm("norm", enc.norm)


def _cait_plan(plan: _Plan, model) -> None:
    enc = model.encoder
    plan.conv("patch_embed.proj", model.patch_embed)
    plan.same("cls_token", enc.cls)
    pos = enc.pos_embedding
    plan.add("pos_embed", (1, *pos.shape), lambda v: plan._set(pos, v[0]))
    for i, block in enumerate(enc.blocks):
        p = f"blocks.{i}."
        plan.norm(p + "norm1", block.ln1)
        plan.qkv(p + "attn.qkv", block.attn)
        plan.heads_out(p + "attn.proj", block.attn.out)
        mixing = block.attn.mechanism_params["talking_heads"]
        for torch_name, ours in (("proj_l", "pre"), ("proj_w", "post")):
            weight, bias = mixing[ours + "_w"], mixing[ours + "_b"]
            # nn.Linear over the head axis: y[g] = sum_h W[g, h] x[h] + b[g]; ours w[h, g]
            plan.add(
                f"{p}attn.{torch_name}.weight",
                weight.shape,
                lambda v, w=weight: plan._set(w, v.T),
            )
            plan.same(f"{p}attn.{torch_name}.bias", bias)
        plan.norm(p + "norm2", block.ln2)
        plan.mlp(p + "mlp", block.mlp)
        plan.same(p + "gamma_1", block.gamma1)
        plan.same(p + "gamma_2", block.gamma2)
    for j, block in enumerate(enc.class_blocks):
        p = f"blocks_token_only.{j}."
        plan.norm(p + "norm1", block.ln1)
        for name in ("q", "k", "v"):
            plan.heads_in(f"{p}attn.{name}", getattr(block.attn, _CLASS_ATTN[name]))
        plan.heads_out(p + "attn.proj", block.attn.out)
        plan.norm(p + "norm2", block.ln2)
        plan.mlp(p + "mlp", block.mlp)
        plan.same(p + "gamma_1", block.gamma1)
        plan.same(p + "gamma_2", block.gamma2)
    plan.norm("norm", enc.norm)


_CLASS_ATTN = {"q": "query", "k": "key", "v": "value"}


def _swin_plan(plan: _Plan, model, arch: Architecture) -> None:
    enc = model.encoder
    plan.conv("patch_embed.proj", model.patch_embed)
    plan.norm("patch_embed.norm", model.patch_norm)
    for s, stage in enumerate(enc.stages):
        for i, block in enumerate(stage):
            p = f"layers.{s}.blocks.{i}."
            plan.norm(p + "norm1", block.ln1)
            plan.qkv(p + "attn.qkv", block.attn)
            plan.heads_out(p + "attn.proj", block.attn.out)
            plan.same(p + "attn.relative_position_bias_table", block.relative_position_bias_table)
            plan.norm(p + "norm2", block.ln2)
            plan.mlp(p + "mlp", block.mlp)
    for s, merge in enumerate(enc.merges):
        p = f"layers.{s if arch.old_swin else s + 1}.downsample."
        plan.norm(p + "norm", merge.norm)
        plan.linear(p + "reduction", merge.reduction)
    plan.norm("norm", enc.norm)


def _skipped(t: dict, model, arch: Architecture, where: str) -> list[str]:
    """Names skipped by rule (Swin's saved buffers); a saved relative_position_index must be
    ours."""
    if arch.kind != "swin":
        return []
    out = []
    blocks = {
        f"layers.{s}.blocks.{i}.": block
        for s, stage in enumerate(model.encoder.stages)
        for i, block in enumerate(stage)
    }
    for name in t:
        stem, _, last = name.rpartition(".")
        if last not in _SWIN_BUFFERS:
            continue
        out.append(name)
        block = blocks.get(stem.removesuffix("attn"))
        if last == "relative_position_index" and block is not None:
            ours = swin_backbone.relative_position_index(block.window_size)
            if t[name].shape != ours.shape or not np.array_equal(t[name], ours):
                raise errors.DataError(
                    f"{where}: tensor {name!r} is not Swin's relative position index for a "
                    f"{block.window_size}x{block.window_size} window"
                )
    return out


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"


def _listed(names) -> str:
    names = list(names)
    return ", ".join(names[:5]) + (f" ... ({len(names)} in all)" if len(names) > 5 else "")


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint read once (`read_checkpoint`): its weights file, timm's config.json (None
    without one) and its tensors under normalised names."""

    path: str
    file: str
    config: dict | None
    tensors: dict


def read_checkpoint(path) -> Checkpoint:
    """Reads the checkpoint folder or file `path` (`find_files`, `read_timm_config`,
    `read_tensors`; DataError as they raise)."""
    file, config_file = find_files(path)
    return Checkpoint(os.fspath(path), file, read_timm_config(config_file), read_tensors(file))


def load_timm(checkpoint, model, model_cfg, *, mean=None, std=None) -> dict:
    """Copies a timm checkpoint (a folder or file path, module docstring, or a `Checkpoint`)
    into `model`, a `vision.models.ImageClassifier` built from `model_cfg` (config.model), or
    its abstract shapes (`nnx.eval_shape`).

    Args:
      mean, std: config.data's normalisation, checked against config.json's pretrained_cfg
        where both are given.

    Returns:
      `{"file", "architecture" (config.json's name or None), "kind", "tensors" (how many
      were copied), "initialised" (our parameters the file has none for: a missing head, a
      mechanism's own), "skipped" (buffers skipped by name)}`.

    Raises:
      ConfigError: the config builds another architecture, attention or normalisation than
        the checkpoint's (every difference named, with the checkpoint's value).
      DataError: a missing or unreadable file; a tensor missing, of another shape, not of a
        floating type, or unknown (module docstring). Nothing is copied then.
    """
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else read_checkpoint(checkpoint)
    file, cfg, t = ckpt.file, ckpt.config, ckpt.tensors
    arch = architecture(t, cfg, file)
    problems = _differences(arch, model, model_cfg, file)
    problems += _mechanism_problems(model, arch.kind)
    problems += _normalisation_problems(cfg, mean, std)
    if problems:
        name = f" ({arch.name})" if arch.name else ""
        raise errors.ConfigError(
            f"config.model.checkpoint={ckpt.path!r}: a {_KIND_NAMES[arch.kind]}{name} "
            f"that the config's model does not fit: {'; '.join(problems)}"
        )
    plan = _Plan()
    if arch.kind == "swin":
        _swin_plan(plan, model, arch)
    elif arch.kind == "cait":
        _cait_plan(plan, model)
    else:
        _vit_plan(plan, model, arch)
    if arch.classes is not None:
        plan.linear(arch.head, model.head)
    skipped = _skipped(t, model, arch, file)
    missing = [n for n in plan.entries if n not in t]
    if missing:
        raise errors.DataError(f"{file}: missing tensor(s) {_listed(missing)}")
    unknown = sorted(n for n in t if n not in plan.entries and n not in skipped)
    if unknown:
        raise errors.DataError(
            f"{file}: unknown tensor(s) {_listed(unknown)}: not part of the "
            f"{_KIND_NAMES[arch.kind]} this loader builds"
        )
    for name, (shape, _) in plan.entries.items():
        if tuple(t[name].shape) != shape:
            raise errors.DataError(
                f"{file}: tensor {name!r} has shape {tuple(t[name].shape)}, expected {shape}"
            )
        if not _is_float(t[name]):
            raise errors.DataError(
                f"{file}: tensor {name!r} has dtype {t[name].dtype}, expected a float"
            )
    for name, (_, setter) in plan.entries.items():
        setter(np.asarray(t[name], np.float32))
    fresh = [
        "/".join(str(p) for p in path_)
        for path_, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Param) and id(node) not in plan.done
    ]
    return {
        "file": file,
        "architecture": arch.name,
        "kind": arch.kind,
        "tensors": len(plan.entries),
        "initialised": fresh,
        "skipped": skipped,
    }


def build_loaded(build, checkpoint, model_cfg, rngs, *, mean=None, std=None):
    """`(model, info)`: the model `build(rngs)` makes, holding the checkpoint's weights (`info`:
    `load_timm`'s).

    Shapes first: the model is built abstractly (`nnx.eval_shape`: nothing drawn, no random
    initialiser compiled) and filled from the checkpoint; only when that leaves a variable
    unfilled (no head in the file, a mechanism's own parameters or buffers) is it built for real
    with `rngs` and filled again, so those keep the initial values `rngs` gives them.
    """
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else read_checkpoint(checkpoint)
    model = nnx.eval_shape(lambda: build(nnx.Rngs(0)))
    info = load_timm(ckpt, model, model_cfg, mean=mean, std=std)
    if any(
        isinstance(node.get_value(), jax.ShapeDtypeStruct)
        for _, node in nnx.iter_graph(model)
        if isinstance(node, nnx.Variable)
    ):
        model = build(rngs)
        info = load_timm(ckpt, model, model_cfg, mean=mean, std=std)
    return model, info
