"""Not a test module: e2e/sdkpy_test.go runs it and restarts the server
under it. A streamed exec whose stream a restart cuts re-attaches by its
exec id and ends with every byte once.

    python3 -m tests.resume_exec sync|async

It prints STARTED once the first output came (the Go test then kills the
server and starts it again), then OUTPUT <repr of stdout> and EXIT <code>.
"""

from __future__ import annotations

import asyncio
import sys

import airlock

CMD = "echo first; sleep 3; echo second; sleep 1; echo third"


def run_sync() -> None:
    with airlock.Client() as al, al.sandbox(metadata={"sdk-test": "python"}) as sb:
        stream = al.exec_stream(sb.id, CMD)
        out = b""
        for piece in stream:
            if not out:
                print("STARTED", flush=True)
            out += piece.data
        print("OUTPUT", repr(out), flush=True)
        print("EXIT", stream.result.exit_code, flush=True)


async def run_async() -> None:
    async with airlock.AsyncClient() as al, al.sandbox(metadata={"sdk-test": "python"}) as sb:
        stream = al.exec_stream(sb.id, CMD)
        out = b""
        async for piece in stream:
            if not out:
                print("STARTED", flush=True)
            out += piece.data
        print("OUTPUT", repr(out), flush=True)
        print("EXIT", stream.result.exit_code, flush=True)


if __name__ == "__main__":
    run_sync() if sys.argv[1] == "sync" else asyncio.run(run_async())
