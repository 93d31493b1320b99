"""The audit log, the event stream and metering through the blocking
client."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import airlock
from tests.live import LiveTest


class AuditTest(LiveTest):
    def test_log_verify_export_cast(self):
        sb = self.sandbox()
        r = self.al.exec(sb.id, "echo audited")
        events = self.al.audit_events(sb.id)
        types = [e.type for e in events]
        for want in ("sandbox.created", "exec.started", "exec.output", "exec.exited"):
            self.assertIn(want, types)
        self.assertEqual([e.seq for e in events], list(range(1, len(events) + 1)))
        self.assertEqual(events[1].prev, events[0].hash)
        only = list(self.al.audit_log(sb.id, types=["exec.exited"]))
        self.assertEqual([e.data["exec_id"] for e in only], [r.exec_id])
        v = self.al.verify_audit(sb.id)
        self.assertEqual((v.ok, v.events >= len(events)), (True, True))
        export = self.al.audit_export(sb.id)
        with tarfile.open(fileobj=io.BytesIO(export), mode="r:gz") as tar:
            manifest = json.load(tar.extractfile("manifest.json"))
        self.assertEqual((manifest["format"], manifest["sandbox"]), ("airlock-audit/1", sb.id))
        key = self.al.audit_key()
        self.assertEqual(manifest["signature"]["fingerprint"], key["fingerprint"])
        self.assertEqual(b"".join(self.al.iter_audit_export(sb.id))[:2], gzip.compress(b"")[:2])
        self.assertIn("audited", self.al.audit_cast(sb.id, r.exec_id))


class EventsTest(LiveTest):
    def test_stream_from_start_and_resume(self):
        sb = self.sandbox()
        self.al.exec(sb.id, "true")
        seen = []
        stream = self.al.events(from_start=True, types=["sandbox.created", "exec.exited"])
        for ev in stream:
            self.assertIsInstance(ev, airlock.Event)
            if ev.sandbox_id == sb.id:
                seen.append(ev)
                if ev.type == "exec.exited":
                    break
        stream.close()
        self.assertEqual([e.type for e in seen], ["sandbox.created", "exec.exited"])
        # Resuming after the created event gives the exit next.
        stream = self.al.events(after=seen[0].id, types=["exec.exited"])
        nxt = next(e for e in stream if e.sandbox_id == sb.id)
        stream.close()
        self.assertEqual(nxt.id, seen[1].id)


class MeteringTest(LiveTest):
    def test_metrics_history_usage(self):
        sb = self.sandbox()
        self.al.exec(sb.id, "true")
        m = self.al.sandbox_metrics(sb.id)
        self.assertEqual((m.sandbox_id, m.final, m.exec_count), (sb.id, False, 1))
        h = self.al.sandbox_metrics_history(sb.id)
        self.assertEqual(h.sandbox_id, sb.id)
        self.assertGreaterEqual(len(h.samples), 1)
        self.assertEqual([x.sandbox_id for x in self.al.sandboxes_metrics([sb.id, "sb-nope"])], [sb.id])
        u = self.al.usage()
        self.assertEqual(len(u.tenants), 1)
        self.assertGreaterEqual(u.tenants[0].exec_count, 1)
        with self.assertRaises(airlock.Invalid):
            self.al.usage(from_="yesterday")
