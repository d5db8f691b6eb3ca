"""capscore's exceptions: every error the package raises is a :class:`CapscoreError` (a
``ValueError``); a value of the wrong type is a :class:`CapscoreTypeError`, which is also a
``TypeError``, so code written for pycocoevalcap that catches either keeps working."""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar


class CapscoreError(ValueError):
    """A capscore error. ``code`` is the stable code the CLI and the HTTP API use for the same
    failure (for example ``"unknown_image_id"``, ``"metric_unavailable"``); ``str(err)`` is
    the message."""

    def __init__(self, message: str, code: str = "invalid_format") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __reduce__(self):  # picklable across processes (multiprocessing, Ray)
        return (type(self), (self.message, self.code))


class CapscoreTypeError(CapscoreError, TypeError):
    """A value of the wrong type (a caption that is not a string, an image id that is not a
    number or a string, a number out of range): a :class:`CapscoreError` and a ``TypeError``."""

    def __init__(self, message: str, code: str = "invalid_format") -> None:
        super().__init__(message, code)


F = TypeVar("F", bound=Callable[..., Any])


def translated(f: F) -> F:
    """Public entry points raise only :class:`CapscoreError`: a ``TypeError`` or
    ``OverflowError`` from the native extension or from Python's own checks becomes a
    :class:`CapscoreTypeError` with the original message (chained), and a text that is not
    valid Unicode (an unpaired surrogate, which has no UTF-8 form) a :class:`CapscoreError`
    with code ``invalid_format``."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except CapscoreError:
            raise
        except (TypeError, OverflowError) as e:
            raise CapscoreTypeError(f"{f.__qualname__}: {e}", "invalid_format") from e
        except UnicodeEncodeError as e:
            raise CapscoreError(
                f"{f.__qualname__}: a text is not valid Unicode ({e.reason}: {e.object[e.start:e.end]!r})",
                "invalid_format",
            ) from e

    return wrapper  # type: ignore[return-value]
