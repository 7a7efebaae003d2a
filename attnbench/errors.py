"""The project's user-error types: errors a user causes and can fix (a bad config, a missing or
corrupt data file, an unknown name, a workdir in use or holding another run, a run that diverged).

Entry points (`attnbench.cli.run`) print such an error as one line on stderr and exit with status 2;
any other exception is a bug of ours and keeps its traceback. Each message names what is wrong
(the field and the value typed, the file and line) and what to do.

Libraries that do not import `attnbench` (the attention library, a user's own module) mark their
user-error classes with a class attribute `user_error = True` instead of subclassing.
"""

from __future__ import annotations

__all__ = [
    "UserError",
    "ConfigError",
    "DataError",
    "UnknownNameError",
    "WorkdirError",
    "CheckpointError",
    "RunFailedError",
    "is_user_error",
]


class UserError(Exception):
    """Base class: caught by `attnbench.cli.run`, printed as one line, exit status 2."""


class ConfigError(UserError, ValueError):
    """A config argument, field or value that does not exist, parse or make sense."""


class DataError(UserError, ValueError):
    """A data file or directory is missing, malformed or corrupt; the message names it."""


class UnknownNameError(UserError, KeyError):
    """A registry name (task, attention mechanism, table, backbone) that does not exist; the
    message lists the known ones."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class WorkdirError(UserError):
    """A run directory that cannot be used: empty path, in use by another process, or holding a
    run with a different config."""


class CheckpointError(UserError):
    """No intact checkpoint to resume from; the message names each damaged step."""


class RunFailedError(UserError, RuntimeError):
    """A run stopped because training diverged (non-finite loss or gradient)."""


def is_user_error(exc: BaseException) -> bool:
    """A `UserError`, or an exception whose class sets `user_error = True`."""
    return isinstance(exc, UserError) or bool(getattr(type(exc), "user_error", False))
