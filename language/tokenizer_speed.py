"""Word-level tokenisation speed at WikiText-103's size (issue 17 target: >= 20 MB/s on one
core), measured by `python -m scripts.tokenizer_speed` (`measure`, `markdown`).

WikiText-style files are built from the offline Python-documentation sources (the byte-level
stand-in's text, repeated to the requested train size, plus WikiText-103-sized valid and test in
proportion) in a temporary folder that is deleted afterwards;
`language.data.tokenizers.build_word_level` (the train pass, the dictionary, valid and test) and,
separately, encoding the train file with the finished dictionary are timed. Rates are MB of text
per second of the process's CPU time and of wall time; the work is single-threaded (numpy's
element-wise kernels and Python).
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time

TARGET_MB_S = 20.0  # issue 17: "at least 20 MB/s on one core"
WIKITEXT103_BYTES = {"train": 539_909_772, "valid": 1_142_987, "test": 1_290_768}  # wiki.*.tokens


def _write_repeated(path: pathlib.Path, text: bytes, size: int) -> int:
    with path.open("wb") as f:
        written = 0
        while written < size:
            piece = text[: size - written]
            cut = piece.rfind(b"\n") + 1 if len(piece) < len(text) else len(piece)
            piece = piece[: cut or len(piece)]
            f.write(piece)
            written += len(piece)
            if not piece:
                break
    return written


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def measure(megabytes: float, source_dir: str | None = None) -> dict:
    import numpy as np

    from language.data import standin, tokenizers

    load_before = os.getloadavg()
    root = standin.find_standin_dir(source_dir)
    docs = sorted(root.rglob("*.rst.txt"))
    text = b"".join(p.read_bytes() for p in docs)
    train_bytes = int(megabytes * 1e6)
    scale = train_bytes / WIKITEXT103_BYTES["train"]
    with tempfile.TemporaryDirectory(prefix="tokspeed-") as tmp:
        tmp = pathlib.Path(tmp)
        files, sizes = {}, {}
        for split, offset in (
            ("train", 0),
            ("valid", len(text) // 3),
            ("test", 2 * len(text) // 3),
        ):
            files[split] = tmp / f"wiki.{split}.tokens"
            size = (
                train_bytes if split == "train" else max(int(WIKITEXT103_BYTES[split] * scale), 1)
            )
            rotated = text[offset:] + text[:offset]
            sizes[split] = _write_repeated(files[split], rotated, size)
        (streams, vocab), build_cpu, build_wall = _timed(
            lambda: tokenizers.build_word_level(files, progress=True)
        )
        (encoded, _), enc_cpu, enc_wall = _timed(
            lambda: tokenizers.tokenize_words(files["train"], vocab.index, progress=True)
        )
        if not np.array_equal(encoded, streams["train"]):
            raise AssertionError("encoding train with the dictionary differs from the build pass")
    total = sum(sizes.values())
    return dict(
        data=dict(
            text=f"Python documentation reST sources ({len(docs)} files, {len(text):,} bytes) "
            "repeated; WikiText-style files (train / valid / test)",
            source_dir=str(root),
            bytes=sizes,
            tokens={s: int(len(v)) for s, v in streams.items()},
            vocab_size=len(vocab),
        ),
        build=dict(
            cpu_s=build_cpu,
            wall_s=build_wall,
            bytes=total,
            mb_per_cpu_s=total / 1e6 / build_cpu,
            mb_per_wall_s=total / 1e6 / build_wall,
        ),
        encode_train=dict(
            cpu_s=enc_cpu,
            wall_s=enc_wall,
            bytes=sizes["train"],
            mb_per_cpu_s=sizes["train"] / 1e6 / enc_cpu,
            mb_per_wall_s=sizes["train"] / 1e6 / enc_wall,
        ),
        target_mb_s=TARGET_MB_S,
        load_average_before=load_before,
    )


def markdown(rec: dict) -> str:
    d, b, e = rec["data"], rec["build"], rec["encode_train"]
    dev = rec["device"]
    ok = lambda r: "meets" if r >= rec["target_mb_s"] else "misses"  # noqa: E731
    return "\n".join(
        [
            "# Word-level tokenisation speed (fairseq rule, `language.data.tokenizers`)",
            "",
            f"Device: {dev.get('kind')} ({dev.get('cpu_count')} cores; one process, one thread). "
            f"Text: {d['text']}: {d['bytes']['train']:,} bytes of train, {d['bytes']['valid']:,} "
            f"valid, {d['bytes']['test']:,} test; {d['tokens']['train']:,} train tokens, "
            f"vocabulary {d['vocab_size']:,}. Load average before the run: "
            f"{rec['load_average_before'][0]:.2f}.",
            "",
            "| pass | bytes | CPU s | wall s | MB/s (CPU) | MB/s (wall) | target 20 MB/s |",
            "|---|---|---|---|---|---|---|",
            f"| build: train pass + dictionary + valid/test | {b['bytes']:,} | {b['cpu_s']:.1f} | "
            f"{b['wall_s']:.1f} | {b['mb_per_cpu_s']:.1f} | {b['mb_per_wall_s']:.1f} | "
            f"{ok(b['mb_per_wall_s'])} |",
            f"| encode train with the dictionary | {e['bytes']:,} | {e['cpu_s']:.1f} | "
            f"{e['wall_s']:.1f} | {e['mb_per_cpu_s']:.1f} | {e['mb_per_wall_s']:.1f} | "
            f"{ok(e['mb_per_wall_s'])} |",
            "",
            "The repeated text has fewer word types than WikiText-103 (267,735): a new word takes "
            "the Python-dict path once, so real text adds about one dict insertion per type "
            "(~0.3 s for WikiText-103). Reproduce: `" + rec["command"] + "`.",
            "",
        ]
    )
