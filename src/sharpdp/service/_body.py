"""The base of every request body: strict types, no unknown fields, and text that is Unicode."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["Body"]


def _unicode(value: Any) -> None:
    """Raise ``ValueError`` on a string with a lone surrogate (JSON's ``"\\ud800"`` decodes to
    one): it cannot be encoded, so it would fail later, in a path, a log or the engine."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (it holds a lone surrogate)") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _unicode(k)
            _unicode(v)
    elif isinstance(value, list):
        for v in value:
            _unicode(v)


class Body(BaseModel):
    """A request body: strict types, unknown fields refused, every string valid Unicode."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _text_is_unicode(cls, data: Any) -> Any:
        _unicode(data)
        return data
