"""Drives Airlock's E2B-compatible facade with the unmodified E2B Python SDK,
as a Python agent codebase would after setting E2B's self-hosting variables.
e2e/e2bpy_test.go runs it against a real `airlock serve`:

    python3 run.py URL API_KEY OTHER_TENANT_KEY

with PYTHONPATH naming the SDK (../shared/vendor/e2b-python/site). Keys are
in E2B's e2b_<hex> shape. It prints one line per step, "SANDBOX <id>" for
each sandbox it made, for the Go side to check, and "ok" last; it exits 1
on the first failure.
"""

import guard  # noqa: F401 -- first: nothing may connect off loopback

import asyncio
import os
import socket
import sys
import time

from common import raises, step


def main():
    if len(sys.argv) != 4:
        print("usage: python3 run.py URL API_KEY OTHER_TENANT_KEY", file=sys.stderr)
        sys.exit(2)
    url, key, other_key = sys.argv[1:]
    os.environ.update({
        "E2B_API_URL": f"{url}/e2b",
        "E2B_SANDBOX_URL": f"{url}/e2b/envd",
        "E2B_DOMAIN": "localhost",
        "E2B_API_KEY": key,
    })
    run_id = f"r{time.time_ns():x}"

    step("the loopback guard is on")
    with raises(OSError, "guard: refused"):
        socket.create_connection(("192.0.2.1", 443), timeout=2)  # TEST-NET-1: never routed
    import httpx

    with raises(httpx.ConnectError, "guard: refused"):
        httpx.get("https://api.e2b.app/health")

    import async_suite
    import sync_suite

    sync_suite.run(run_id, other_key)
    asyncio.run(async_suite.run(run_id, other_key))
    print("ok", flush=True)


if __name__ == "__main__":
    main()
