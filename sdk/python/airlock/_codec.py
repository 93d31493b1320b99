"""JSON to and from the generated types.

decode builds the dataclasses of _types from an answer's JSON by their
type hints; encode turns dataclasses, TypedDict keyword arguments and
datetimes back into JSON values. Decoding is lenient by default, so that
a client keeps working against a newer server: fields it does not know
are dropped and fields the server left out are None. With strict (or
AIRLOCK_STRICT_DECODE=1, as the SDK's own tests run) an unknown field, a
missing required one or a value of the wrong type raises DecodeError.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import types
import typing
from datetime import datetime
from typing import Any, Literal

from .errors import DecodeError

strict = os.environ.get("AIRLOCK_STRICT_DECODE", "") not in ("", "0")

_fields_cache: dict[type, list[tuple[str, str, Any, bool]]] = {}


def _fields(cls: type) -> list[tuple[str, str, Any, bool]]:
    """(attribute, JSON name, type hint, required) of a dataclass."""
    f = _fields_cache.get(cls)
    if f is None:
        hints = typing.get_type_hints(cls)
        f = []
        for fld in dataclasses.fields(cls):
            required = fld.default is dataclasses.MISSING and fld.default_factory is dataclasses.MISSING
            f.append((fld.name, fld.metadata.get("json", fld.name), hints[fld.name], required))
        _fields_cache[cls] = f
    return f


def decode(tp: Any, v: Any, where: str = "answer") -> Any:
    """v, a decoded JSON value, as the type tp."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return v
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None:
            if type(None) in args or not strict:
                return None
            raise DecodeError(f"{where}: null where {tp} was expected")
        last: Exception | None = None
        for a in args:
            if a is type(None):
                continue
            try:
                return decode(a, v, where)
            except DecodeError as e:
                last = e
        raise last or DecodeError(f"{where}: {v!r} is not {tp}")
    if v is None:
        if strict:
            raise DecodeError(f"{where}: null where {tp} was expected")
        return None
    if origin is Literal:
        if strict and v not in typing.get_args(tp):
            raise DecodeError(f"{where}: {v!r} is none of {typing.get_args(tp)}")
        return v
    if origin is list:
        if not isinstance(v, list):
            raise DecodeError(f"{where}: {type(v).__name__} where a list was expected")
        (item,) = typing.get_args(tp)
        return [decode(item, x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin is dict:
        if not isinstance(v, dict):
            raise DecodeError(f"{where}: {type(v).__name__} where an object was expected")
        _, val = typing.get_args(tp)
        return {k: decode(val, x, f"{where}.{k}") for k, x in v.items()}
    if dataclasses.is_dataclass(tp):
        return _decode_object(tp, v, where)
    if tp is datetime:
        if not isinstance(v, str):
            raise DecodeError(f"{where}: {v!r} is not a time")
        try:
            return datetime.fromisoformat(v)
        except ValueError as e:
            raise DecodeError(f"{where}: {e}") from None
    if tp is bytes:
        return base64.b64decode(v)
    if tp is float and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    if isinstance(tp, type) and isinstance(v, tp) and not (tp is int and isinstance(v, bool)):
        return v
    if strict:
        raise DecodeError(f"{where}: {v!r} is not {getattr(tp, '__name__', tp)}")
    return v


def _decode_object(cls: type, v: Any, where: str) -> Any:
    if not isinstance(v, dict):
        raise DecodeError(f"{where}: {type(v).__name__} where a {cls.__name__} object was expected")
    kw = {}
    known = set()
    for attr, name, hint, required in _fields(cls):
        known.add(name)
        if name in v:
            kw[attr] = decode(hint, v[name], f"{where}.{name}")
        elif required:
            if strict:
                raise DecodeError(f"{where}: {cls.__name__} lacks its required field {name!r}")
            kw[attr] = None
    if strict:
        extra = sorted(set(v) - known)
        if extra:
            raise DecodeError(f"{where}: {cls.__name__} has fields the API document lacks: {', '.join(extra)}")
    return cls(**kw)


def encode(v: Any) -> Any:
    """v as a JSON value: dataclasses by their JSON names, None fields
    left out (the server takes its default), times in RFC 3339."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        out = {}
        for attr, name, _, _ in _fields(type(v)):
            x = getattr(v, attr)
            if x is not None:
                out[name] = encode(x)
        return out
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode()
    return v


def params(cls: type, kw: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of keyword arguments meant for the request type cls:
    a misspelt name is a TypeError here rather than a 400."""
    names = {name: attr for attr, name, _, _ in _fields(cls)}
    for k in kw:
        if k not in names:
            raise TypeError(f"unexpected keyword argument {k!r} (the fields of {cls.__name__} are {', '.join(names)})")
    return encode(kw)
