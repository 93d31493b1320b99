"""The Python SDK of Airlock, a self-hosted sandbox server.

    import airlock

    with airlock.Client() as al:          # $AIRLOCK_URL, $AIRLOCK_API_KEY
        with al.sandbox() as sb:           # created here, deleted at the end
            print(al.exec(sb.id, "echo hello").stdout)

airlock.Client blocks; airlock.AsyncClient is the same API for asyncio.
Answers are the dataclasses of airlock's types (generated from the API's
OpenAPI document); errors are the exceptions of airlock.errors.
"""

from . import errors
from ._async.client import AsyncClient
from ._async.exec import AsyncExecStream, AsyncOutputStream
from ._async.sessions import AsyncTerminal
from ._models import Output
from ._sync.client import Client
from ._sync.exec import ExecStream, OutputStream
from ._sync.sessions import Terminal
from ._types import *  # noqa: F403
from ._types import __all__ as _types_all
from .errors import (AirlockError, APIError, Conflict, DecodeError, Forbidden, Invalid, InvalidArgument,
                     LimitExceeded, LowDisk, MethodNotAllowed, NotFound, Paused, PidLimit, StorageQuota,
                     StreamDropped, TerminalEnded, Unauthenticated, Unauthorized, Unavailable,
                     WebhookSignatureError)
from .errors import InternalError as ServerError
from .webhooks import verify_webhook

__version__ = "0.1.0"

__all__ = [
    "Client", "AsyncClient", "ExecStream", "AsyncExecStream", "OutputStream", "AsyncOutputStream",
    "Terminal", "AsyncTerminal", "Output", "verify_webhook", "errors",
    "AirlockError", "APIError", "Conflict", "DecodeError", "Forbidden", "Invalid", "InvalidArgument",
    "LimitExceeded", "LowDisk", "MethodNotAllowed", "NotFound", "Paused", "PidLimit", "ServerError",
    "StorageQuota", "StreamDropped", "TerminalEnded", "Unauthenticated", "Unauthorized", "Unavailable",
    "WebhookSignatureError",
] + list(_types_all)
