"""The CLI edge of the error taxonomy: store errors become one-line messages and exit codes, never tracebacks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from omxfs.errors import OmxError


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    try:
        yield
    except OmxError as exc:
        raise click.ClickException(exc.message) from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")) from exc
