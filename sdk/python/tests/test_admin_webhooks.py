"""Webhooks (delivered to a loopback receiver and verified), and the
admin's tenants, keys, nodes and server through the blocking client."""

from __future__ import annotations

import http.server
import queue
import threading
import time
import uuid

import airlock
from tests.live import URL, LiveTest


class Receiver(http.server.BaseHTTPRequestHandler):
    got: "queue.Queue[tuple[dict, bytes]]"

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.got.put((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


class WebhooksTest(LiveTest):
    def test_delivery_verifies(self):
        got: queue.Queue = queue.Queue()
        handler = type("H", (Receiver,), {"got": got})
        srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        hook = self.al.create_webhook(url=f"http://127.0.0.1:{srv.server_port}/hook", events=["sandbox.created"])
        self.addCleanup(self.al.delete_webhook, hook.id)
        self.assertTrue(hook.secret)
        self.assertEqual([(w.id, w.secret) for w in self.al.list_webhooks()], [(hook.id, None)])
        sb = self.sandbox()
        while True:
            headers, body = got.get(timeout=60)
            if sb.id.encode() in body:
                break
        airlock.verify_webhook(hook.secret, headers["Airlock-Signature"], body)
        with self.assertRaises(airlock.WebhookSignatureError):
            airlock.verify_webhook(hook.secret, headers["Airlock-Signature"], body + b" ")
        with self.assertRaises(airlock.WebhookSignatureError):
            airlock.verify_webhook(hook.secret, headers["Airlock-Signature"], body, now=time.time() + 3600)
        for _ in range(100):
            deliveries = self.al.webhook_deliveries(hook.id)
            if deliveries and deliveries[0].state == "delivered":
                break
            time.sleep(0.1)
        self.assertEqual((deliveries[0].state, deliveries[0].attempts[0].status), ("delivered", 204))


class AdminTest(LiveTest):
    admin = True

    def test_tenants_keys(self):
        admin = self.admin_client()
        name = "sdkpy-" + uuid.uuid4().hex[:8]
        tenant = admin.create_tenant(name=name, max_sandboxes=2)
        self.assertEqual((tenant.name, tenant.max_sandboxes), (name, 2))
        with self.assertRaises(airlock.Conflict):
            admin.create_tenant(name=name)
        self.assertEqual(admin.update_tenant(name, max_sandboxes=0, max_storage_mb=100).max_storage_mb, 100)
        self.assertIn(name, [t.name for t in admin.list_tenants()])
        key = admin.create_key(name, "sdk")
        self.assertTrue(key.key.startswith("alk_"))
        with airlock.Client(URL, key.key) as c:
            self.assertEqual(c.list_sandboxes().sandboxes, [])
            self.assertEqual([k.id for k in c.list_keys()], [key.id])
        admin.delete_key(key.id)
        with airlock.Client(URL, key.key) as c:
            with self.assertRaises(airlock.Unauthorized):
                c.list_sandboxes()

    def test_server_and_nodes(self):
        admin = self.admin_client()
        info = admin.server_info()
        self.assertGreaterEqual(info.agent_protocol, 1)
        self.assertTrue(admin.ready())
        # The server's own host is no joined node.
        self.assertEqual(admin.list_nodes(), [])
        with self.assertRaises(airlock.NotFound):
            admin.drain_node("no-such-node")
        tok = admin.create_join_token(600)
        self.assertTrue(tok.token.startswith("alj_"))
        with self.assertRaises(airlock.NotFound):
            admin.get_node("no-such-node")
