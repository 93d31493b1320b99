"""The README's quick start runs as written, against a live server."""

from __future__ import annotations

import contextlib
import io
import os
import re
import unittest

from tests.live import LiveTest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def quick_start_blocks() -> list[str]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


class ReadmeTest(LiveTest):
    def test_quick_start(self):
        blocks = quick_start_blocks()
        self.assertEqual(len(blocks), 2)
        outputs = []
        for code in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, README, "exec"), {"__name__": "__readme__"})
            outputs.append(out.getvalue())
        self.assertEqual(outputs[0], "hello\nstdout from python\n")
        self.assertEqual(outputs[1], "0 Linux\n")


if __name__ == "__main__":
    unittest.main()
