"""Sessions and terminals through the blocking client."""

from __future__ import annotations

import airlock
from tests.live import LiveTest


def read_until(term: airlock.Terminal, want: bytes) -> bytes:
    got = b""
    while want not in got:
        got += term.read()
    return got


class SessionsTest(LiveTest):
    def setUp(self):
        super().setUp()
        self.sb = self.sandbox()

    def test_exec_session_keeps_state(self):
        s = self.al.create_session(self.sb.id)
        self.assertEqual((s.mode, s.state), ("exec", "ready"))
        self.al.session_exec(self.sb.id, s.id, "cd /tmp && export V=kept")
        r = self.al.session_exec(self.sb.id, s.id, "echo $PWD $V", timeout_s=10)
        self.assertEqual((r.output, r.exit_code), ("/tmp kept\n", 0))
        self.assertEqual([x.id for x in self.al.list_sessions(self.sb.id)], [s.id])
        self.assertIn("echo $PWD $V", self.al.session_cast(self.sb.id, s.id))
        self.al.delete_session(self.sb.id, s.id)
        with self.assertRaises(airlock.NotFound):
            self.al.session_exec(self.sb.id, s.id, "true")

    def test_terminal(self):
        s = self.al.create_session(self.sb.id, mode="interactive", cols=80, rows=24)
        with self.assertRaises(airlock.Conflict):
            self.al.session_exec(self.sb.id, s.id, "true")
        with self.al.attach_session(self.sb.id, s.id) as term:
            term.resize(100, 30)
            term.write("stty size; echo mark-$((6*7))\n")
            self.assertIn(b"30 100", read_until(term, b"mark-42"))
            offset = term.offset
        self.assertGreater(offset, 0)
        # Re-attached at its offset, a client gets what came after only.
        with self.al.attach_session(self.sb.id, s.id, offset=offset) as term:
            term.write("echo again-$((2+3)); exit 7\n")
            got = b"".join(term)
            self.assertIn(b"again-5", got)
            self.assertNotIn(b"mark-42", got)
            self.assertEqual((term.ended.exited, term.ended.exit_code), (True, 7))
            with self.assertRaises(airlock.TerminalEnded):
                term.read()
        with self.assertRaises(airlock.NotFound):
            self.al.attach_session(self.sb.id, "no-such-session")
