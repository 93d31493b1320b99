"""Tasks: an agent harness run on a prompt and files in a sandbox of its
own, its normalized events streamed, its artifacts and diff kept."""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import AsyncIterator, Sequence, Unpack

from .. import _types as t
from .._codec import decode, params
from . import _backend
from ._core import AsyncCore, query, seg
from .exec import RESUME_FOR, _retryable

ENDED = ("succeeded", "failed", "timed_out", "cancelled")


def task_path(id: str, suffix: str = "") -> str:
    return "/v1/tasks/" + seg(id) + suffix


class AsyncTasks(AsyncCore):
    async def create_task(self, **fields: Unpack[t.TaskRequestParams]) -> t.Task:
        """Submits a task (a harness of list_harnesses: "generic", "codex",
        "claude", "opencode", "qwen", "gemini", "cline" or "pi"); it is
        queued and runs when the tenant's concurrency allows."""
        return await self._json(t.Task, "POST", "/v1/tasks", json=params(t.TaskRequest, fields))

    async def get_task(self, id: str) -> t.Task:
        return await self._json(t.Task, "GET", task_path(id))

    async def list_tasks(self, *, states: Sequence[str] | None = None, harness: str | None = None,
                         limit: int | None = None, after: str | None = None) -> t.TaskList:
        """One page of the caller's tasks, ids ascending."""
        q = query(state=list(states) if states else None, harness=harness, limit=limit, after=after)
        return await self._json(t.TaskList, "GET", "/v1/tasks", params=q)

    async def list_harnesses(self) -> list[t.Harness]:
        """The harnesses, their pinned versions, and whether the server has
        each one's template."""
        return (await self._json(t.HarnessList, "GET", "/v1/harnesses")).harnesses

    async def cancel_task(self, id: str) -> t.Task:
        """Cancels a task; returns it as it ended."""
        return await self._json(t.Task, "POST", task_path(id, "/cancel"))

    async def task_events(self, id: str, *, after: int = 0, limit: int | None = None) -> list[t.TaskEvent]:
        """The task's stored events numbered above after."""
        q = query(after=after, limit=limit)
        return (await self._json(t.TaskEventList, "GET", task_path(id, "/events"), params=q)).events

    async def follow_task(self, id: str, *, after: int = 0) -> AsyncIterator[t.TaskEvent]:
        """The task's events numbered above after, as they come, to its
        task.finished. A stream that breaks (the server restarted: the task
        goes on) is followed again from the last event, for up to a minute
        without one."""
        last, deadline, wait = after, time.monotonic() + RESUME_FOR, 0.1
        while True:
            try:
                sse = self._sse("GET", task_path(id, "/events"), headers={"Last-Event-ID": str(last)})
                async with aclosing(sse) as events:
                    async for ev in events:
                        e = decode(t.TaskEvent, ev.json(), "task event")
                        last, deadline, wait = e.seq, time.monotonic() + RESUME_FOR, 0.1
                        yield e
                        if e.type == "task.finished":
                            return
            except Exception as e:
                if not _retryable(e) or time.monotonic() > deadline:
                    raise
            await _backend.sleep(wait)
            wait = min(2 * wait, 2.0)

    async def wait_task(self, id: str) -> t.Task:
        """Follows the task to its end and returns it as it ended."""
        async with aclosing(self.follow_task(id)) as events:
            async for _ in events:
                pass
        return await self.get_task(id)

    async def task_artifacts(self, id: str) -> t.TaskArtifactList:
        """The task's kept files and its workspace diff (None when it kept
        none, e.g. it was cancelled)."""
        return await self._json(t.TaskArtifactList, "GET", task_path(id, "/artifacts"))

    async def read_task_artifact(self, id: str, path: str) -> bytes:
        return await self._bytes(task_path(id, "/artifacts"), query(path=path))

    def iter_task_artifact(self, id: str, path: str) -> AsyncIterator[bytes]:
        """One artifact (its workspace path) in pieces as they arrive."""
        return self._iter_bytes(task_path(id, "/artifacts"), query(path=path))

    async def read_task_diff(self, id: str) -> bytes:
        """The task's workspace diff (git format, binary patches included)."""
        return await self._bytes(task_path(id, "/artifacts"), query(diff=True))
