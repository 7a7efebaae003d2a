"""Per-example image augmentation for the vision recipes, as `attnbench.data.pipeline` transforms.

Every transform here is `f(example: dict, rng: np.random.Generator) -> dict`: it reads
`example["image"]`, returns a new dict with the new image (other fields kept) and never writes into
the input arrays (an in-memory source hands out views of its arrays). All randomness comes from
`rng`, which `attnbench.data.pipeline` seeds from (seed, position in the stream), so a resumed run
draws the same augmentations. The factories return `functools.partial`s of module-level functions,
so transforms pickle into grain's worker processes.

Images are uint8 `[H, W, 3]` (RGB) or `[H, W]` / `[H, W, 1]` (grayscale) until `normalize` or
`to_float` turns them into float32 `[H, W, C]`; `random_erasing` then works on the float image.
Resampling uses Pillow, as torchvision and timm do on PIL images (Pillow's resize always
antialiases).

Where each rule comes from:

* `random_crop`, `horizontal_flip`: torchvision `RandomCrop(size, padding)` (zero padding on all
  four sides, then a uniform window) and `RandomHorizontalFlip(p)`; the CIFAR recipe of
  Sliceformer (RandomCrop(32, padding=4) + RandomHorizontalFlip + Normalize) and DeiT's
  replacement of the random resized crop for inputs of 32 pixels or less (DeiT `datasets.py`).
* `random_resized_crop`: torchvision `RandomResizedCrop.get_params` (area fraction uniform in
  `scale`, log aspect ratio (w/h) uniform in log `ratio`, side lengths rounded, 10 attempts, then
  the central crop clamped to the ratio range), resampled to `size`; DeiT trains with bicubic.
* `resize_center_crop`: timm `transforms_imagenet_eval` / DeiT's eval transform: the short side to
  `floor(size / crop_pct)` (torchvision `Resize(int)`: the long side truncated to `int`), then
  torchvision `CenterCrop` (offsets `int(round((H - size) / 2))`).
* `rand_augment`: timm `auto_augment.rand_augment_transform("rand-m9-mstd0.5-inc1")`, DeiT's
  setting (Cubuk et al. 2020's RandAugment with timm's magnitude rules, per-op probability 0.5
  and magnitude noise); the fill colour of the geometric ops is the ImageNet mean in 0..255,
  (124, 116, 104), which timm's `create_transform` passes as `img_mean`; geometric ops resample
  bicubically as DeiT's `interpolation="bicubic"` makes them.
* `random_erasing`: timm `RandomErasing` (Zhong et al. 2020) as DeiT uses it (p 0.25, mode
  "pixel", one box), applied after normalisation.
* `normalize`: torchvision `ToTensor` + `Normalize`: `(x / 255 - mean) / std`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "DEIT_FILL",
    "RAND_OPS",
    "RAND_INCREASING_OPS",
    "Transform",
    "compose",
    "random_crop",
    "horizontal_flip",
    "random_resized_crop",
    "resized_crop_window",
    "resize",
    "resize_center_crop",
    "rand_augment",
    "op_argument",
    "apply_op",
    "random_erasing",
    "normalize",
    "to_float",
    "deit_train",
    "deit_eval",
]

Transform = Callable[[dict, np.random.Generator], dict]

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # timm IMAGENET_DEFAULT_MEAN
IMAGENET_STD = (0.229, 0.224, 0.225)  # timm IMAGENET_DEFAULT_STD
# timm create_transform: img_mean = min(255, round(255 * m)) per channel -> (124, 116, 104).
DEIT_FILL = tuple(min(255, round(255 * m)) for m in IMAGENET_MEAN)

_INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming")


# ----------------------------------------------------------------------------- helpers


def _with_image(example: dict, image: np.ndarray) -> dict:
    out = dict(example)
    out["image"] = image
    return out


def _size2(size: int | Sequence[int]) -> tuple[int, int]:
    """An int or (h, w) -> (h, w)."""
    if isinstance(size, int | np.integer):
        return int(size), int(size)
    h, w = size
    return int(h), int(w)


def _check_uint8(image: np.ndarray, what: str) -> None:
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise TypeError(
            f"{what} needs a uint8 image [H, W], [H, W, 1] or [H, W, 3], got {image.dtype} "
            f"{image.shape}; resample before normalize/to_float"
        )


def _resample(name: str):
    from PIL import Image

    if name not in _INTERPOLATIONS:
        raise ValueError(f"unknown interpolation {name!r}; known: {', '.join(_INTERPOLATIONS)}")
    return getattr(Image.Resampling, name.upper())


def _to_pil(image: np.ndarray):
    from PIL import Image

    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]
    return Image.fromarray(np.ascontiguousarray(image))


def _from_pil(img, like: np.ndarray) -> np.ndarray:
    """Back to numpy with the channel layout of `like` ([H, W, 1] stays [H, W, 1])."""
    out = np.asarray(img, dtype=np.uint8)
    if like.ndim == 3 and like.shape[-1] == 1:
        out = out[..., None]
    return np.array(out)  # Pillow's buffer may be read-only; callers own their result


def _pil_resize(image: np.ndarray, hw: tuple[int, int], interpolation: str) -> np.ndarray:
    if image.shape[:2] == hw:
        return image.copy()
    img = _to_pil(image).resize((hw[1], hw[0]), resample=_resample(interpolation))
    return _from_pil(img, image)


def _short_side_size(height: int, width: int, size: int) -> tuple[int, int]:
    """torchvision `Resize(int)`: the short side becomes `size`, the long side
    `int(size * long / short)` (truncated)."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


# ----------------------------------------------------------------------------- compose


def _compose(example: dict, rng: np.random.Generator, *, transforms: tuple) -> dict:
    for t in transforms:
        example = t(example, rng)
    return example


def compose(*transforms: Transform) -> Transform:
    """The transforms applied in order, all drawing from the one Generator (so the draws of a
    later transform depend on how many the earlier ones made, as in a torchvision Compose
    sharing the global RNG)."""
    return functools.partial(_compose, transforms=tuple(transforms))


# ----------------------------------------------------------------------------- crops and flips


def _random_crop(example, rng, *, size, padding):
    image = example["image"]
    if padding:
        pad = [(padding, padding), (padding, padding)] + [(0, 0)] * (image.ndim - 2)
        image = np.pad(image, pad)  # zeros, as torchvision's default fill=0
    th, tw = size
    h, w = image.shape[:2]
    if h < th or w < tw:
        raise ValueError(f"crop {size} is larger than the padded image {(h, w)}")
    top = int(rng.integers(0, h - th + 1))
    left = int(rng.integers(0, w - tw + 1))
    return _with_image(example, image[top : top + th, left : left + tw].copy())


def random_crop(size: int | Sequence[int], padding: int = 0) -> Transform:
    """torchvision `RandomCrop(size, padding)`: zero-pad `padding` pixels on every side, then a
    window of `size` ((h, w) or an int) at a uniform offset (top drawn before left). Any dtype,
    [H, W] or [H, W, C]."""
    return functools.partial(_random_crop, size=_size2(size), padding=int(padding))


def _horizontal_flip(example, rng, *, p):
    if rng.random() < p:
        return _with_image(example, example["image"][:, ::-1].copy())
    return example


def horizontal_flip(p: float = 0.5) -> Transform:
    """torchvision `RandomHorizontalFlip(p)`: mirror the width axis with probability `p`."""
    return functools.partial(_horizontal_flip, p=float(p))


def resized_crop_window(
    height: int,
    width: int,
    rng: np.random.Generator,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
) -> tuple[int, int, int, int]:
    """torchvision `RandomResizedCrop.get_params`: `(top, left, h, w)` of the crop window.

    Up to 10 attempts: area `U(scale) * H * W`, aspect ratio w/h `exp(U(log ratio))`,
    `w = round(sqrt(area * ratio))`, `h = round(sqrt(area / ratio))`; the first window with
    `0 < w <= W` and `0 < h <= H` is placed uniformly. Otherwise the central crop of the whole
    image, narrowed to the nearest ratio in range.
    """
    area = height * width
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_lo, log_hi))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            top = int(rng.integers(0, height - h + 1))
            left = int(rng.integers(0, width - w + 1))
            return top, left, h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        w, h = int(round(height * max(ratio))), height
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def _random_resized_crop(example, rng, *, size, scale, ratio, interpolation):
    image = example["image"]
    _check_uint8(image, "random_resized_crop")
    top, left, h, w = resized_crop_window(image.shape[0], image.shape[1], rng, scale, ratio)
    window = image[top : top + h, left : left + w]
    return _with_image(example, _pil_resize(window, size, interpolation))


def random_resized_crop(
    size: int | Sequence[int],
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    interpolation: str = "bicubic",
) -> Transform:
    """torchvision `RandomResizedCrop`: a window from `resized_crop_window`, resampled to
    `size` ((h, w) or an int) with Pillow. uint8 input; output uint8 [size, size(, C)]."""
    _resample(interpolation)  # fail at construction on a misspelt name
    return functools.partial(
        _random_resized_crop,
        size=_size2(size),
        scale=tuple(scale),
        ratio=tuple(ratio),
        interpolation=interpolation,
    )


def _resize(example, rng, *, size, interpolation):
    image = example["image"]
    _check_uint8(image, "resize")
    if isinstance(size, int):
        hw = _short_side_size(image.shape[0], image.shape[1], size)
    else:
        hw = size
    return _with_image(example, _pil_resize(image, hw, interpolation))


def resize(size: int | Sequence[int], interpolation: str = "bicubic") -> Transform:
    """torchvision `Resize`: an int resizes the short side to `size` keeping the aspect ratio
    (long side truncated), an (h, w) pair resizes to exactly that. uint8 input. Bicubic by
    default, as DeiT (torchvision's own default is bilinear)."""
    _resample(interpolation)
    size = int(size) if isinstance(size, int | np.integer) else _size2(size)
    return functools.partial(_resize, size=size, interpolation=interpolation)


def _center_crop(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """torchvision `CenterCrop`: zero-pad a too-small image symmetrically (the extra pixel at the
    bottom/right), then crop at `int(round((H - h) / 2))` (Python's round, half to even)."""
    th, tw = size
    h, w = image.shape[:2]
    if th > h or tw > w:
        ph, pw = max(th - h, 0), max(tw - w, 0)
        pad = [(ph // 2, (ph + 1) // 2), (pw // 2, (pw + 1) // 2)] + [(0, 0)] * (image.ndim - 2)
        image = np.pad(image, pad)
        h, w = image.shape[:2]
    top = int(round((h - th) / 2.0))
    left = int(round((w - tw) / 2.0))
    return image[top : top + th, left : left + tw].copy()


def _resize_center_crop(example, rng, *, size, crop_pct, interpolation):
    image = example["image"]
    _check_uint8(image, "resize_center_crop")
    scale_size = math.floor(size / crop_pct)
    hw = _short_side_size(image.shape[0], image.shape[1], scale_size)
    resized = _pil_resize(image, hw, interpolation)
    return _with_image(example, _center_crop(resized, (size, size)))


def resize_center_crop(
    size: int, crop_pct: float = 0.875, interpolation: str = "bicubic"
) -> Transform:
    """timm's eval transform (and DeiT's, `eval_crop_ratio` 0.875): resize the short side to
    `floor(size / crop_pct)` (224 -> 256), then the central `size x size` crop. Deterministic
    (ignores `rng`). uint8 input."""
    _resample(interpolation)
    if not 0 < crop_pct:
        raise ValueError(f"crop_pct must be positive, got {crop_pct}")
    return functools.partial(
        _resize_center_crop, size=int(size), crop_pct=float(crop_pct), interpolation=interpolation
    )


# ----------------------------------------------------------------------------- RandAugment

# timm `_RAND_TRANSFORMS` and `_RAND_INCREASING_TRANSFORMS` (the 'inc1' list), in timm's order;
# op choice is uniform with replacement over the list, so the order only fixes which index
# draws which op. Cutout is left out as in timm (random erasing plays its part).
RAND_OPS = (
    "AutoContrast",
    "Equalize",
    "Invert",
    "Rotate",
    "Posterize",
    "Solarize",
    "SolarizeAdd",
    "Color",
    "Contrast",
    "Brightness",
    "Sharpness",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
)
RAND_INCREASING_OPS = (
    "AutoContrast",
    "Equalize",
    "Invert",
    "Rotate",
    "PosterizeIncreasing",
    "SolarizeIncreasing",
    "SolarizeAdd",
    "ColorIncreasing",
    "ContrastIncreasing",
    "BrightnessIncreasing",
    "SharpnessIncreasing",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
)
_SIGNED = {"Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"}
_SIGNED |= {f"{n}Increasing" for n in ("Color", "Contrast", "Brightness", "Sharpness")}
_GEOMETRIC = {"Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"}
_LEVEL_DENOM = 10.0  # timm: magnitude M maps to the fraction M / 10 of each op's range


def op_argument(name: str, magnitude: float, negate: bool = False):
    """timm's magnitude rule (`LEVEL_TO_ARG`): the argument of op `name` at `magnitude`
    (already noised and clipped to [0, 10]); `negate` flips the sign of signed ops (timm
    negates with probability 1/2). With f = magnitude / 10:

      AutoContrast, Equalize, Invert   no argument (None)
      Rotate                 degrees  +-30 f (counter-clockwise for +)
      Posterize              bits kept  int(4 f)            (severity falls with M)
      PosterizeIncreasing    bits kept  4 - int(4 f)        (M 10 keeps 0 bits: black)
      Solarize               threshold  min(256, int(256 f)) (severity falls with M)
      SolarizeIncreasing     threshold  256 - min(256, int(256 f))
      SolarizeAdd            added  min(128, int(110 f)) to pixels below 128
      Color/Contrast/Brightness/Sharpness   enhance factor  1.8 f + 0.1 (1 = unchanged)
      ...Increasing          enhance factor  max(0.1, 1 +- 0.9 f)
      ShearX, ShearY         shear  +-0.3 f
      TranslateXRel/YRel     shift  +-0.45 f of the width / height (timm translate_pct)
    """
    f = magnitude / _LEVEL_DENOM
    sign = -1.0 if negate else 1.0
    base = name.removesuffix("Increasing")
    increasing = name.endswith("Increasing")
    if name in ("AutoContrast", "Equalize", "Invert"):
        return None
    if name == "Rotate":
        return sign * 30.0 * f
    if base == "Posterize":
        bits = int(f * 4)
        return 4 - bits if increasing else bits
    if base == "Solarize":
        thresh = min(256, int(f * 256))
        return 256 - thresh if increasing else thresh
    if name == "SolarizeAdd":
        return min(128, int(f * 110))
    if base in ("Color", "Contrast", "Brightness", "Sharpness"):
        if increasing:
            return max(0.1, 1.0 + sign * 0.9 * f)
        return 1.8 * f + 0.1
    if name in ("ShearX", "ShearY"):
        return sign * 0.3 * f
    if name in ("TranslateXRel", "TranslateYRel"):
        return sign * 0.45 * f
    raise ValueError(f"unknown RandAugment op {name!r}; known: {', '.join(_all_ops())}")


def _all_ops() -> tuple[str, ...]:
    return tuple(dict.fromkeys(RAND_OPS + RAND_INCREASING_OPS))


def _fill_for(img, fill: Sequence[int]):
    """The fill colour in the image's mode: RGB as given; a grayscale image gets the colour's
    luma (Pillow's RGB -> L conversion, ITU-R 601-2: 117 for DeiT's fill)."""
    from PIL import Image

    rgb = tuple(int(c) for c in fill)
    if img.mode == "RGB":
        return rgb
    return Image.new("RGB", (1, 1), rgb).convert(img.mode).getpixel((0, 0))


def apply_op(
    image: np.ndarray,
    name: str,
    magnitude: float,
    negate: bool = False,
    *,
    fill: Sequence[int] = DEIT_FILL,
    interpolation: str = "bicubic",
) -> np.ndarray:
    """One RandAugment op at a fixed (noised, clipped) magnitude, as timm applies it.

    Args:
      image: uint8 [H, W], [H, W, 1] or [H, W, 3].
      name: an op of `RAND_OPS` or `RAND_INCREASING_OPS`.
      magnitude: in [0, 10]; mapped to the op's argument by `op_argument`.
      negate: the sign draw of signed ops (ignored by the others).
      fill: RGB colour of the area a geometric op uncovers.
      interpolation: resampling of the geometric ops.
    Returns:
      uint8, the shape of `image`.

    The point ops (Invert, Posterize, Solarize, SolarizeAdd) are exact integer maps written in
    numpy; the others are Pillow's `ImageOps` / `ImageEnhance` / affine transforms, which is
    what timm calls. Posterize to 0 bits gives black, as the TF reference and timm with older
    Pillow did (Pillow 13's `ImageOps.posterize` refuses 0 bits).
    """
    from PIL import Image, ImageEnhance, ImageOps

    _check_uint8(image, "RandAugment")
    arg = op_argument(name, magnitude, negate)
    base = name.removesuffix("Increasing")
    if name == "Invert":
        return 255 - image
    if base == "Posterize":
        if arg >= 8:
            return image.copy()
        mask = np.uint8((0xFF << (8 - arg)) & 0xFF)  # keep the `arg` most significant bits
        return image & mask
    if base == "Solarize":
        return np.where(image >= arg, 255 - image, image).astype(np.uint8)
    if name == "SolarizeAdd":
        added = np.minimum(image.astype(np.int32) + arg, 255).astype(np.uint8)
        return np.where(image < 128, added, image)

    img = _to_pil(image)
    if name == "AutoContrast":
        out = ImageOps.autocontrast(img)
    elif name == "Equalize":
        out = ImageOps.equalize(img)
    elif base in ("Color", "Contrast", "Brightness", "Sharpness"):
        out = getattr(ImageEnhance, base)(img).enhance(arg)
    else:  # geometric: Pillow's affine maps each output pixel to the input point it samples
        kw = dict(resample=_resample(interpolation), fillcolor=_fill_for(img, fill))
        if name == "Rotate":
            out = img.rotate(arg, **kw)
        else:
            w, h = img.size
            matrix = {
                "ShearX": (1, arg, 0, 0, 1, 0),
                "ShearY": (1, 0, 0, arg, 1, 0),
                "TranslateXRel": (1, 0, arg * w, 0, 1, 0),
                "TranslateYRel": (1, 0, 0, 0, 1, arg * h),
            }[name]
            out = img.transform(img.size, Image.Transform.AFFINE, matrix, **kw)
    return _from_pil(out, image)


def _rand_augment(
    example, rng, *, ops, num_ops, magnitude, magnitude_std, magnitude_max, prob, fill, interp
):
    image = example["image"]
    _check_uint8(image, "rand_augment")
    out = image
    for k in rng.integers(0, len(ops), size=num_ops):  # uniform, with replacement (timm)
        name = ops[int(k)]
        if prob < 1.0 and rng.random() > prob:  # timm: skipped when U > prob
            continue
        m = magnitude
        if magnitude_std == math.inf:  # timm 'mstd' > 100: uniform in [0, M]
            m = rng.uniform(0.0, magnitude)
        elif magnitude_std > 0:
            m = rng.normal(magnitude, magnitude_std)
        m = min(max(m, 0.0), magnitude_max)
        negate = bool(rng.random() < 0.5)  # drawn for every applied op; used by signed ones
        op_interp = interp
        if interp == "random" and name in _GEOMETRIC:  # timm's default: bilinear or bicubic
            op_interp = ("bilinear", "bicubic")[int(rng.integers(0, 2))]
        out = apply_op(out, name, m, negate, fill=fill, interpolation=op_interp)
    if out is image:
        return example
    return _with_image(example, out)


def rand_augment(
    num_ops: int = 2,
    magnitude: float = 9,
    magnitude_std: float = 0.5,
    increasing: bool = True,
    *,
    prob: float = 0.5,
    magnitude_max: float = 10.0,
    fill: Sequence[int] = DEIT_FILL,
    interpolation: str = "bicubic",
) -> Transform:
    """timm RandAugment, `rand-m{magnitude}-n{num_ops}-mstd{magnitude_std}-inc{increasing}`;
    the defaults are DeiT's `rand-m9-mstd0.5-inc1`.

    Per image: `num_ops` ops drawn uniformly with replacement from `RAND_INCREASING_OPS`
    (`increasing`) or `RAND_OPS`; each applied with probability `prob`, at a magnitude
    drawn from N(magnitude, magnitude_std) (`inf` or > 100: uniform in [0, magnitude]; 0:
    fixed), clipped to [0, magnitude_max], mapped to its argument by `op_argument`. uint8
    input and output.
    `interpolation="random"` picks bilinear or bicubic per geometric op (timm's default when
    no interpolation is given).
    """
    if interpolation != "random":
        _resample(interpolation)
    if magnitude_std > 100:  # timm's config strings spell uniform sampling as mstd > 100
        magnitude_std = math.inf
    return functools.partial(
        _rand_augment,
        ops=RAND_INCREASING_OPS if increasing else RAND_OPS,
        num_ops=int(num_ops),
        magnitude=float(magnitude),
        magnitude_std=float(magnitude_std),
        magnitude_max=float(magnitude_max),
        prob=float(prob),
        fill=tuple(int(c) for c in fill),
        interp=interpolation,
    )


# ----------------------------------------------------------------------------- float stage


def _float_image(image: np.ndarray) -> np.ndarray:
    x = image.astype(np.float32) / np.float32(255.0)
    return x[..., None] if x.ndim == 2 else x


def _normalize(example, rng, *, mean, std):
    x = _float_image(example["image"])
    if mean.size not in (1, x.shape[-1]) or std.size not in (1, x.shape[-1]):
        # broadcasting 3 means over a grayscale image would silently make it RGB
        raise ValueError(
            f"normalize: {mean.size} means / {std.size} stds for {x.shape[-1]} channels"
        )
    return _with_image(example, (x - mean) / std)


def normalize(
    mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD
) -> Transform:
    """torchvision `ToTensor` + `Normalize`: uint8 -> float32 [H, W, C] `(x / 255 - mean) /
    std`, channels last (a grayscale [H, W] gets C = 1). `mean`/`std` per channel, in [0, 1]
    units (timm's constants), of length C or 1."""
    return functools.partial(
        _normalize,
        mean=np.asarray(mean, np.float32).reshape(-1),
        std=np.asarray(std, np.float32).reshape(-1),
    )


def _to_float(example, rng):
    return _with_image(example, _float_image(example["image"]))


def to_float() -> Transform:
    """uint8 -> float32 [H, W, C] in [0, 1] (`ToTensor` without normalisation)."""
    return _to_float


def _random_erasing(example, rng, *, p, mode, min_area, max_area, log_aspect, max_count):
    image = example["image"]
    if not np.issubdtype(image.dtype, np.floating):
        raise TypeError(f"random_erasing works on the normalised float image, got {image.dtype}")
    if rng.random() > p:  # timm: erase unless U > p
        return example
    x = image[..., None] if image.ndim == 2 else image
    height, width, channels = x.shape
    out = x.copy()
    area = height * width
    count = 1 if max_count == 1 else int(rng.integers(1, max_count + 1))
    for _ in range(count):
        for _attempt in range(10):
            target_area = rng.uniform(min_area, max_area) * area / count
            aspect = math.exp(rng.uniform(*log_aspect))  # h / w
            h = int(round(math.sqrt(target_area * aspect)))
            w = int(round(math.sqrt(target_area / aspect)))
            if w < width and h < height:
                top = int(rng.integers(0, height - h + 1))
                left = int(rng.integers(0, width - w + 1))
                if mode == "pixel":
                    patch = rng.standard_normal((h, w, channels), dtype=np.float32)
                elif mode == "rand":
                    patch = rng.standard_normal((1, 1, channels), dtype=np.float32)
                else:
                    patch = 0.0
                out[top : top + h, left : left + w] = patch
                break
    return _with_image(example, out.reshape(image.shape))


def random_erasing(
    p: float = 0.25,
    mode: str = "pixel",
    *,
    min_area: float = 0.02,
    max_area: float = 1 / 3,
    min_aspect: float = 0.3,
    max_aspect: float | None = None,
    max_count: int = 1,
) -> Transform:
    """timm `RandomErasing`, on the normalised float32 image [H, W, C] (or [H, W]).

    With probability `p`, `count` boxes (1, or uniform in 1..max_count) are erased; for each, up
    to 10 attempts draw an area `U(min_area, max_area) * H * W / count` and an aspect ratio h/w
    log-uniform in [min_aspect, max_aspect] (default 1 / min_aspect: (0.3, 3.33)),
    `h = round(sqrt(area * ratio))`, `w = round(sqrt(area / ratio))`, kept when `h < H` and
    `w < W`, placed uniformly. Fill: "pixel" per-pixel N(0, 1) noise (DeiT), "rand" one N(0, 1)
    colour per box, "const" zeros (which is the mean colour after normalisation).
    """
    if mode not in ("pixel", "rand", "const"):
        raise ValueError(f"mode must be 'pixel', 'rand' or 'const', got {mode!r}")
    max_aspect = max_aspect or 1.0 / min_aspect
    return functools.partial(
        _random_erasing,
        p=float(p),
        mode=mode,
        min_area=float(min_area),
        max_area=float(max_area),
        log_aspect=(math.log(min_aspect), math.log(max_aspect)),
        max_count=int(max_count),
    )


# ----------------------------------------------------------------------------- recipes


def deit_train(size: int = 224) -> Transform:
    """DeiT's training transform (`datasets.build_transform`, timm `create_transform` with
    DeiT's defaults): random resized crop (bicubic; RandomCrop(size, padding=4) instead when
    `size <= 32`), flip 0.5, RandAugment rand-m9-mstd0.5-inc1 (colour jitter is off when
    RandAugment is on), ImageNet normalisation, random erasing 0.25 'pixel'. Mixup/CutMix and
    label smoothing happen on the batch (`vision.mixup`)."""
    crop = random_crop(size, padding=4) if size <= 32 else random_resized_crop(size)
    return compose(crop, horizontal_flip(), rand_augment(), normalize(), random_erasing())


def deit_eval(size: int = 224) -> Transform:
    """DeiT's eval transform: short side to int(size / 0.875), central crop (bicubic), ImageNet
    normalisation; for `size <= 32` normalisation only."""
    if size <= 32:
        return normalize()
    return compose(resize_center_crop(size), normalize())
