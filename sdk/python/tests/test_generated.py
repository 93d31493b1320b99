"""The generated files are what gen.py makes from their sources now: a
field added to the OpenAPI document and not to the SDK fails here, and so
does one the SDK has and the document lost (no server needed)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SDK)
import gen  # noqa: E402


def committed(rel: str) -> str:
    with open(os.path.join(SDK, rel), encoding="utf-8") as f:
        return f.read()


class GeneratedTest(unittest.TestCase):
    def test_generated_files_are_current(self):
        # Regenerated into a temp dir and compared with the committed files.
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([sys.executable, os.path.join(SDK, "gen.py"), "--out", out],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            for rel in gen.generate(gen.DEFAULT_SPEC):
                with open(os.path.join(out, rel), encoding="utf-8") as f:
                    fresh = f.read()
                if fresh != committed(rel):
                    self.fail(f"{rel} is stale: run python3 sdk/python/gen.py\n" +
                              "".join(gen.stale({rel: fresh}, SDK)))
        r = subprocess.run([sys.executable, os.path.join(SDK, "gen.py"), "--check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def spec(self):
        with open(gen.DEFAULT_SPEC, encoding="utf-8") as f:
            return json.load(f)

    def test_a_field_added_to_the_document_is_caught(self):
        spec = self.spec()
        spec["components"]["schemas"]["Sandbox"]["properties"]["brand_new"] = {"type": "string"}
        self.assertIn("brand_new", self.diff(spec))

    def test_a_field_removed_from_the_document_is_caught(self):
        spec = self.spec()
        del spec["components"]["schemas"]["Sandbox"]["properties"]["workdir"]
        d = self.diff(spec)
        self.assertRegex(d, r"(?m)^-\s+workdir: str")

    def test_a_field_made_required_is_caught(self):
        spec = self.spec()
        spec["components"]["schemas"]["Sandbox"]["required"].append("reason")
        self.assertRegex(self.diff(spec), r"(?m)^\+\s+reason: str$")

    def test_every_schema_has_a_type(self):
        import airlock
        for name in self.spec()["components"]["schemas"]:
            self.assertTrue(hasattr(airlock, name), f"airlock.{name} is missing")

    def diff(self, spec) -> str:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "openapi.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(copy.deepcopy(spec), f)
            diffs = gen.stale(gen.generate(path), SDK)
        self.assertTrue(diffs, "a changed document left the generated files as they are")
        return "".join(diffs)


if __name__ == "__main__":
    unittest.main()
