"""The asyncio client across the API's areas: the same implementation as
the blocking one (gen.py writes that from this), so these check the
asyncio side's own I/O: httpx's AsyncClient, asyncio sockets for the
terminal, async iteration of every stream."""

from __future__ import annotations

import asyncio
import os
import uuid

import airlock
from tests.live import URL, AsyncLiveTest


class AsyncClientTest(AsyncLiveTest):
    async def test_sandbox_lifecycle_and_errors(self):
        sb = await self.sandbox()
        self.assertEqual((await self.al.get_sandbox(sb.id)).state, "running")
        ids = [s.id async for s in self.al.iter_sandboxes()]
        self.assertIn(sb.id, ids)
        await self.al.pause_sandbox(sb.id)
        with self.assertRaises(airlock.Paused):
            await self.al.exec(sb.id, "true")
        await self.al.resume_sandbox(sb.id)
        self.assertEqual((await self.al.set_timeout(sb.id, 600)).state, "running")
        with self.assertRaises(airlock.NotFound):
            await self.al.get_sandbox("sb-nope")
        with self.assertRaises(airlock.Invalid):
            await self.al.create_sandbox(memory_mb=1)
        async with airlock.AsyncClient(URL, "alk_wrong") as bad:
            with self.assertRaises(airlock.Unauthorized):
                await bad.list_sandboxes()

    async def test_exec_stream_and_background(self):
        sb = await self.sandbox()
        r = await self.al.exec(sb.id, ["sh", "-c", "echo hi; exit 2"])
        self.assertEqual((r.stdout, r.exit_code), ("hi\n", 2))
        stream = self.al.exec_stream(sb.id, "for i in 1 2 3; do echo $i; sleep 0.1; done")
        self.assertIsInstance(stream, airlock.AsyncExecStream)
        pieces = [p async for p in stream]
        self.assertEqual(b"".join(p.data for p in pieces), b"1\n2\n3\n")
        self.assertGreaterEqual(len(pieces), 2)
        self.assertEqual(stream.result.exit_code, 0)
        out = self.al.exec_output(sb.id, stream.exec_id)
        self.assertEqual(b"".join([p.data async for p in out]), b"1\n2\n3\n")

        bg = await self.al.start_process(sb.id, "cat", tag="cat")
        await self.al.write_stdin(sb.id, bg.pid, b"meow\n")
        await self.al.close_stdin(sb.id, bg.pid)
        follow = self.al.process_output(sb.id, bg.pid, follow=True)
        self.assertEqual((await follow.wait()).exit_code, 0)
        self.assertEqual(follow.next_offset, 5)
        self.assertEqual([p.state for p in await self.al.list_processes(sb.id)], ["exited"])

        # Two commands at once on one client.
        a, b = await asyncio.gather(self.al.exec(sb.id, "sleep 0.3; echo a"), self.al.exec(sb.id, "echo b"))
        self.assertEqual((a.stdout, b.stdout), ("a\n", "b\n"))

    async def test_files_streamed(self):
        sb = await self.sandbox()
        data = os.urandom(3 << 20)

        async def chunks():
            for i in range(0, len(data), 1 << 20):
                yield data[i:i + (1 << 20)]
                await asyncio.sleep(0)

        self.assertEqual((await self.al.write_file(sb.id, "big", chunks())).size, len(data))
        got = b"".join([c async for c in self.al.iter_file(sb.id, "big")])
        self.assertEqual(got, data)
        await self.al.mkdir(sb.id, "d")
        await self.al.move(sb.id, "big", "d/big")
        self.assertEqual([e.name for e in await self.al.list_dir(sb.id, "d")], ["big"])
        await self.al.remove(sb.id, "d", recursive=True)
        with self.assertRaises(airlock.NotFound):
            await self.al.read_file(sb.id, "d/big")

    async def test_session_and_terminal(self):
        sb = await self.sandbox()
        s = await self.al.create_session(sb.id, mode="interactive")
        term = await self.al.attach_session(sb.id, s.id)
        self.assertIsInstance(term, airlock.AsyncTerminal)
        async with term:
            await term.write("echo async-$((40+2))\n")
            got = b""
            while b"async-42" not in got:
                got += await asyncio.wait_for(term.read(), 30)
            await term.write("exit 5\n")
            async for _ in term:
                pass
            self.assertEqual(term.ended.exit_code, 5)
        e = await self.al.create_session(sb.id)
        self.assertEqual((await self.al.session_exec(sb.id, e.id, "echo x")).output, "x\n")
        await self.al.delete_session(sb.id, e.id)

    async def test_network_secrets_templates(self):
        sb = await self.sandbox()
        pol = await self.al.set_network(sb.id, mode="allowlist", allow=["pypi.org"])
        self.assertEqual(pol.allow, ["pypi.org"])
        self.assertEqual((await self.al.get_network(sb.id)).mode, "allowlist")
        self.assertEqual(await self.al.network_log(sb.id), [])
        name = "SDKPY_A_" + uuid.uuid4().hex[:6].upper()
        await self.al.create_secret(name=name, value="x", hosts=["api.example.com"])
        self.assertIn(name, [s.name for s in await self.al.list_secrets()])
        await self.al.rotate_secret(name, value="y")
        await self.al.delete_secret(name)
        self.assertEqual((await self.al.list_templates())[0].name, "base")

    async def test_tasks_audit_events_metering(self):
        task = await self.al.create_task(harness="generic", command=["sh", "-c", "echo hello > out.txt; echo ok"])
        events = [e async for e in self.al.follow_task(task.id)]
        self.assertEqual(events[-1].type, "task.finished")
        self.assertEqual((await self.al.get_task(task.id)).state, "succeeded")
        self.assertEqual(await self.al.read_task_artifact(task.id, "out.txt"), b"hello\n")

        sb = await self.sandbox()
        await self.al.exec(sb.id, "echo logged")
        types = [e.type async for e in self.al.audit_log(sb.id)]
        self.assertIn("exec.exited", types)
        self.assertTrue((await self.al.verify_audit(sb.id)).ok)
        self.assertGreater(len(await self.al.audit_export(sb.id)), 0)
        events = self.al.events(from_start=True, types=["exec.exited"])
        async for ev in events:
            if ev.sandbox_id == sb.id:
                break
        await events.aclose()
        self.assertEqual((await self.al.sandbox_metrics(sb.id)).exec_count, 1)
        self.assertGreaterEqual(len((await self.al.usage()).tenants), 1)

    async def test_approval_waited_and_denied(self):
        # Asked about and denied only: the proxy refuses without a lookup.
        sb = await self.sandbox(network={"mode": "allowlist", "allow": [], "ask": True, "ask_timeout_s": 60})
        curl = await self.al.start_process(sb.id, "curl -s -i --max-time 60 http://denied.test/")
        a = None
        for _ in range(300):
            a = next((x for x in await self.al.list_approvals(state="pending") if x.sandbox_id == sb.id), None)
            if a:
                break
            await asyncio.sleep(0.1)
        self.assertIsNotNone(a, "no pending approval")
        self.assertEqual((await self.al.get_approval(a.id)).egress.host, "denied.test")
        waiter = asyncio.create_task(self.al.wait_approval(a.id, poll=0.2))
        await asyncio.sleep(0.5)
        self.assertFalse(waiter.done(), "wait_approval returned while the approval was pending")
        decided = await self.al.decide_approval(a.id, "deny", remember="once")
        self.assertIn(decided.decided_by, [k.id for k in await self.al.list_keys()])
        waited = await asyncio.wait_for(waiter, 30)
        self.assertEqual((waited.state, waited.decided_by), ("denied", decided.decided_by))
        with self.assertRaises(airlock.Conflict):
            await self.al.decide_approval(a.id, "deny")
        out = self.al.process_output(sb.id, curl.pid, follow=True)
        text = b"".join([p.data async for p in out]).decode()
        self.assertIn("HTTP/1.1 403", text)
