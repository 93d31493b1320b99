"""What the tests that need a server share: its address and keys from the
environment (e2e/sdkpy_test.go starts the server and sets them), and
clients made from them. Without AIRLOCK_URL those tests skip, unless
AIRLOCK_SDK_LIVE is set (as the Go driver sets it): then they fail."""

from __future__ import annotations

import os
import unittest

import airlock

URL = os.environ.get("AIRLOCK_URL", "")
KEY = os.environ.get("AIRLOCK_API_KEY", "")
ADMIN_KEY = os.environ.get("AIRLOCK_ADMIN_KEY", "")
# Metadata of every sandbox a test makes: the Go driver checks none is
# left running.
META = {"sdk-test": "python"}


def require(test: unittest.TestCase, admin: bool = False) -> None:
    missing = [n for n, v in (("AIRLOCK_URL", URL), ("AIRLOCK_API_KEY", KEY)) if not v]
    if admin and not ADMIN_KEY:
        missing.append("AIRLOCK_ADMIN_KEY")
    if missing:
        why = "needs a live server: set " + ", ".join(missing)
        if os.environ.get("AIRLOCK_SDK_LIVE"):
            test.fail(why)
        test.skipTest(why)


class LiveTest(unittest.TestCase):
    """A test with self.al, a blocking client of the tenant's key."""

    admin = False

    def setUp(self) -> None:
        require(self, self.admin)
        self.al = airlock.Client()  # from AIRLOCK_URL and AIRLOCK_API_KEY, as a user's would
        self.addCleanup(self.al.close)

    def admin_client(self) -> airlock.Client:
        c = airlock.Client(URL, ADMIN_KEY)
        self.addCleanup(c.close)
        return c

    def sandbox(self, **fields):
        """A sandbox deleted when the test ends."""
        ctx = self.al.sandbox(metadata=dict(META), **fields)
        sb = ctx.__enter__()
        self.addCleanup(ctx.__exit__, None, None, None)
        return sb


class AsyncLiveTest(unittest.IsolatedAsyncioTestCase):
    """A test with self.al, an asyncio client of the tenant's key."""

    async def asyncSetUp(self) -> None:
        require(self)
        # The test loop runs in debug mode, which logs any step over 0.1 s:
        # httpx loads its CA bundle when a client is made and imports its
        # asyncio backend on the first request, once.
        import asyncio
        asyncio.get_running_loop().slow_callback_duration = 1.0
        self.al = airlock.AsyncClient(URL, KEY)
        self.addAsyncCleanup(self.al.aclose)

    async def sandbox(self, **fields):
        ctx = self.al.sandbox(metadata=dict(META), **fields)
        sb = await ctx.__aenter__()
        self.addAsyncCleanup(ctx.__aexit__, None, None, None)
        return sb
