"""Checking a webhook delivery before acting on it (docs/API.md, *Events
and webhooks*)."""

from __future__ import annotations

import hashlib
import hmac
import time

from .errors import WebhookSignatureError


def verify_webhook(secret: str | bytes, signature: str, body: bytes, *,
                   tolerance: float = 300.0, now: float | None = None) -> None:
    """Raises WebhookSignatureError unless signature, a delivery's
    Airlock-Signature header ("t=UNIX,v1=HEX"), is the HMAC-SHA256 under
    secret of t, "." and the body as received, with t within tolerance
    seconds of now, so that a captured delivery cannot be replayed later.
    A receiver that must not act twice also keeps the Airlock-Delivery-Id
    values it has seen."""
    ts, sigs = "", []
    for part in signature.split(","):
        k, _, v = part.strip().partition("=")
        if k == "t":
            ts = v
        elif k == "v1":
            try:
                sigs.append(bytes.fromhex(v))
            except ValueError:
                pass
    if not ts.isdigit() or not sigs:
        raise WebhookSignatureError(f"malformed signature header {signature!r}")
    if abs((time.time() if now is None else now) - int(ts)) > tolerance:
        raise WebhookSignatureError(f"signed at {ts}, more than {tolerance:.0f} s from now")
    key = secret.encode() if isinstance(secret, str) else secret
    want = hmac.new(key, ts.encode() + b"." + body, hashlib.sha256).digest()
    # Any v1 may match: room for an old and a new secret during a rotation.
    if not any(hmac.compare_digest(s, want) for s in sigs):
        raise WebhookSignatureError("webhook signature does not verify")
