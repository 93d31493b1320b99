"""Templates through the blocking client: listed, built from a sandbox
(admin), used, deleted."""

from __future__ import annotations

import uuid

import airlock
from tests.live import META, LiveTest


class TemplatesTest(LiveTest):
    admin = True

    def test_list_get(self):
        names = [t.name for t in self.al.list_templates()]
        self.assertEqual(names[0], "base")
        self.assertEqual(self.al.get_template("base").name, "base")
        with self.assertRaises(airlock.NotFound):
            self.al.get_template("no-such-template")

    def test_commit_use_delete(self):
        admin = self.admin_client()
        name = "sdkpy-" + uuid.uuid4().hex[:8]
        build = admin.create_sandbox(build=True, metadata=dict(META))
        try:
            r = admin.exec(build.id, "mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho built\\n' > /usr/local/bin/sdkpy-hello"
                                     " && chmod 755 /usr/local/bin/sdkpy-hello")
            self.assertEqual(r.exit_code, 0, r.stderr)
            with self.assertRaises(airlock.Forbidden):
                self.al.commit_template(name=name, sandbox_id=build.id)
            tpl = admin.commit_template(name=name, sandbox_id=build.id, labels={"by": "sdk"})
        except BaseException:
            admin.delete_sandbox(build.id)
            raise
        self.addCleanup(admin.delete_template, name)
        self.assertEqual((tpl.name, tpl.labels), (name, {"by": "sdk"}))
        sb = self.sandbox(template=name)
        self.assertEqual(self.al.exec(sb.id, "sdkpy-hello").stdout, "built\n")
