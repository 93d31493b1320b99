"""Exceptions of the Airlock SDK.

Every error answer of the API, {"error": {"code", "message"}}, becomes an
APIError of the class its code names (docs/API.md, *Errors*), in one place:
from_answer. An answer without the API's JSON (a proxy's error page) is
classed by its status.
"""

from __future__ import annotations

import json
from typing import Any


class AirlockError(Exception):
    """Base of every exception the SDK raises on purpose."""


class DecodeError(AirlockError):
    """An answer that does not fit the API document (see _codec.strict)."""


class APIError(AirlockError):
    """An error answer of the server: status, code ("" for an answer
    without the API's JSON, classed by its status) and message. status
    is 0 for an error event in the middle of a stream, which has no
    status of its own. The class attribute code is the code a class
    stands for."""

    code = ""

    def __init__(self, message: str, *, status: int = 0, code: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class Invalid(APIError):
    """invalid_argument: a bad field, parameter or body (400, 413, 415)."""

    code = "invalid_argument"


class Unauthorized(APIError):
    """unauthenticated: no credential, or one unknown or expired (401)."""

    code = "unauthenticated"


class Forbidden(APIError):
    """forbidden: the credential may not do this (403)."""

    code = "forbidden"


class NotFound(APIError):
    """not_found: no such thing for this caller (404); another tenant's
    sandbox is one."""

    code = "not_found"


class MethodNotAllowed(APIError):
    """method_not_allowed (405)."""

    code = "method_not_allowed"


class Conflict(APIError):
    """conflict: the thing is not in a state that allows the call (409)."""

    code = "conflict"


class Paused(Conflict):
    """paused: the call needs the sandbox running; resume it first (409)."""

    code = "paused"


class LimitExceeded(APIError):
    """limit_exceeded: a tenant quota or the host's capacity (429)."""

    code = "limit_exceeded"


class PidLimit(LimitExceeded):
    """pid_limit: the sandbox holds as many processes as it may (429)."""

    code = "pid_limit"


class StorageQuota(LimitExceeded):
    """storage_quota: the tenant keeps all its storage quota allows (429)."""

    code = "storage_quota"


class Unavailable(APIError):
    """unavailable: try again later (503, and 502 or 504 of a proxy)."""

    code = "unavailable"


class LowDisk(Unavailable):
    """low_disk: the server's data dir is short of free space (503)."""

    code = "low_disk"


class InternalError(APIError):
    """internal: the server failed; its log says why (500)."""

    code = "internal"


class StreamDropped(APIError):
    """slow_consumer: the event stream was dropped because the client fell
    too far behind; resume after the id of the last event it got."""

    code = "slow_consumer"


class TerminalEnded(AirlockError):
    """A terminal will send no more: the shell exited (exited, exit_code,
    signal), or its session or sandbox is gone (code, message)."""

    def __init__(self, *, exited: bool, exit_code: int = 0, signal: int = 0,
                 code: str = "", message: str = "") -> None:
        if exited:
            text = f"the shell was killed by signal {signal}" if signal else f"the shell exited with status {exit_code}"
        else:
            text = message or code
        super().__init__(text)
        self.exited, self.exit_code, self.signal = exited, exit_code, signal
        self.code, self.message = code, message


class WebhookSignatureError(AirlockError):
    """A webhook delivery whose Airlock-Signature does not hold."""


# Unauthenticated and InvalidArgument are the API's own names.
Unauthenticated = Unauthorized
InvalidArgument = Invalid

_BY_CODE: dict[str, type[APIError]] = {
    c.code: c for c in (Invalid, Unauthorized, Forbidden, NotFound, MethodNotAllowed, Conflict,
                        Paused, LimitExceeded, PidLimit, StorageQuota, Unavailable, LowDisk,
                        InternalError, StreamDropped)
}

_BY_STATUS: dict[int, type[APIError]] = {
    400: Invalid, 413: Invalid, 415: Invalid, 401: Unauthorized, 403: Forbidden,
    404: NotFound, 405: MethodNotAllowed, 409: Conflict, 429: LimitExceeded,
    500: InternalError, 502: Unavailable, 503: Unavailable, 504: Unavailable,
}


def from_detail(detail: Any, status: int = 0) -> APIError:
    """The exception of an error detail {"code", "message"}."""
    code = detail.get("code", "") if isinstance(detail, dict) else ""
    msg = detail.get("message", "") if isinstance(detail, dict) else ""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, APIError)
    return cls(msg or code.replace("_", " ") or f"HTTP {status}", status=status, code=code)


def from_answer(status: int, body: bytes, reason: str = "") -> APIError:
    """The exception of a non-2xx answer."""
    try:
        detail = json.loads(body)["error"]
        if isinstance(detail, dict) and detail.get("code"):
            return from_detail(detail, status)
    except (ValueError, KeyError, TypeError):
        pass
    msg = body.decode("utf-8", "replace").strip()
    if len(msg) > 200:
        msg = msg[:200] + "..."
    cls = _BY_STATUS.get(status, APIError)
    return cls(msg or f"HTTP {status} {reason}".strip(), status=status)
