"""Sandboxes and their lifecycle through the blocking client, and the
exceptions error answers become."""

from __future__ import annotations

import uuid

import airlock
from tests.live import KEY, META, URL, LiveTest


class SandboxesTest(LiveTest):
    def test_create_get_list_delete(self):
        sb = self.al.create_sandbox(metadata={**META, "case": "crud"}, env={"GREETING": "hi"}, timeout_s=120)
        try:
            self.assertIsInstance(sb, airlock.Sandbox)
            self.assertEqual(sb.state, "running")
            self.assertEqual(sb.limits.memory_mb, 512)
            got = self.al.get_sandbox(sb.id)
            self.assertEqual((got.id, got.metadata["case"]), (sb.id, "crud"))
            page = self.al.list_sandboxes(metadata={"case": "crud"})
            self.assertEqual([s.id for s in page.sandboxes], [sb.id])
            self.assertIn(sb.id, [s.id for s in self.al.iter_sandboxes(page_size=1)])
            self.assertEqual(self.al.exec(sb.id, "echo $GREETING").stdout, "hi\n")
        finally:
            self.al.delete_sandbox(sb.id)
        self.assertIn(self.al.get_sandbox(sb.id).state, ("stopped", "failed"))
        with self.assertRaises(airlock.Conflict):
            self.al.exec(sb.id, "true")

    def test_timeout_pause_resume(self):
        sb = self.sandbox()
        later = self.al.set_timeout(sb.id, 3600)
        self.assertGreater(later.expires_at, sb.expires_at)
        paused = self.al.pause_sandbox(sb.id)
        self.assertEqual(paused.state, "paused")
        with self.assertRaises(airlock.Paused) as cm:
            self.al.exec(sb.id, "true")
        self.assertIsInstance(cm.exception, airlock.Conflict)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "paused"))
        self.assertEqual(self.al.resume_sandbox(sb.id).state, "running")
        self.assertEqual(self.al.exec(sb.id, ["echo", "back"]).stdout, "back\n")

    def test_snapshot_fork_and_volume(self):
        sb = self.sandbox()
        self.al.write_file(sb.id, "state.txt", b"saved")
        name = "sdkpy-" + uuid.uuid4().hex[:8]
        snap = self.al.create_snapshot(sb.id, name)
        self.addCleanup(self.al.delete_snapshot, name)
        self.assertEqual((snap.name, snap.sandbox), (name, sb.id))
        self.assertIn(name, [s.name for s in self.al.list_snapshots()])
        self.assertEqual(self.al.get_snapshot(name).sandbox, sb.id)
        from_snap = self.sandbox(snapshot=name)
        self.assertEqual(self.al.read_file(from_snap.id, "state.txt"), b"saved")
        forks = self.al.fork_sandbox(sb.id, 1, metadata={**META, "fork": "yes"})
        for f in forks:
            self.addCleanup(self.al.delete_sandbox, f.id)
        self.assertEqual((len(forks), forks[0].fork_of), (1, sb.id))
        self.assertEqual(self.al.read_file(forks[0].id, "state.txt"), b"saved")

        vol = self.al.create_volume("sdkpy-" + uuid.uuid4().hex[:8], 64)
        self.addCleanup(self.al.delete_volume, vol.name)
        self.assertEqual(self.al.get_volume(vol.name).size_mb, 64)
        self.assertIn(vol.name, [v.name for v in self.al.list_volumes()])
        mounted = self.sandbox(volumes=[{"name": vol.name, "path": "/mnt/data"}])
        self.al.write_file(mounted.id, "/mnt/data/x", b"on the volume")
        self.assertEqual(mounted.volumes[0].name, vol.name)

    def test_token_reaches_its_sandbox_only(self):
        sb = self.sandbox()
        other = self.sandbox()
        tok = self.al.create_token(sb.id, 60)
        self.assertTrue(tok.token.startswith("alt_"))
        with airlock.Client(URL, tok.token) as agent:
            self.assertEqual(agent.exec(sb.id, "echo ok").stdout, "ok\n")
            with self.assertRaises(airlock.NotFound):
                agent.get_sandbox(other.id)
            with self.assertRaises(airlock.Forbidden):
                agent.list_sandboxes()

    def test_errors(self):
        with self.assertRaises(airlock.NotFound) as cm:
            self.al.get_sandbox("sb-nope")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "not_found"))
        with self.assertRaises(airlock.Invalid) as cm:
            self.al.create_sandbox(cpus=100000)
        self.assertIn("cpus", cm.exception.message)
        with self.assertRaises(TypeError):
            self.al.create_sandbox(cpu=1)  # a misspelt field never reaches the server
        with airlock.Client(URL, "alk_wrong") as bad:
            with self.assertRaises(airlock.Unauthorized):
                bad.list_sandboxes()
        with self.assertRaises(airlock.Forbidden):
            self.al.list_tenants()  # an admin route
        self.assertTrue(self.al.health())

    def test_config_from_arguments_and_environment(self):
        self.assertEqual((self.al.url, self.al.api_key), (URL.rstrip("/"), KEY))
        with airlock.Client(URL + "/", KEY) as c:
            self.assertEqual(c.url, URL.rstrip("/"))
            self.assertTrue(c.health())
