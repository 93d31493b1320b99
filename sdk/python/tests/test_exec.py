"""Commands through the blocking client: one-shot, streamed, background,
and re-attached by exec id."""

from __future__ import annotations

import airlock
from airlock._sync.exec import ExecStream
from tests.live import LiveTest


class ExecTest(LiveTest):
    def setUp(self):
        super().setUp()
        self.sb = self.sandbox()

    def test_exec_shell_string_and_argv(self):
        r = self.al.exec(self.sb.id, "echo out; echo err >&2; exit 3")
        self.assertIsInstance(r, airlock.ExecResult)
        self.assertEqual((r.stdout, r.stderr, r.exit_code), ("out\n", "err\n", 3))
        self.assertTrue(r.exec_id)
        r = self.al.exec(self.sb.id, ["printf", "%s|", "a b", "c"], cwd="/tmp", env={"X": "1"}, stdin="ignored")
        self.assertEqual(r.stdout, "a b|c|")
        with self.assertRaises(airlock.Invalid):
            self.al.exec(self.sb.id)  # neither cmd nor command

    def test_exec_stream(self):
        stream = self.al.exec_stream(self.sb.id, "for i in 1 2 3; do echo line $i; sleep 0.2; done; echo bad >&2; exit 4")
        self.assertIsInstance(stream, ExecStream)
        pieces = list(stream)
        out = b"".join(p.data for p in pieces if p.stream == "stdout")
        self.assertEqual(out, b"line 1\nline 2\nline 3\n")
        self.assertEqual(b"".join(p.data for p in pieces if p.stream == "stderr"), b"bad\n")
        self.assertGreaterEqual(len(pieces), 3, "output came in one piece: not streamed")
        self.assertEqual([p.offset for p in pieces], [sum(len(q.data) for q in pieces[:i]) for i in range(len(pieces))])
        self.assertEqual(stream.result.exit_code, 4)
        self.assertTrue(stream.exec_id and stream.pid)
        self.assertEqual(stream.result.exec_id, stream.exec_id)

        # Past the 1 MiB cap of a one-shot exec, nothing is cut.
        stdout, stderr, res = self.al.exec_stream(self.sb.id, "head -c 3000000 /dev/zero").collect()
        self.assertEqual((len(stdout), res.exit_code, res.truncated), (3000000, 0, False))

        # A stream refused before it began is an ordinary error.
        with self.assertRaises(airlock.NotFound):
            list(self.al.exec_stream("sb-nope", "true"))

    def test_reattach_by_exec_id(self):
        stream = self.al.exec_stream(self.sb.id, ["sh", "-c", "echo one; echo two"])
        self.assertEqual(stream.wait().exit_code, 0)
        info = self.al.get_exec(self.sb.id, stream.exec_id)
        self.assertEqual((info.state, info.exit.exit_code, info.output_kept), ("exited", 0, True))
        out = self.al.exec_output(self.sb.id, stream.exec_id, offset=4)
        self.assertEqual(b"".join(p.data for p in out), b"two\n")
        self.assertEqual((out.exit.exit_code, out.next_offset), (0, 8))

        # The path a stream cut by a server restart takes: following the
        # command by its exec id from the offset it had read.
        cut = ExecStream(self.al, self.sb.id, {})
        cut.exec_id, cut._received = stream.exec_id, 4
        rest = list(cut._resume(ConnectionError("cut")))
        self.assertEqual(b"".join(p.data for p in rest), b"two\n")
        self.assertEqual((cut.result.exit_code, cut.result.exec_id), (0, stream.exec_id))

    def test_background_process(self):
        bg = self.al.start_process(self.sb.id, "read line; echo got $line; sleep 60", tag="reader")
        self.assertEqual(bg.tag, "reader")
        procs = self.al.list_processes(self.sb.id)
        self.assertEqual([(p.pid, p.state) for p in procs], [(bg.pid, "running")])
        self.assertEqual(self.al.write_stdin(self.sb.id, bg.pid, "hello\n"), 6)
        self.al.close_stdin(self.sb.id, bg.pid)
        follow = self.al.process_output(self.sb.id, bg.pid, follow=True)
        for piece in follow:
            if b"got hello" in piece.data:
                break
        self.al.signal_process(self.sb.id, bg.pid, "KILL")
        out = self.al.process_output(self.sb.id, bg.pid, follow=True)
        self.assertEqual(b"".join(p.data for p in out), b"got hello\n")
        self.assertEqual(out.exit.signal, 9)
        self.assertEqual(self.al.get_exec(self.sb.id, bg.exec_id).pid, bg.pid)
        with self.assertRaises(airlock.NotFound):
            self.al.signal_process(self.sb.id, 99999, "TERM")
