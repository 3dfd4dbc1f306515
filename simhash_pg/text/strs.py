"""The one check that a text is a ``str``, below every module that reads texts."""

from __future__ import annotations

__all__ = ["ensure_str"]


def ensure_str(text: object) -> str:
    """Return ``text`` if it is a ``str``; raise a helpful :class:`TypeError` otherwise."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"expected a str, got {type(text).__name__}: decode it first, e.g. data.decode('utf-8')"
        )
    raise TypeError(f"expected a str, got {type(text).__name__}")
