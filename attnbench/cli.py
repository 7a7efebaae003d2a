"""What every entry point shares: one line and exit status 2 for a user error, a clean exit on
Ctrl-C, and an argument parser whose errors are one line too.

    def main(argv) -> int: ...
    if __name__ == "__main__":
        sys.exit(cli.run(main))

User errors are the types in `attnbench.errors` (and the registries' unknown-name errors, which
subclass them); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Callable, Sequence

from attnbench import errors

__all__ = [
    "CONSOLE_SCRIPTS",
    "prog",
    "command_line",
    "run",
    "one_line",
    "ArgumentParser",
    "add_import_argument",
    "positive_int",
    "non_negative_int",
]

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
# The console scripts pyproject.toml installs, by the module each runs (`run()` in it).
CONSOLE_SCRIPTS = {
    "scripts.train": "attnbench-train",
    "scripts.reproduce": "attnbench-reproduce",
    "scripts.tables": "attnbench-tables",
    "scripts.bench": "attnbench-bench",
    "scripts.flops": "attnbench-flops",
    "scripts.data": "attnbench-data",
    "scripts.tensorboard": "attnbench-tensorboard",
}


def prog(module: str) -> str:
    """The running command's name, for its `--help` and its errors: the console script's
    (`attnbench-train`) when it was started through it, else the module's (`scripts.train`)."""
    console = CONSOLE_SCRIPTS.get(module)
    if console is not None and pathlib.Path(sys.argv[0]).name == console:
        return console
    return module


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (inner newlines become `; `)."""
    text = str(exc).strip() or type(exc).__name__
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def command_line(module: str, argv: Sequence[str]) -> str:
    """The command as a user would type it again: `attnbench-bench ...` when started through
    the console script, else `python -m scripts.bench ...`."""
    name = prog(module)
    return " ".join([name if name != module else f"python -m {module}", *argv])


def run(main: Callable[[Sequence[str]], int | None], argv: Sequence[str] | None = None) -> int:
    """Calls `main(argv)` and returns its exit status: 0 (or main's own), 2 with one line on
    stderr for a user error, 130 on Ctrl-C (SIGINT)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return int(main(argv) or 0)
    except Exception as e:
        if not errors.is_user_error(e):
            raise
        sys.stdout.flush()
        print(f"error: {one_line(e)}", file=sys.stderr, flush=True)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        sys.stdout.flush()
        print("interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (`error: <prog>: <message>; see --help`) with
    exit status 2, like the user errors of `run`."""

    def error(self, message: str):  # noqa: D401 (argparse API)
        print(f"error: {self.prog}: {message}; see --help", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_USER_ERROR)


def add_import_argument(parser: argparse.ArgumentParser) -> None:
    """`--import MODULE` (repeatable) into `args.imports`, for
    `attnbench.plugins.import_modules`."""
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="a module or .py file to import first (your own attention registers itself)",
    )


def _int_at_least(lowest: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"{value} is not {what}")
        return value

    parse.__name__ = what.replace(" ", "_")
    return parse


positive_int = _int_at_least(1, "a positive integer")
non_negative_int = _int_at_least(0, "a non-negative integer")
