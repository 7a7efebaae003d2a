"""vision.timm_checkpoints: tiny random checkpoints written here with timm's tensor names, in
timm's formats (a Hugging Face timm/ folder with model.safetensors and config.json; torch
`.pth` files through the torch-pickle writer of tests/attnbench/data/formats), loaded through
the config argument `checkpoint=` and compared with float64 numpy forwards of timm's
architectures written here from the same tensors (timm vision_transformer.py, cait.py,
swin_transformer.py: fused qkv rows (q|k|v, head, channel), NCHW patch convolution,
talking-heads maps over the head axis, Swin's rolled windows with timm's -100 mask and its
relative position index, patch merging in timm's channel order); the named errors; and
evaluation without training (`--config.total_steps=0`) against the reference's accuracy on an
image folder written here."""

import collections
import json
import math
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import safetensors.flax
import safetensors.numpy
from flax import nnx
from scipy import special

from attnbench import config as config_lib
from attnbench import errors, tasks, train, validate
from tests import tolerances
from tests.attnbench.data.formats.test_torch_pickle import tensor, torch_writer_zip
from vision import data, timm_checkpoints
from vision.data import synthetic

# The smoke preset's models (configs/vision/presets.py): 32 px, ViT / CaiT patch 8 (4 x 4
# patches), 32 wide, 4 heads, MLP 64; Swin patch 4 (8 x 8), 16 wide, depths (2, 1), window 4.
SIZE, PATCH, DIM, HEADS, MLP, CLASSES = 32, 8, 32, 4, 64, 5
SWIN = dict(patch=4, dim=16, depths=(2, 1), heads=(2, 4), window=4)
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _config(arg: str, checkpoint=None, **overrides):
    spec = f"vision/imagenet.py:preset=smoke,{arg}"
    if checkpoint is not None:
        spec += f",checkpoint={checkpoint}"
    config = config_lib.load(spec)
    return config_lib.override(config, {k.replace("__", "."): v for k, v in overrides.items()})


def _build(config):
    return tasks.get(config.task).build_model(config, nnx.Rngs(params=0))


# ------------------------------------------------------------------------ timm's tensors


def _normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _linear(rng, t, name, out, inp, bias=True):
    t[name + ".weight"] = _normal(rng, out, inp, scale=inp**-0.5)
    if bias:
        t[name + ".bias"] = _normal(rng, out, scale=0.1)


def _norm(rng, t, name, width):
    # far from (1, 0), so that a misplaced scale or bias shows
    t[name + ".weight"] = 1.0 + _normal(rng, width, scale=0.2)
    t[name + ".bias"] = _normal(rng, width, scale=0.1)


def _patch_embed(rng, t, dim, patch):
    t["patch_embed.proj.weight"] = _normal(rng, dim, 3, patch, patch, scale=(3 * patch**2) ** -0.5)
    t["patch_embed.proj.bias"] = _normal(rng, dim, scale=0.1)


def _vit_tensors(rng, *, layers=2, dim=DIM, mlp=MLP, grid=SIZE // PATCH, classes=CLASSES,
                 embed_class=True, layer_scale=None):  # fmt: skip
    """timm VisionTransformer's state dict; `embed_class=False` is DeiT III's pos_embed (patches
    only), `layer_scale` its ls1/ls2 gamma names."""
    t = {}
    _patch_embed(rng, t, dim, PATCH)
    t["cls_token"] = _normal(rng, 1, 1, dim)
    t["pos_embed"] = _normal(rng, 1, grid * grid + int(embed_class), dim, scale=0.5)
    for i in range(layers):
        p = f"blocks.{i}."
        _norm(rng, t, p + "norm1", dim)
        _linear(rng, t, p + "attn.qkv", 3 * dim, dim)
        _linear(rng, t, p + "attn.proj", dim, dim)
        _norm(rng, t, p + "norm2", dim)
        _linear(rng, t, p + "mlp.fc1", mlp, dim)
        _linear(rng, t, p + "mlp.fc2", dim, mlp)
        for name in layer_scale or ():
            t[p + name] = 0.5 + _normal(rng, dim, scale=0.2)
    _norm(rng, t, "norm", dim)
    if classes:
        _linear(rng, t, "head", classes, dim)
    return t


def _cait_tensors(rng, *, layers=2, class_layers=2, dim=DIM, heads=HEADS, mlp=MLP):
    t = {}
    _patch_embed(rng, t, dim, PATCH)
    t["cls_token"] = _normal(rng, 1, 1, dim)
    t["pos_embed"] = _normal(rng, 1, (SIZE // PATCH) ** 2, dim, scale=0.5)

    def tail(p):
        _norm(rng, t, p + "norm2", dim)
        _linear(rng, t, p + "mlp.fc1", mlp, dim)
        _linear(rng, t, p + "mlp.fc2", dim, mlp)
        t[p + "gamma_1"] = 0.5 + _normal(rng, dim, scale=0.2)
        t[p + "gamma_2"] = 0.5 + _normal(rng, dim, scale=0.2)

    for i in range(layers):
        p = f"blocks.{i}."
        _norm(rng, t, p + "norm1", dim)
        _linear(rng, t, p + "attn.qkv", 3 * dim, dim)
        _linear(rng, t, p + "attn.proj", dim, dim)
        t[p + "attn.proj_l.weight"] = _normal(rng, heads, heads, scale=0.5)
        t[p + "attn.proj_l.bias"] = _normal(rng, heads, scale=0.1)
        t[p + "attn.proj_w.weight"] = _normal(rng, heads, heads, scale=0.5)
        t[p + "attn.proj_w.bias"] = _normal(rng, heads, scale=0.1)
        tail(p)
    for j in range(class_layers):
        p = f"blocks_token_only.{j}."
        _norm(rng, t, p + "norm1", dim)
        for name in ("q", "k", "v", "proj"):
            _linear(rng, t, f"{p}attn.{name}", dim, dim)
        tail(p)
    _norm(rng, t, "norm", dim)
    _linear(rng, t, "head", CLASSES, dim)
    return t


def _swin_tensors(rng, *, patch, dim, depths, heads, window):
    """timm >= 0.9's SwinTransformer state dict (downsample at the start of stages 1..,
    head.fc)."""
    t = {}
    _patch_embed(rng, t, dim, patch)
    _norm(rng, t, "patch_embed.norm", dim)
    c = dim
    for s, depth in enumerate(depths):
        if s:
            _norm(rng, t, f"layers.{s}.downsample.norm", 4 * c)
            _linear(rng, t, f"layers.{s}.downsample.reduction", 2 * c, 4 * c, bias=False)
            c *= 2
        for i in range(depth):
            p = f"layers.{s}.blocks.{i}."
            _norm(rng, t, p + "norm1", c)
            _linear(rng, t, p + "attn.qkv", 3 * c, c)
            _linear(rng, t, p + "attn.proj", c, c)
            table = _normal(rng, (2 * window - 1) ** 2, heads[s], scale=0.5)
            t[p + "attn.relative_position_bias_table"] = table
            _norm(rng, t, p + "norm2", c)
            _linear(rng, t, p + "mlp.fc1", 4 * c, c)
            _linear(rng, t, p + "mlp.fc2", c, 4 * c)
    _norm(rng, t, "norm", c)
    _linear(rng, t, "head.fc", CLASSES, c)
    return t


# ------------------------------------------------------------------------ float64 references


def _ln(x, t, name, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * t[name + ".weight"] + t[name + ".bias"]


def _lin(x, t, name):
    """torch nn.Linear: x W^T + b."""
    y = x @ t[name + ".weight"].T
    return y + t[name + ".bias"] if name + ".bias" in t else y


def _mlp(x, t, p):
    h = _lin(x, t, p + "mlp.fc1")
    return _lin(0.5 * h * (1 + special.erf(h / math.sqrt(2))), t, p + "mlp.fc2")  # nn.GELU


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _patches(t, image):
    """timm PatchEmbed: Conv2d(3, D, p, stride p) on the CHW image, flatten(2).transpose(1, 2)."""
    w, b = t["patch_embed.proj.weight"], t["patch_embed.proj.bias"]
    p = w.shape[-1]
    chw = image.transpose(2, 0, 1)
    g = chw.shape[1] // p
    out = np.empty((g, g, w.shape[0]))
    for i in range(g):
        for j in range(g):
            window = chw[:, i * p : (i + 1) * p, j * p : (j + 1) * p]
            out[i, j] = np.einsum("dcab,cab->d", w, window) + b
    return out.reshape(g * g, -1)


def _qkv(x, t, name, heads):
    """timm: qkv(x).reshape(N, 3, heads, head_dim).permute(2, 0, 3, 1, 4) -> q, k, v [H, N, hd]."""
    n = x.shape[0]
    return _lin(x, t, name).reshape(n, 3, heads, -1).transpose(1, 2, 0, 3)


def _merge_heads(o):
    """[H, N, hd] -> [N, H * hd] (timm's transpose(1, 2).reshape(B, N, C))."""
    return o.transpose(1, 0, 2).reshape(o.shape[1], -1)


def _vit_reference(t, image, heads, layer_scale=None):
    """timm VisionTransformer.forward (eval) of one HWC image, float64."""
    x, cls, pos = _patches(t, image), t["cls_token"][0], t["pos_embed"][0]
    if len(pos) == len(x):  # no_embed_class: positions on the patches, then the class token
        x = np.concatenate([cls, x + pos])
    else:
        x = np.concatenate([cls, x]) + pos
    layers = len({k.split(".")[1] for k in t if k.startswith("blocks.")})
    for i in range(layers):
        p = f"blocks.{i}."
        q, k, v = _qkv(_ln(x, t, p + "norm1", 1e-6), t, p + "attn.qkv", heads)
        a = _softmax(q @ k.transpose(0, 2, 1) * q.shape[-1] ** -0.5)
        h = _lin(_merge_heads(a @ v), t, p + "attn.proj")
        x = x + (t[p + layer_scale[0]] * h if layer_scale else h)
        h = _mlp(_ln(x, t, p + "norm2", 1e-6), t, p)
        x = x + (t[p + layer_scale[1]] * h if layer_scale else h)
    return _lin(_ln(x, t, "norm", 1e-6)[0], t, "head")


def _cait_reference(t, image, heads):
    """timm Cait.forward (eval): talking-heads blocks, then class attention, float64."""
    x = _patches(t, image) + t["pos_embed"][0]
    layers = len({k.split(".")[1] for k in t if k.startswith("blocks.")})
    for i in range(layers):
        p = f"blocks.{i}."
        q, k, v = _qkv(_ln(x, t, p + "norm1", 1e-6), t, p + "attn.qkv", heads)
        logits = (q * q.shape[-1] ** -0.5) @ k.transpose(0, 2, 1)  # [H, N, N]
        # nn.Linear(heads, heads) on the head axis: out[g] = sum_h W[g, h] in[h] + b[g]
        wl, bl = t[p + "attn.proj_l.weight"], t[p + "attn.proj_l.bias"]
        ww, bw = t[p + "attn.proj_w.weight"], t[p + "attn.proj_w.bias"]
        a = _softmax(np.einsum("hnm,gh->gnm", logits, wl) + bl[:, None, None])
        a = np.einsum("hnm,gh->gnm", a, ww) + bw[:, None, None]
        x = x + t[p + "gamma_1"] * _lin(_merge_heads(a @ v), t, p + "attn.proj")
        x = x + t[p + "gamma_2"] * _mlp(_ln(x, t, p + "norm2", 1e-6), t, p)
    cls = t["cls_token"][0]
    for j in range(2):
        p = f"blocks_token_only.{j}."
        u = _ln(np.concatenate([cls, x]), t, p + "norm1", 1e-6)
        n, hd = len(u), u.shape[-1] // heads
        q = _lin(u[:1], t, p + "attn.q").reshape(1, heads, hd).transpose(1, 0, 2)
        k = _lin(u, t, p + "attn.k").reshape(n, heads, hd).transpose(1, 0, 2)
        v = _lin(u, t, p + "attn.v").reshape(n, heads, hd).transpose(1, 0, 2)
        a = _softmax(q * hd**-0.5 @ k.transpose(0, 2, 1))
        cls = cls + t[p + "gamma_1"] * _lin(_merge_heads(a @ v), t, p + "attn.proj")
        cls = cls + t[p + "gamma_2"] * _mlp(_ln(cls, t, p + "norm2", 1e-6), t, p)
    return _lin(_ln(np.concatenate([cls, x]), t, "norm", 1e-6)[0], t, "head")


def _relative_index(w):
    """The official relative_position_index: coordinate differences shifted to >= 0, row
    difference times (2w - 1) plus column difference."""
    coords = np.stack(np.meshgrid(np.arange(w), np.arange(w), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + (w - 1)
    return rel[..., 0] * (2 * w - 1) + rel[..., 1]


def _shift_labels(h, w, window, shift):
    """timm's img_mask: the rolled grid cut in (0, -w), (-w, -shift), (-shift, None) strips."""
    img = np.zeros((h, w))
    if shift:
        cuts = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
        for n, (rows, cols) in enumerate((r, c) for r in cuts for c in cuts):
            img[rows, cols] = n
    return img


def _swin_block(x, t, p, grid, window, shift, heads):
    hgt, wid = grid
    c = x.shape[-1]
    n = window * window
    img = np.roll(_ln(x, t, p + "norm1", 1e-5).reshape(hgt, wid, c), (-shift, -shift), (0, 1))
    labels = _shift_labels(hgt, wid, window, shift)
    table = t[p + "attn.relative_position_bias_table"]
    bias = table[_relative_index(window).reshape(-1)].reshape(n, n, heads).transpose(2, 0, 1)
    out = np.zeros_like(img)
    for a in range(hgt // window):
        for b in range(wid // window):
            rows, cols = slice(a * window, (a + 1) * window), slice(b * window, (b + 1) * window)
            lab = labels[rows, cols].reshape(n)
            mask = np.where(lab[:, None] != lab[None, :], -100.0, 0.0)  # timm's attn_mask
            q, k, v = _qkv(img[rows, cols].reshape(n, c), t, p + "attn.qkv", heads)
            logits = (q * q.shape[-1] ** -0.5) @ k.transpose(0, 2, 1) + bias + mask
            o = _lin(_merge_heads(_softmax(logits) @ v), t, p + "attn.proj")
            out[rows, cols] = o.reshape(window, window, c)
    x = x + np.roll(out, (shift, shift), (0, 1)).reshape(hgt * wid, c)
    return x + _mlp(_ln(x, t, p + "norm2", 1e-5), t, p)


def _swin_reference(t, image, *, depths, heads, window, **_):
    """timm SwinTransformer.forward (eval, timm >= 0.9 names), float64."""
    x = _ln(_patches(t, image), t, "patch_embed.norm", 1e-5)
    side = math.isqrt(len(x))
    grid = (side, side)
    for s, depth in enumerate(depths):
        if s:  # timm PatchMerging: reshape(H/2, 2, W/2, 2, C).permute(0, 2, 3, 1, 4) -> 4C
            h, w = grid
            c = x.shape[-1]
            x = x.reshape(h // 2, 2, w // 2, 2, c).transpose(0, 2, 3, 1, 4).reshape(-1, 4 * c)
            p = f"layers.{s}.downsample."
            x = _lin(_ln(x, t, p + "norm", 1e-5), t, p + "reduction")
            grid = (h // 2, w // 2)
        win = min(window, *grid)  # timm: a stage no larger than its window is one window
        for i in range(depth):
            shift = win // 2 if i % 2 and min(grid) > window else 0
            x = _swin_block(x, t, f"layers.{s}.blocks.{i}.", grid, win, shift, heads[s])
    return _lin(_ln(x, t, "norm", 1e-5).mean(0), t, "head.fc")


def _f64(t):
    return {k: np.asarray(v, np.float64) for k, v in t.items()}


def _images(seed, n=2):
    return np.random.default_rng(seed).standard_normal((n, SIZE, SIZE, 3)).astype(np.float32)


def _check_forward(model, t, reference, what, **kw):
    images = _images(1)
    logits = jax.jit(lambda m, x: m(x))(model, images)
    expected = np.stack([reference(_f64(t), img.astype(np.float64), **kw) for img in images])
    tolerances.assert_close(logits, expected, rtol=1e-5, atol=1e-5, what=what)


def _hub_folder(path, tensors, **config):
    """A Hugging Face timm/ folder: model.safetensors and timm's config.json."""
    path.mkdir(parents=True)
    safetensors.numpy.save_file(tensors, str(path / "model.safetensors"))
    if config:
        (path / "config.json").write_text(json.dumps(config))
    return path


def _pth(path, obj):
    """`torch.save(obj)` (zip format), tensors from numpy arrays."""

    def convert(o):
        if isinstance(o, dict):
            return collections.OrderedDict((k, convert(v)) for k, v in o.items())
        return tensor(o)

    path.write_bytes(torch_writer_zip(convert(obj)))
    return path


# ------------------------------------------------------------------------ forwards


def test_deit_from_a_hub_folder_equals_timms_forward(tmp_path):
    t = _vit_tensors(np.random.default_rng(0))
    folder = _hub_folder(
        tmp_path / "deit",
        t,
        architecture="deit_small_patch16_224",
        num_classes=CLASSES,
        global_pool="token",
        model_args={"num_heads": HEADS},
        pretrained_cfg={"mean": MEAN, "std": STD, "crop_pct": 0.9},
    )
    config = _config("model=deit_s", folder, model__num_layers=2, data__num_classes=CLASSES)
    assert config.model.checkpoint == str(folder)
    _check_forward(_build(config), t, _vit_reference, "ViT logits", heads=HEADS)


def test_deit3_pth_with_layer_scale_and_patch_positions_equals_timms_forward(tmp_path):
    """A torch file as DeiT's releases hold it ({'model': state dict}, here with DDP's `module.`
    prefix), positions without the class token and LayerScale (DeiT III)."""
    names = ("ls1.gamma", "ls2.gamma")
    t = _vit_tensors(np.random.default_rng(1), embed_class=False, layer_scale=names)
    path = _pth(tmp_path / "deit3.pth", {"model": {f"module.{k}": v for k, v in t.items()}})
    over = dict(model__num_layers=2, model__layer_scale=0.1, data__num_classes=5)
    model = _build(_config("model=deit_s", path, **over))
    _check_forward(model, t, _vit_reference, "DeiT III", heads=HEADS, layer_scale=names)
    # the facebookresearch/deit DeiT III files name LayerScale gamma_1 / gamma_2
    old = {
        k.replace("ls1.gamma", "gamma_1").replace("ls2.gamma", "gamma_2"): v for k, v in t.items()
    }
    other = _build(_config("model=deit_s", _pth(tmp_path / "old.pth", old), **over))
    for a, b in zip(
        jax.tree.leaves(nnx.state(model, nnx.Param)),
        jax.tree.leaves(nnx.state(other, nnx.Param)),
        strict=True,
    ):
        tolerances.assert_identical(a, b, what="gamma_1 / ls1.gamma")


def test_cait_equals_timms_forward(tmp_path):
    t = _cait_tensors(np.random.default_rng(2))
    folder = _hub_folder(tmp_path / "cait", t, architecture="cait_s24_224", global_pool="token")
    config = _config("model=cait_s24", folder, model__num_layers=2, data__num_classes=CLASSES)
    _check_forward(_build(config), t, _cait_reference, "CaiT logits", heads=HEADS)


def _swin_config(checkpoint=None):
    return _config(
        "model=swin_t", checkpoint, model__swin_heads=SWIN["heads"], data__num_classes=CLASSES
    )


def test_swin_equals_timms_forward(tmp_path):
    t = _swin_tensors(np.random.default_rng(3), **SWIN)
    folder = _hub_folder(tmp_path / "swin", t)
    model = _build(_swin_config(folder))
    assert model.encoder.stages[0][1].shift == 2  # the shifted block and its mask are exercised
    _check_forward(model, t, _swin_reference, "Swin logits", **SWIN)


def _official_swin(t):
    """The official release's names of a timm >= 0.9 Swin state dict: patch merging at the end
    of the stage before, `head`, and the saved buffers."""
    out = {}
    for name, value in t.items():
        if ".downsample." in name:
            s = int(name.split(".")[1])
            name = name.replace(f"layers.{s}.", f"layers.{s - 1}.", 1)
        out[name.replace("head.fc.", "head.")] = value
    index = _relative_index(SWIN["window"]).astype(np.int64)
    for s, depth in enumerate(SWIN["depths"]):
        for i in range(depth):
            out[f"layers.{s}.blocks.{i}.attn.relative_position_index"] = index
    out["layers.0.blocks.1.attn_mask"] = np.zeros((4, 16, 16), np.float32)
    return out


def test_official_swin_layout_loads_the_same_parameters(tmp_path):
    """The official release (and timm < 0.9): downsample at the end of each stage, `head`,
    relative_position_index and attn_mask buffers (skipped; the index checked)."""
    t = _swin_tensors(np.random.default_rng(4), **SWIN)
    new = _build(_swin_config(_hub_folder(tmp_path / "new", t)))
    old_file = _pth(tmp_path / "swin_tiny_patch4_window7_224.pth", {"model": _official_swin(t)})
    old = _build(_swin_config(old_file))
    for a, b in zip(
        jax.tree.leaves(nnx.state(new, nnx.Param)),
        jax.tree.leaves(nnx.state(old, nnx.Param)),
        strict=True,
    ):
        tolerances.assert_identical(a, b, what="official vs timm Swin names")
    bad = _official_swin(t)
    bad["layers.0.blocks.0.attn.relative_position_index"] = np.zeros((16, 16), np.int64)
    with pytest.raises(errors.DataError, match=r"relative_position_index.*not Swin's"):
        timm_checkpoints.load_timm(_pth(tmp_path / "bad.pth", bad), old, _swin_config().model)


# ------------------------------------------------------------------------ errors and options


def _abstract(config):
    """The model of `config` as shapes (`nnx.eval_shape`: no initialiser drawn or compiled);
    `load_timm` fills such a model as well as a built one."""
    task = tasks.get(config.task)
    return nnx.eval_shape(lambda: task.build_model(config, nnx.Rngs(0)))


def _unfilled(model) -> bool:
    return all(
        isinstance(v.get_value(), jax.ShapeDtypeStruct)
        for _, v in nnx.iter_graph(model)
        if isinstance(v, nnx.Variable)
    )


@pytest.fixture
def vit():
    """A smoke DeiT's config (2 blocks, 5 classes) and its model's shapes."""
    config = _config("model=deit_s", model__num_layers=2, data__num_classes=CLASSES)
    return config, _abstract(config)


def _load(vit, tmp_path, t, name="w.safetensors", **kw):
    config, model = vit
    path = tmp_path / name
    safetensors.numpy.save_file(t, str(path))
    return timm_checkpoints.load_timm(path, model, config.model, **kw)


@pytest.mark.parametrize(
    "edit, error, match",
    [
        (lambda t: t.pop("blocks.1.mlp.fc2.bias"), errors.DataError, r"missing tensor.*fc2.bias"),
        (
            lambda t: t.update({"blocks.0.norm1.weight": np.ones(31, np.float32)}),
            errors.DataError,
            r"'blocks.0.norm1.weight' has shape \(31,\), expected \(32,\)",
        ),
        (
            lambda t: t.update({"fc_norm.weight": np.ones(32, np.float32)}),
            errors.DataError,
            r"unknown tensor.*fc_norm.weight",
        ),
        (
            lambda t: t.update({"dist_token": np.ones((1, 1, 32), np.float32)}),
            errors.DataError,
            r"distilled DeiT",
        ),
        (
            lambda t: t.update({"norm.bias": np.ones(32, np.int32)}),
            errors.DataError,
            r"'norm.bias' has dtype int32",
        ),
        (lambda t: t.pop("pos_embed"), errors.DataError, r"missing tensor 'pos_embed'"),
    ],
    ids=["missing", "misshaped", "unknown", "distilled", "integer", "no-positions"],
)
def test_bad_tensors_are_one_named_error(vit, tmp_path, edit, error, match):
    t = _vit_tensors(np.random.default_rng(5))
    edit(t)
    with pytest.raises(error, match=match):
        _load(vit, tmp_path, t)
    assert _unfilled(vit[1])  # nothing was copied


def test_another_architecture_is_a_config_error_naming_every_field(vit, tmp_path):
    t = _vit_tensors(np.random.default_rng(6), layers=3, dim=48, mlp=96, grid=5, classes=7)
    with pytest.raises(errors.ConfigError) as e:
        _load(vit, tmp_path, t)
    message = str(e.value)
    for part in (
        "config.model.dim=32 (the checkpoint's: 48)",
        "config.model.num_layers=2 (the checkpoint's: 3)",
        "config.model.mlp_dim=64 (the checkpoint's: 96)",
        "config.data.image_size=32 (the checkpoint's positions are a 5x5 grid of patches: 40 px)",
        "a 5-class head (the checkpoint's: 7)",
    ):
        assert part in message, (part, message)


def test_config_json_heads_and_normalisation_are_checked(vit, tmp_path):
    t = _vit_tensors(np.random.default_rng(7))
    # deit_small_patch16_224 has 6 heads; the smoke model 4; ViT weights normalise with 0.5
    folder = _hub_folder(
        tmp_path / "hub",
        t,
        architecture="deit_small_patch16_224",
        pretrained_cfg={"mean": [0.5] * 3, "std": [0.5] * 3},
    )
    config, model = vit
    with pytest.raises(errors.ConfigError) as e:
        timm_checkpoints.load_timm(folder, model, config.model, mean=tuple(MEAN), std=tuple(STD))
    assert "config.model.num_heads=4 (the checkpoint's: 6)" in str(e.value)
    assert "--config.data.mean=(0.5,0.5,0.5)" in str(e.value)
    (folder / "config.json").write_text(json.dumps({"architecture": "resnet50"}))
    with pytest.raises(errors.DataError, match="'resnet50' is not one read here"):
        timm_checkpoints.load_timm(folder, model, config.model)


def test_cait_weights_need_talking_heads(tmp_path):
    t = _cait_tensors(np.random.default_rng(8))
    folder = _hub_folder(tmp_path / "cait", t)
    config = _config("model=cait_s24,attn=softmax", model__num_layers=2, data__num_classes=5)
    with pytest.raises(errors.ConfigError, match="talking-heads attention"):
        timm_checkpoints.load_timm(folder, _abstract(config), config.model)


def test_headless_checkpoint_keeps_the_initial_head_and_bfloat16_loads(vit, tmp_path):
    t = _vit_tensors(np.random.default_rng(9), classes=0)
    info = _load(vit, tmp_path, t)
    assert sorted(info["initialised"]) == ["head/bias", "head/kernel"]
    np.testing.assert_array_equal(vit[1].encoder.norm.bias[...], t["norm.bias"])
    path = tmp_path / "bf16.safetensors"
    safetensors.flax.save_file({k: jnp.asarray(v, jnp.bfloat16) for k, v in t.items()}, str(path))
    timm_checkpoints.load_timm(path, vit[1], vit[0].model)
    rounded = np.asarray(jnp.asarray(t["norm.bias"], jnp.bfloat16), np.float32)
    np.testing.assert_array_equal(vit[1].encoder.norm.bias[...], rounded)


@pytest.mark.slow  # two real builds of the model: ~3 s of initialiser compilation on 2 cores
def test_model_built_from_a_headless_checkpoint_draws_only_the_head(tmp_path):
    """`build_model` fills the model's shapes from the file; what the file lacks (the head)
    makes it build the model for real, the head drawn from the run's seed."""
    t = _vit_tensors(np.random.default_rng(11), layers=1, classes=0)
    path = _pth(tmp_path / "headless.pth", t)
    config = _config("model=deit_s", path, data__num_classes=3)
    model = _build(config)
    np.testing.assert_array_equal(
        model.encoder.blocks[0].mlp.fc1.kernel[...], t["blocks.0.mlp.fc1.weight"].T
    )
    plain = _config("model=deit_s", data__num_classes=3)
    head = _build(plain).head  # the same seed without a checkpoint
    np.testing.assert_array_equal(model.head.kernel[...], head.kernel[...])


def test_files_and_folders_are_found_or_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(errors.DataError, match="no model.safetensors or pytorch_model.bin"):
        timm_checkpoints.find_files(tmp_path / "empty")
    with pytest.raises(errors.DataError, match="no such file or folder"):
        timm_checkpoints.find_files(tmp_path / "absent")
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "S24_224.pth").write_bytes(b"")
    assert timm_checkpoints.find_files(tmp_path / "one") == (
        str(tmp_path / "one" / "S24_224.pth"),
        None,
    )
    (tmp_path / "w.npz").write_bytes(b"")
    with pytest.raises(errors.DataError, match="not a .safetensors or torch"):
        timm_checkpoints.read_tensors(str(tmp_path / "w.npz"))


def test_checkpoint_argument_and_its_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    without = config_lib.load("vision/imagenet.py:preset=smoke")
    assert "checkpoint" not in without.model  # configs without one are unchanged
    config = config_lib.load("vision/imagenet.py:preset=smoke,checkpoint=hub/deit")
    assert config.model.checkpoint == os.path.join(os.getcwd(), "hub", "deit")
    problems = validate.problems(config, tasks.get(config.task))
    assert any("config.model.checkpoint=" in p and "no such file" in p for p in problems)


def test_zero_steps_is_valid_unless_epochs_set_the_steps():
    config = config_lib.load("vision/imagenet.py:preset=smoke")
    assert not validate.problems(config_lib.override(config, {"total_steps": 0}))
    lra = config_lib.override(config_lib.load("lra/listops.py:model=samsa"), {"total_steps": 0})
    assert any("also pass --config.epochs=0" in p for p in validate.problems(lra))
    config_lib.override(config, {"total_steps": -1})
    assert any("config.total_steps=-1" in p for p in validate.problems(config))


# ------------------------------------------------------------------------ evaluation only


@pytest.mark.parametrize("layout", ["train-and-val", "val-only"])
def test_zero_step_run_reports_the_checkpoints_accuracy(tmp_path, layout):
    """`--config.total_steps=0` with a DeiT .pth evaluates once: the summary's accuracy is the
    float64 timm forward's on the eval transform of an image folder written here; with the
    validation images alone (no train/) the class list is val/'s folders."""
    folder = synthetic.write_folder(
        tmp_path / "images", classes=3, per_class=1, val_per_class=4, size=(40, 48)
    )
    if layout == "val-only":
        shutil.rmtree(folder / "train")
    t = _vit_tensors(np.random.default_rng(10), layers=1, classes=3)
    path = _pth(tmp_path / "deit_small_patch16_224-cd65a155.pth", {"model": t})
    config = _config(
        "model=deit_s",
        path,
        data__source="official",
        data__dir=str(folder),
        data__num_classes=3,
        data__num_train=0,
        data__num_val=0,
        data__num_test=0,
        total_steps=0,
    )
    summary = train.train_and_evaluate(config, tmp_path / "run")

    splits, description = data.load(config.data, evaluate_only=True)
    assert ("classes_from" in description) == (layout == "val-only")
    _, eval_fn = data.transforms_for(config.data)
    examples = [eval_fn(splits["test"][i]) for i in range(len(splits["test"]))]
    logits = np.stack(
        [_vit_reference(_f64(t), e["image"].astype(np.float64), HEADS) for e in examples]
    )
    labels = np.array([e["label"] for e in examples])
    accuracy = float(np.mean(logits.argmax(-1) == labels))
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    loss = float(-log_probs[np.arange(len(labels)), labels].mean())
    m = summary["metrics"]
    assert summary["steps"] == 0 and summary["notes"] == [train.EVALUATE_ONLY_NOTE]
    assert m["test_last"]["num_examples"] == len(labels) == 12
    for split in ("val_last", "val_best", "test_last", "test_best"):
        assert m[split]["accuracy"] == pytest.approx(accuracy, abs=1e-9), split
        assert m[split]["loss"] == pytest.approx(loss, rel=1e-5), split
    assert not list((tmp_path / "run" / "checkpoints").rglob("*.json")), "nothing is saved"
    again = train.train_and_evaluate(config, tmp_path / "run")  # finished: its summary
    assert again["metrics"] == json.loads(json.dumps(m))
