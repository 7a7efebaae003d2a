"""Word-level tokenisation speed at WikiText-103's size (issue 17 target: >= 20 MB/s on one core):
`language.tokenizer_speed` on WikiText-style files made from the offline Python docs.

    python -m scripts.tokenizer_speed                      # 540 MB (WikiText-103's train size)
    python -m scripts.tokenizer_speed --megabytes 8 --out /tmp/x       # seconds, for tests

Writes `<out>/tokenizer_speed.json` and `.md`.
"""

from __future__ import annotations

import sys

from attnbench import cli, errors, io


def main(argv) -> int:
    parser = cli.ArgumentParser(prog="scripts.tokenizer_speed", description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=539.909772)  # wiki.train.tokens
    parser.add_argument("--source-dir", default=None, help="folder of **/*.rst.txt files")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    if args.megabytes <= 0:
        raise errors.ConfigError(f"--megabytes {args.megabytes}: must be positive")
    from language import tokenizer_speed

    rec = tokenizer_speed.measure(args.megabytes, args.source_dir)
    command = "python -m scripts.tokenizer_speed " + " ".join(argv)
    text = io.write_record(args.out, "tokenizer_speed", rec, tokenizer_speed.markdown, command)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main))
