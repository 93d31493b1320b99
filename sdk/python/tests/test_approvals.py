"""Approvals through the blocking client: a connection the sandbox's policy
asks about is held until a person decides; denied, the command gets the
proxy's 403. Nothing leaves this machine: the only decision made is deny,
which the proxy answers without looking the name up."""

from __future__ import annotations

import time

import airlock
from tests.live import URL, LiveTest

# Every target is asked about: the allow list admits none.
ASKS = {"mode": "allowlist", "allow": [], "ask": True, "ask_timeout_s": 60}
CURL = "curl -s -i --max-time 60 http://denied.test/"


def held(al, sandbox_id: str) -> airlock.Approval:
    """The pending approval of the sandbox, once it opened one."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for a in al.list_approvals(state="pending"):
            if a.sandbox_id == sandbox_id:
                return a
        time.sleep(0.1)
    raise AssertionError(f"no pending approval for {sandbox_id}")


class ApprovalsTest(LiveTest):
    admin = True  # to give the tenant a second key, the person who decides

    def test_egress_held_denied_once(self):
        tenant = self.al.list_keys()[0].tenant
        admin = self.admin_client()
        approver = admin.create_key(tenant, "approver")
        self.addCleanup(admin.delete_key, approver.id)
        person = airlock.Client(URL, approver.key)
        self.addCleanup(person.close)

        sb = self.sandbox(network=ASKS)
        curl = self.al.start_process(sb.id, CURL)
        a = held(self.al, sb.id)
        self.assertIsInstance(a, airlock.Approval)
        self.assertEqual((a.kind, a.state, a.decided_by), ("egress", "pending", None))
        self.assertEqual((a.egress.host, a.egress.port, a.egress.protocol, a.egress.rule),
                         ("denied.test", 80, "http", None))
        self.assertGreater(a.deadline, a.requested_at)
        self.assertEqual(self.al.get_approval(a.id), a)
        self.assertEqual([p.state for p in self.al.list_processes(sb.id)], ["running"], "curl is held")

        # An agent must not approve its own request.
        with airlock.Client(URL, self.al.create_token(sb.id, 60).token) as agent:
            with self.assertRaises(airlock.Forbidden):
                agent.decide_approval(a.id, "deny")
            with self.assertRaises(airlock.Forbidden):
                agent.list_approvals()
        with self.assertRaises(airlock.Invalid):
            person.decide_approval(a.id, "maybe")  # type: ignore[arg-type]
        with self.assertRaises(airlock.NotFound):
            person.get_approval("apr-nope")

        decided = person.decide_approval(a.id, "deny", reason="not from a test")
        self.assertEqual((decided.id, decided.state, decided.decided_by, decided.reason, decided.remember),
                         (a.id, "denied", approver.id, "not from a test", "once"))
        self.assertIsNotNone(decided.decided_at)
        with self.assertRaises(airlock.Conflict):
            person.decide_approval(a.id, "deny")
        waited = self.al.wait_approval(a.id)
        self.assertEqual((waited.state, waited.decided_by), ("denied", approver.id))

        out = self.al.process_output(sb.id, curl.pid, follow=True)
        text = b"".join(p.data for p in out).decode().replace("\r\n", "\n")
        self.assertEqual(out.exit.exit_code, 0, text)
        for want in ("HTTP/1.1 403", "X-Airlock-Egress-Approval: denied", "not from a test"):
            self.assertIn(want, text)
        self.assertIn(a.id, [x.id for x in self.al.list_approvals(state="denied")])
        self.assertNotIn(a.id, [x.id for x in self.al.list_approvals(state="pending")])

        # The tenant's event stream carried the request and the decision.
        seen = []
        stream = self.al.events(from_start=True, types=["approval.requested", "approval.decided"])
        for ev in stream:
            if ev.data.get("id") == a.id:
                seen.append((ev.type, ev.sandbox_id, ev.data.get("decided_by")))
                if ev.type == "approval.decided":
                    break
        stream.close()
        self.assertEqual(seen, [("approval.requested", sb.id, None), ("approval.decided", sb.id, approver.id)])
