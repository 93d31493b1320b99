"""Files through the blocking client, streamed both ways."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile

import airlock
from tests.live import LiveTest


class FilesTest(LiveTest):
    def setUp(self):
        super().setUp()
        self.sb = self.sandbox()

    def test_write_read_list_move_remove(self):
        r = self.al.write_file(self.sb.id, "dir/a.txt", "hello", mode=0o600)
        self.assertEqual((r.path, r.size), ("dir/a.txt", 5))
        self.assertEqual(self.al.read_file(self.sb.id, "dir/a.txt"), b"hello")
        self.al.write_file(self.sb.id, "dir/b.bin", io.BytesIO(b"\x00\x01binary"))
        self.al.write_file(self.sb.id, "dir/c.txt", (p for p in (b"gen", b"erated")))
        entries = {e.name: e for e in self.al.list_dir(self.sb.id, "dir")}
        self.assertEqual(sorted(entries), ["a.txt", "b.bin", "c.txt"])
        self.assertEqual((entries["a.txt"].mode, entries["a.txt"].type), ("0600", "file"))
        self.assertEqual(self.al.read_file(self.sb.id, "dir/c.txt"), b"generated")
        self.al.mkdir(self.sb.id, "dir/sub", mode=0o700)
        self.al.move(self.sb.id, "dir/a.txt", "dir/sub/a.txt")
        self.assertEqual(self.al.read_file(self.sb.id, "/home/user/dir/sub/a.txt"), b"hello")
        with self.assertRaises(airlock.NotFound):
            self.al.read_file(self.sb.id, "dir/a.txt")
        with self.assertRaises(airlock.Invalid):
            self.al.read_file(self.sb.id, "dir")  # a directory
        with self.assertRaises(airlock.Conflict):
            self.al.remove(self.sb.id, "dir")  # not empty
        self.al.remove(self.sb.id, "dir", recursive=True)
        self.assertEqual(self.al.list_dir(self.sb.id, "."), [])

    def test_streamed_upload_and_download(self):
        size = 5 << 20
        data = os.urandom(size)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src.bin")
            with open(src, "wb") as f:
                f.write(data)
            os.chmod(src, 0o640)
            self.assertEqual(self.al.upload_file(self.sb.id, src, "big.bin").size, size)
            sha = self.al.exec(self.sb.id, "sha256sum big.bin; stat -c %a big.bin").stdout.split()
            self.assertEqual((sha[0], sha[2]), (hashlib.sha256(data).hexdigest(), "640"))
            pieces = list(self.al.iter_file(self.sb.id, "big.bin", chunk_size=1 << 20))
            self.assertGreater(len(pieces), 1)
            self.assertEqual(b"".join(pieces), data)
            dest = os.path.join(d, "dest.bin")
            self.assertEqual(self.al.download_file(self.sb.id, "big.bin", dest), size)
            with open(dest, "rb") as f:
                self.assertEqual(f.read(), data)
            with self.assertRaises(airlock.NotFound):
                self.al.download_file(self.sb.id, "missing", os.path.join(d, "none"))
            self.assertFalse(os.path.exists(os.path.join(d, "none")) or os.path.exists(os.path.join(d, "none.part")))
