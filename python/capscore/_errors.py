"""The one exception type of capscore."""

from __future__ import annotations


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
