"""JSON descriptions of guarantees and mechanisms (the item format of the ledger, version 1).

A description is ``{"type": <registered name>, "params": {<constructor keyword>: <value>, ...}}``.
The parameters are the object's dataclass fields that are constructor arguments and take part in
equality (caches are skipped), under the name of the constructor keyword: a field stored as
``epsilon_``/``delta_`` (because ``epsilon()`` and ``delta()`` are query methods) is written
``epsilon``/``delta``. Values are encoded as follows (see
``docs/ledger.md``):

* ``float`` → a JSON number written with Python's shortest round-trip ``repr`` (exact), except
  ``inf``/``-inf`` → ``{"float": "inf"}``/``{"float": "-inf"}`` (JSON has no infinities; NaN is
  never a valid parameter);
* ``int``, ``bool``, ``str``, ``None`` → the JSON scalar;
* ``Fraction`` → ``{"fraction": "p/q"}`` (exact rationals, e.g. a discrete Gaussian's σ);
* ``tuple``/``list`` → a JSON array (decoded as a tuple);
* a nested guarantee (e.g. the items of a composition) → its own description.

Types are looked up in a registry by name: every public concrete guarantee or mechanism class
defined in ``sharpdp.guarantees``, ``sharpdp.mechanisms`` and ``sharpdp.accounting.composition`` is registered
under its class name (the names never change meaning: a new
analysis gets a new name), and :func:`register_type` adds user-defined classes under an explicit
name.
:func:`dumps` checks that the description decodes back to an equal object, so anything written to a
ledger reads back as exactly the item that was spent; what cannot be described (e.g.
``RDP.from_function``, whose curve is a Python callable) raises
:class:`~sharpdp.errors.InvalidParameter`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import sys
import threading
from fractions import Fraction
from typing import Any, TypeVar

from sharpdp._validate import json_unique
from sharpdp.errors import InvalidParameter, SharpDPError
from sharpdp.guarantees import Guarantee

__all__ = ["dumps", "from_description", "known_types", "loads", "register_type", "to_description"]

G = TypeVar("G", bound=type[Guarantee])

_lock = threading.RLock()  # re-entrant: discovery imports modules that may register types
_BY_NAME: dict[str, type[Guarantee]] = {}
_BY_TYPE: dict[type[Guarantee], str] = {}

#: Modules whose import defines the library's own guarantee and mechanism classes.
_LIBRARY_MODULES = ("sharpdp.guarantees", "sharpdp.mechanisms", "sharpdp.accounting.composition")


def register_type(cls: G, name: str | None = None) -> G:
    """Register a guarantee class for descriptions (usable as a class decorator).

    Args:
        cls: a frozen dataclass subclass of :class:`~sharpdp.Guarantee` whose constructor accepts
            its fields as keywords (``epsilon_``/``delta_`` as ``epsilon``/``delta``).
        name: the stable name written in ledgers; defaults to the class name for sharpdp's own
            classes and is required for classes defined elsewhere (so that a user's class never
            shadows a library name by accident).

    Returns:
        ``cls`` unchanged.

    Raises:
        InvalidParameter: not a dataclass guarantee, a missing name, or a name already taken by
            another class.
    """
    if not (isinstance(cls, type) and issubclass(cls, Guarantee) and dataclasses.is_dataclass(cls)):
        raise InvalidParameter(f"cls must be a dataclass subclass of Guarantee, got {cls!r}")
    if name is None:
        if not _is_library_class(cls):
            raise InvalidParameter(
                f"name is required to register {cls.__qualname__} (defined outside sharpdp)"
            )
        name = cls.__name__
    if not isinstance(name, str) or not name:
        raise InvalidParameter(f"name must be a non-empty string, got {name!r}")
    with _lock:
        _discover_locked()
        _add_locked(cls, name)
    return cls


def known_types() -> dict[str, type[Guarantee]]:
    """The registry: description name → class (after discovering sharpdp's own classes)."""
    with _lock:
        _discover_locked()
        return dict(_BY_NAME)


def to_description(item: Guarantee) -> dict[str, Any]:
    """The JSON-ready description ``{"type": ..., "params": {...}}`` of a guarantee or mechanism.

    Raises:
        InvalidParameter: ``item`` is not a guarantee, its type is not registered, or one of its
            parameters has no JSON encoding (e.g. a Python callable).
    """
    if not isinstance(item, Guarantee):
        raise InvalidParameter(
            f"item must be a sharpdp guarantee or mechanism, got {item!r} ({type(item).__name__})"
        )
    name = _name_of(type(item))
    params: dict[str, Any] = {}
    for field in dataclasses.fields(item):  # type: ignore[arg-type]
        if not (field.init and field.compare):
            continue  # derived state or caches, not part of what the object is
        key = _keyword(field.name)
        params[key] = _encode(getattr(item, field.name), f"{name}.{key}")
    return {"type": name, "params": params}


def from_description(description: object) -> Guarantee:
    """The guarantee or mechanism described by ``description`` (inverse of :func:`to_description`).

    Raises:
        InvalidParameter: malformed description, unknown type name, or parameters its class rejects.
    """
    if not isinstance(description, dict) or set(description) != {"type", "params"}:
        raise InvalidParameter(
            f"description must be an object with keys 'type' and 'params', got {description!r}"
        )
    name, params = description["type"], description["params"]
    if not isinstance(name, str):
        raise InvalidParameter(f"description type must be a string, got {name!r}")
    if not isinstance(params, dict):
        raise InvalidParameter(f"description params of {name} must be an object, got {params!r}")
    cls = _class_of(name)
    kwargs = {str(k): _decode(v, f"{name}.{k}") for k, v in params.items()}
    try:
        obj = cls(**kwargs)
    except SharpDPError as err:
        raise InvalidParameter(f"description of {name} has invalid parameters: {err}") from err
    except (TypeError, ValueError, ArithmeticError) as err:
        raise InvalidParameter(f"description of {name} does not match its class: {err}") from err
    return obj


def dumps(item: Guarantee) -> str:
    """The canonical JSON text of ``item``'s description (sorted keys, no spaces, ASCII).

    The text is checked to decode back to an object equal to ``item``.

    Raises:
        InvalidParameter: ``item`` cannot be described faithfully.
    """
    text = json.dumps(to_description(item), sort_keys=True, separators=(",", ":"), allow_nan=False)
    try:
        back = loads(text)
    except InvalidParameter as err:
        raise InvalidParameter(f"item {item!r} cannot be described faithfully: {err}") from err
    if back != item or type(back) is not type(item):
        raise InvalidParameter(
            f"item {item!r} cannot be described faithfully: its description reads back as {back!r}"
        )
    return text


def loads(text: str) -> Guarantee:
    """The guarantee described by the JSON ``text`` (inverse of :func:`dumps`).

    Raises:
        InvalidParameter: not JSON, or not a valid description.
    """
    try:
        # a repeated key is no text dumps() writes: refused rather than read as its last value
        obj = json_unique(text, parse_constant=_reject_constant)
    except (TypeError, ValueError) as err:
        raise InvalidParameter(
            f"description is not valid JSON: {err} (text {text!r:.200})"
        ) from err
    return from_description(obj)


# -- encoding --------------------------------------------------------------------------------------


def _keyword(field_name: str) -> str:
    """Constructor keyword of a field: ``epsilon_`` → ``epsilon`` (trailing underscore dropped)."""
    return field_name[:-1] if field_name.endswith("_") else field_name


def _encode(value: object, where: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            raise InvalidParameter(f"{where} is NaN and cannot be described")
        if math.isinf(value):
            return {"float": "inf" if value > 0 else "-inf"}
        return float(value)
    if isinstance(value, Fraction):  # exact rationals (e.g. a discrete Gaussian's σ = 7/2)
        return {"fraction": f"{value.numerator}/{value.denominator}"}
    if isinstance(value, tuple | list):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Guarantee):
        return to_description(value)
    raise InvalidParameter(
        f"{where} = {value!r} ({type(value).__name__}) has no description: only numbers, strings, "
        "booleans, None, sequences and guarantees can be written to a ledger"
    )


def _decode(value: object, where: str) -> Any:
    if value is None or isinstance(value, bool | str | int | float):
        return value
    if isinstance(value, list):
        return tuple(_decode(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        if set(value) == {"float"}:
            if value["float"] == "inf":
                return math.inf
            if value["float"] == "-inf":
                return -math.inf
            raise InvalidParameter(f"{where}: unknown special float {value['float']!r}")
        if set(value) == {"fraction"}:
            return _decode_fraction(value["fraction"], where)
        return from_description(value)
    raise InvalidParameter(f"{where}: cannot decode {value!r}")


def _decode_fraction(text: object, where: str) -> Fraction:
    num, sep, den = str(text).partition("/") if isinstance(text, str) else ("", "", "")
    try:
        if not sep:
            raise ValueError
        return Fraction(int(num), int(den))
    except (ValueError, ZeroDivisionError):
        raise InvalidParameter(f"{where}: bad fraction {text!r} (want 'p/q')") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-standard JSON constant {name}")


# -- registry --------------------------------------------------------------------------------------


def _is_library_class(cls: type) -> bool:
    return cls.__module__ == "sharpdp" or cls.__module__.startswith("sharpdp.")


def _in_discovered_modules(cls: type) -> bool:
    # Only the modules that define guarantees and mechanisms, so that the registry does not
    # depend on which other parts of sharpdp (e.g. audit reports) happen to be imported.
    return any(cls.__module__ == m or cls.__module__.startswith(m + ".") for m in _LIBRARY_MODULES)


def _add_locked(cls: type[Guarantee], name: str) -> None:
    other = _BY_NAME.get(name)
    if other is not None and other is not cls:
        raise InvalidParameter(
            f"name {name!r} is already registered for {other.__module__}.{other.__qualname__}"
        )
    previous = _BY_TYPE.get(cls)
    if previous is not None and previous != name:
        raise InvalidParameter(f"{cls.__qualname__} is already registered as {previous!r}")
    _BY_NAME[name] = cls
    _BY_TYPE[cls] = name


def _discover_locked() -> None:
    """Register every public concrete dataclass guarantee defined in sharpdp's modules."""
    for module in _LIBRARY_MODULES:
        importlib.import_module(module)
    stack: list[type[Guarantee]] = [Guarantee]
    seen: set[type[Guarantee]] = set()
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            stack.append(sub)
            if (
                _in_discovered_modules(sub)
                and dataclasses.is_dataclass(sub)
                and not sub.__name__.startswith("_")
                and _exposed(sub)
                and sub not in _BY_TYPE
                and sub.__name__ not in _BY_NAME
            ):
                _add_locked(sub, sub.__name__)


def _exposed(cls: type) -> bool:
    # ``dataclass(slots=True)`` replaces a class by a new one; the discarded original can linger
    # in ``__subclasses__`` until collected. Only the class its module exposes is the real one.
    module = sys.modules.get(cls.__module__)
    return module is not None and getattr(module, cls.__qualname__, None) is cls


def _name_of(cls: type[Guarantee]) -> str:
    with _lock:
        name = _BY_TYPE.get(cls)
        if name is None:
            _discover_locked()
            name = _BY_TYPE.get(cls)
    if name is None:
        raise InvalidParameter(
            f"item type {cls.__qualname__} is not registered for ledger descriptions; "
            "register it with sharpdp.accounting.ledger.register_type(cls, name=...)"
        )
    return name


def _class_of(name: str) -> type[Guarantee]:
    with _lock:
        cls = _BY_NAME.get(name)
        if cls is None:
            _discover_locked()
            cls = _BY_NAME.get(name)
    if cls is None:
        raise InvalidParameter(f"unknown description type {name!r} (not in the registry)")
    return cls
