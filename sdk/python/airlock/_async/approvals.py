"""Approvals: questions put to a person about a sandbox's action (a
connection its policy asks about, something an agent asks to do, a
harness's tool call), listed, read, waited on and decided. API keys only:
a sandbox token gets Forbidden, since an agent must not approve itself."""

from __future__ import annotations

from typing import Literal

from .. import _types as t
from .._codec import params
from . import _backend
from ._core import AsyncCore, query, seg


def approval_path(id: str, suffix: str = "") -> str:
    return "/v1/approvals/" + seg(id) + suffix


class AsyncApprovals(AsyncCore):
    async def list_approvals(self, *, state: str | None = None) -> list[t.Approval]:
        """The tenant's approvals, oldest first; state "pending",
        "allowed", "denied" or "timed_out" (default all). A pending one
        past its deadline reads as timed_out."""
        return (await self._json(t.ApprovalList, "GET", "/v1/approvals", params=query(state=state))).approvals

    async def get_approval(self, id: str) -> t.Approval:
        return await self._json(t.Approval, "GET", approval_path(id))

    async def decide_approval(self, id: str, decision: Literal["allow", "deny"], *,
                              remember: Literal["once", "sandbox", "task"] | None = None,
                              reason: str | None = None) -> t.Approval:
        """Allows or denies a pending approval and returns it decided.
        remember "sandbox" (or "task") also puts the target on the
        sandbox's allow list, or deny list; reason goes to the audit log.
        One decided (or timed out) already is Conflict."""
        body = params(t.ApprovalDecision, {"decision": decision, "remember": remember, "reason": reason})
        return await self._json(t.Approval, "POST", approval_path(id, "/decision"), json=body)

    async def wait_approval(self, id: str, *, poll: float = 1.0) -> t.Approval:
        """Returns the approval once it is pending no more: decided, or
        timed out. It asks the server at most every poll seconds; since a
        pending approval past its deadline reads as timed_out, it ends by
        the approval's deadline whoever is waiting on the other side."""
        wait = 0.1
        while True:
            a = await self.get_approval(id)
            if a.state != "pending":
                return a
            await _backend.sleep(wait)
            wait = min(2 * wait, poll)
