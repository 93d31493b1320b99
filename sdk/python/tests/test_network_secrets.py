"""Egress policy, the network log and secrets through the blocking client."""

from __future__ import annotations

import uuid

import airlock
from tests.live import URL, LiveTest


class NetworkTest(LiveTest):
    def test_policy_and_log(self):
        sb = self.sandbox(network={"mode": "allowlist", "allow": ["pypi.org"]})
        pol = self.al.get_network(sb.id)
        self.assertEqual((pol.mode, pol.allow), ("allowlist", ["pypi.org"]))
        pol = self.al.set_network(sb.id, mode="allowlist", allow=["example.org"], deny=["bad.example.org"])
        self.assertEqual((pol.allow, pol.deny), (["example.org"], ["bad.example.org"]))
        # Refused by the proxy before any lookup: no packet leaves the host.
        r = self.al.exec(sb.id, "curl -s -o /dev/null -w '%{http_code}' http://blocked.invalid/")
        self.assertEqual(r.stdout, "403")
        log = self.al.network_log(sb.id)
        self.assertEqual([(e.host, e.decision) for e in log], [("blocked.invalid", "denied")])
        self.assertEqual(self.al.network_log(sb.id, after=log[-1].seq), [])
        with self.assertRaises(airlock.Invalid) as cm:
            self.al.set_network(sb.id, mode="allowlist", allow=["*."])
        self.assertIn("network.allow[0]", cm.exception.message)
        with airlock.Client(URL, self.al.create_token(sb.id, 60).token) as agent:
            with self.assertRaises(airlock.Forbidden):
                agent.set_network(sb.id, mode="allowlist", allow=["*.com"])


class SecretsTest(LiveTest):
    def test_create_list_rotate_delete(self):
        name = "SDKPY_" + uuid.uuid4().hex[:8].upper()
        s = self.al.create_secret(name=name, value="v1", hosts=["api.example.com"],
                                  inject={"header": "Authorization", "format": "Bearer {value}"})
        self.addCleanup(lambda: self.al.delete_secret(name) if name in [x.name for x in self.al.list_secrets()] else None)
        self.assertEqual((s.name, s.hosts, s.inject.header), (name, ["api.example.com"], "Authorization"))
        self.assertFalse(hasattr(s, "value"))
        with self.assertRaises(airlock.Conflict):
            self.al.create_secret(name=name, value="again", hosts=["api.example.com"])
        self.assertIn(name, [x.name for x in self.al.list_secrets()])
        rotated = self.al.rotate_secret(name, value="v2", body=True)
        self.assertTrue(rotated.body)
        self.assertIsNotNone(rotated.rotated_at)
        sb = self.sandbox(secrets=[name])
        env = self.al.exec(sb.id, f"echo ${name}").stdout
        self.assertTrue(env.startswith("airlock-ph-"), env)
        self.al.delete_secret(name)
        with self.assertRaises(airlock.NotFound):
            self.al.delete_secret(name)
