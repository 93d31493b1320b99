"""AsyncClient: every capability of the API on one asyncio client."""

from __future__ import annotations

from .admin import AsyncAdmin
from .approvals import AsyncApprovals
from .audit import AsyncAudit
from .exec import AsyncExec
from .files import AsyncFiles
from .sandboxes import AsyncSandboxes
from .sessions import AsyncSessions
from .tasks import AsyncTasks


class AsyncClient(
    AsyncSandboxes, AsyncExec, AsyncFiles, AsyncSessions, AsyncTasks, AsyncApprovals, AsyncAudit, AsyncAdmin,
):
    """The Airlock API (asyncio).

        async with airlock.AsyncClient() as al:
            async with al.sandbox() as sb:
                res = await al.exec(sb.id, "echo hi")

    Its arguments are AsyncCore's. The streams (exec_stream,
    process_output, exec_output, iter_file, audit_log, events,
    follow_task...) are iterated with async for.
    """
