"""The parts that need no server: the SSE parser, the error mapping, the
JSON codec, webhook signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import unittest
from datetime import datetime, timezone

import airlock
from airlock import _codec, errors
from airlock._sse import SSEParser


def events(*chunks: bytes):
    p = SSEParser()
    return [(e.type, e.data) for c in chunks for e in p.feed(c)]


class SSETest(unittest.TestCase):
    def test_line_ends_split_anywhere(self):
        stream = b"\xef\xbb\xbfevent: stdout\r\ndata: a\r\n\r\n: keep-alive\n\ndata: b\rdata: c\r\revent: x\n\n"
        want = [("stdout", "a"), ("message", "b\nc")]
        self.assertEqual(events(stream), want)
        self.assertEqual(events(*[stream[i:i + 1] for i in range(len(stream))]), want)

    def test_cut_event_is_dropped(self):
        self.assertEqual(events(b"event: exit\ndata: {}\n"), [])

    def test_oversized_event(self):
        with self.assertRaises(ValueError):
            SSEParser().feed(b"data: " + b"x" * (17 << 20))


class ErrorsTest(unittest.TestCase):
    def test_codes_and_statuses(self):
        cases = [
            (409, {"code": "paused", "message": "resume it"}, errors.Paused),
            (409, {"code": "conflict", "message": "busy"}, errors.Conflict),
            (429, {"code": "storage_quota", "message": "full"}, errors.StorageQuota),
            (503, {"code": "low_disk", "message": "disk"}, errors.LowDisk),
            (400, {"code": "invalid_argument", "message": "bad"}, errors.Invalid),
            (401, {"code": "unauthenticated", "message": "who"}, errors.Unauthorized),
            (404, {"code": "something_new", "message": "?"}, errors.NotFound),
        ]
        for status, detail, cls in cases:
            e = errors.from_answer(status, json.dumps({"error": detail}).encode())
            self.assertIs(type(e), cls, detail)
            self.assertEqual((e.status, e.code, e.message), (status, detail["code"], detail["message"]))
        self.assertTrue(issubclass(errors.Paused, errors.Conflict))
        e = errors.from_answer(502, b"<html>Bad Gateway</html>")
        self.assertIsInstance(e, errors.Unavailable)
        self.assertEqual((e.code, e.message), ("", "<html>Bad Gateway</html>"))
        self.assertIsInstance(errors.from_detail({"code": "slow_consumer", "message": "behind"}), errors.StreamDropped)


class CodecTest(unittest.TestCase):
    def setUp(self):
        strict = _codec.strict
        self.addCleanup(setattr, _codec, "strict", strict)

    def test_decode(self):
        _codec.strict = True
        m = _codec.decode(airlock.SandboxMetrics, {
            "sandbox_id": "sb-1", "state": "running", "final": False, "cpu_seconds": 1,
            "memory_peak_bytes": 5, "wall_seconds": 2.5, "egress_bytes_out": 0, "egress_bytes_in": 0,
            "exec_count": 3, "created_at": "2026-01-02T03:04:05.123456789Z",
            "model": {"calls": 2, "unmetered_calls": 1, "input_tokens": 10, "cached_input_tokens": 0,
                      "output_tokens": 4, "reasoning_tokens": 0}})
        self.assertEqual((m.cpu_seconds, type(m.cpu_seconds), m.ended_at), (1.0, float, None))
        self.assertEqual((m.model.calls, m.model.unmetered_calls, m.cost_usd), (2, 1, None))
        # A model call whose usage was not read keeps its nulls: unknown, not 0.
        e = _codec.decode(airlock.TaskEvent, {
            "seq": 3, "type": "usage", "time": "2026-01-02T03:04:05Z", "source": "proxy",
            "call": {"time": "2026-01-02T03:04:05Z", "host": "api.openai.com", "status": 502, "duration_ms": 4.5,
                     "input_tokens": None, "cached_input_tokens": None, "output_tokens": None,
                     "reasoning_tokens": None, "cost_usd": None}})
        self.assertEqual((e.source, e.call.status, e.call.input_tokens, e.call.cost_usd), ("proxy", 502, None, None))
        self.assertEqual(m.created_at, datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc))
        move = _codec.decode(airlock.UsageReport, {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z",
                                                   "tenants": []})
        self.assertEqual(move.from_.day, 1)

    def test_strict_and_lenient(self):
        body = {"path": "a", "size": 1, "extra": True}
        _codec.strict = False
        self.assertEqual(_codec.decode(airlock.WriteResult, body).size, 1)
        self.assertIsNone(_codec.decode(airlock.WriteResult, {"path": "a"}).size)
        _codec.strict = True
        with self.assertRaisesRegex(airlock.DecodeError, "extra"):
            _codec.decode(airlock.WriteResult, body)
        with self.assertRaisesRegex(airlock.DecodeError, "size"):
            _codec.decode(airlock.WriteResult, {"path": "a"})
        with self.assertRaises(airlock.DecodeError):
            _codec.decode(airlock.WriteResult, {"path": "a", "size": "1"})

    def test_encode_params(self):
        body = _codec.params(airlock.CreateSandbox, {
            "network": airlock.NetworkPolicy(mode="allowlist", allow=["pypi.org"]),
            "volumes": [{"name": "v", "path": "/mnt/v", "read_only": None}], "template": None})
        self.assertEqual(body, {"network": {"mode": "allowlist", "allow": ["pypi.org"]},
                                "volumes": [{"name": "v", "path": "/mnt/v"}]})
        self.assertEqual(_codec.params(airlock.Move, {"from": "a", "to": "b"}), {"from": "a", "to": "b"})
        with self.assertRaisesRegex(TypeError, "memory"):
            _codec.params(airlock.CreateSandbox, {"memory": 1})


class WebhookTest(unittest.TestCase):
    def test_verify(self):
        body, ts = b'{"id":1}', "1700000000"
        sig = hmac.new(b"whsec_x", ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        airlock.verify_webhook("whsec_x", f"t={ts},v1=00,v1={sig}", body, now=1700000010)
        for header, now in ((f"t={ts},v1={sig}", 1700001000), (f"t={ts}", 1700000000), ("v1=" + sig, 1700000000),
                            (f"t={ts},v1={'0' * 64}", 1700000000)):
            with self.assertRaises(airlock.WebhookSignatureError):
                airlock.verify_webhook("whsec_x", header, body, now=now)


if __name__ == "__main__":
    unittest.main()
