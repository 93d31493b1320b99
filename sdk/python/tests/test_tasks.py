"""Tasks through the blocking client: submitted, followed, their
artifacts read, cancelled."""

from __future__ import annotations

import airlock
from tests.live import LiveTest

HARNESS = """#!/bin/sh
read -r prompt || true
echo "working on: $prompt"
echo '{"type":"command","argv":["echo","fixed"],"exit_code":0}'
echo fixed > answer.txt
echo done
"""


class TasksTest(LiveTest):
    def test_run_follow_artifacts(self):
        task = self.al.create_task(harness="generic", prompt="fix it", command=["./harness.sh"],
                                   files={"harness.sh": HARNESS, "src/main.txt": "broken\n"},
                                   artifacts=["answer.txt"])
        self.assertIsInstance(task, airlock.Task)
        types = [e.type for e in self.al.follow_task(task.id)]
        self.assertEqual(types, ["task.started", "message", "command", "message", "file_change", "task.finished"])
        done = self.al.get_task(task.id)
        self.assertEqual((done.state, done.summary, done.exit_code), ("succeeded", "done", 0))
        resumed = list(self.al.follow_task(task.id, after=2))
        self.assertEqual([e.seq for e in resumed], [3, 4, 5, 6])
        stored = self.al.task_events(task.id)
        self.assertEqual(stored[2].argv, ["echo", "fixed"])
        arts = self.al.task_artifacts(task.id)
        self.assertEqual([a.path for a in arts.artifacts], ["answer.txt"])
        self.assertIn("answer.txt", arts.diff.text)
        self.assertEqual(self.al.read_task_artifact(task.id, "answer.txt"), b"fixed\n")
        self.assertEqual(b"".join(self.al.iter_task_artifact(task.id, "answer.txt")), b"fixed\n")
        self.assertIn(b"+fixed", self.al.read_task_diff(task.id))
        page = self.al.list_tasks(states=["succeeded"], harness="generic")
        self.assertIn(task.id, [t.id for t in page.tasks])

    def test_cancel_and_errors(self):
        task = self.al.create_task(harness="generic", command=["sleep", "300"])
        ended = self.al.cancel_task(task.id)
        self.assertEqual(ended.state, "cancelled")
        self.assertEqual(self.al.wait_task(task.id).state, "cancelled")
        with self.assertRaises(airlock.Invalid) as cm:
            self.al.create_task(harness="generic")
        self.assertIn("command", cm.exception.message)
        with self.assertRaises(airlock.NotFound):
            self.al.get_task("task-nope")
