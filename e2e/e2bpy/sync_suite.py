"""The synchronous API (e2b.Sandbox) against Airlock's E2B facade."""

import hashlib
import os
import threading
import time
from datetime import datetime, timezone

from e2b import (
    AuthenticationException,
    CommandExitException,
    FileNotFoundException,
    FilesystemEventType,
    PtySize,
    Sandbox,
    SandboxException,
    SandboxNotFoundException,
    SandboxQuery,
    TimeoutException,
)

from common import eq, raises, step, until

WRONG_KEY = "e2b_" + "00" * 24


def run(run_id, other_key):
    step("Sandbox.create with the SDK's defaults (allow_internet_access=True, autoResume off)")
    sbx = Sandbox.create(metadata={"suite": "e2bpy", "run": run_id})
    print(f"SANDBOX {sbx.sandbox_id}", flush=True)
    info = sbx.get_info()
    eq(info.metadata.get("suite"), "e2bpy", "metadata")
    eq(info.state, "running", "state")
    # Internet access as E2B means it, as far as an Airlock policy says it:
    # every public address.
    eq(info.allow_internet_access, True, "allow_internet_access")
    eq(sorted(info.network.get("allow_out") or []), ["0.0.0.0/0", "::/0"], "network.allow_out")
    closed = Sandbox.create(allow_internet_access=False, metadata={"run": run_id})
    eq(closed.get_info().allow_internet_access, False, "allow_internet_access=False")
    closed.kill()

    commands(sbx)
    files(sbx)
    watch(sbx)
    pty(sbx)
    lifecycle(sbx, run_id, other_key)
    timeouts(run_id)
    errors(sbx, other_key)


def commands(sbx):
    step("commands.run: output, user, home, envs, cwd")
    hi = sbx.commands.run("echo hi")
    eq((hi.stdout, hi.stderr, hi.exit_code), ("hi\n", "", 0), "echo hi")
    eq(sbx.commands.run('echo "$(id -u) $PWD"').stdout, "1000 /home/user\n", "user and home")
    eq(sbx.commands.run("echo $FOO; pwd", envs={"FOO": "bar"}, cwd="/tmp").stdout, "bar\n/tmp\n", "envs and cwd")

    step("a non-zero exit raises CommandExitException with its code and output")
    with raises(CommandExitException) as r:
        sbx.commands.run("echo out; echo oops >&2; exit 3")
    eq((r.error.exit_code, r.error.stdout, r.error.stderr), (3, "out\n", "oops\n"), "CommandExitException")

    step("on_stdout and on_stderr stream as the command prints")
    chunks, errs = [], []
    res = sbx.commands.run(
        "for i in 1 2 3; do echo line$i; sleep 0.4; done; echo e >&2",
        on_stdout=lambda d: chunks.append((time.monotonic(), d)),
        on_stderr=errs.append,
    )
    eq("".join(d for _, d in chunks), "line1\nline2\nline3\n", "streamed stdout")
    eq("".join(errs), "e\n", "streamed stderr")
    eq(res.stdout, "line1\nline2\nline3\n", "result stdout")
    if len(chunks) < 3 or chunks[-1][0] - chunks[0][0] < 0.5:
        raise AssertionError(f"output came in one piece, not as printed: {chunks}")

    step("a command without stdin reads EOF")
    eq(sbx.commands.run("cat; echo eof").stdout, "eof\n", "cat without stdin")

    step("background: wait, list, kill")
    h = sbx.commands.run("sleep 0.5; echo done", background=True)
    eq(h.wait().stdout, "done\n", "background wait")
    long = sbx.commands.run("sleep 600", background=True, timeout=0)
    until("the sleep to be listed", lambda: long.pid in [p.pid for p in sbx.commands.list()])
    eq(sbx.commands.kill(long.pid), True, "kill")
    with raises(CommandExitException) as r:
        long.wait()
    eq(r.error.exit_code, -1, "exit code of a killed command")
    until("the sleep to leave the list", lambda: long.pid not in [p.pid for p in sbx.commands.list()])
    eq(sbx.commands.kill(long.pid), False, "kill of an ended command")
    other = sbx.commands.run("sleep 600", background=True, timeout=0)
    eq(other.kill(), True, "CommandHandle.kill")

    step("stdin: send_stdin, close_stdin")
    cat = sbx.commands.run("cat", background=True, stdin=True)
    sbx.commands.send_stdin(cat.pid, "hello\n")
    cat.send_stdin(b"world\n")
    cat.close_stdin()
    eq(cat.wait().stdout, "hello\nworld\n", "cat of stdin")

    step("a command past its timeout is killed: TimeoutException, as E2B's envd ends it")
    with raises(TimeoutException, "timed out"):
        sbx.commands.run("sleep 30; echo late > /tmp/late", timeout=1)
    time.sleep(0.5)
    eq(sbx.commands.run("cat /tmp/late 2>/dev/null || echo killed").stdout, "killed\n", "the timed-out command was killed")

    step("commands.connect follows a background command")
    bg = sbx.commands.run("sleep 1; echo one; sleep 1; echo two", background=True)
    bg.disconnect()
    again = sbx.commands.connect(bg.pid)
    if "two\n" not in again.wait().stdout:
        raise AssertionError("connect did not follow the command to its end")


def files(sbx):
    step("files: text and bytes")
    wi = sbx.files.write("notes/a.txt", "hello e2b")
    eq(wi.path, "/home/user/notes/a.txt", "write's path")
    eq(sbx.files.read("notes/a.txt"), "hello e2b", "read text")
    blob = bytes(range(256)) * 16
    sbx.files.write("/home/user/bin/data.bin", blob)
    eq(bytes(sbx.files.read("bin/data.bin", format="bytes")), blob, "read bytes")
    eq(b"".join(sbx.files.read("bin/data.bin", format="stream")), blob, "read stream")
    sbx.files.write_files([{"path": "multi/1.txt", "data": "one"}, {"path": "multi/2.txt", "data": b"two"}])
    eq(sorted(e.name for e in sbx.files.list("multi")), ["1.txt", "2.txt"], "write_files")

    step("files: a 20 MB round trip")
    big = os.urandom(20 << 20)
    sbx.files.write("big.bin", big)
    got = sbx.files.read("big.bin", format="bytes")
    eq(hashlib.sha256(got).hexdigest(), hashlib.sha256(big).hexdigest(), "sha256 of the 20 MB read back")
    eq(sbx.commands.run("sha256sum big.bin").stdout.split()[0], hashlib.sha256(big).hexdigest(), "sha256 in the sandbox")
    sbx.files.remove("big.bin")

    step("files: exists, get_info, make_dir, rename, remove, not found")
    eq(sbx.files.exists("notes/a.txt"), True, "exists")
    eq(sbx.files.exists("notes/none.txt"), False, "exists of a missing file")
    eq(sbx.files.get_info("notes/a.txt").size, len("hello e2b"), "get_info size")
    eq(sbx.files.make_dir("made/deep"), True, "make_dir")
    eq(sbx.files.make_dir("made/deep"), False, "make_dir of an existing dir")
    sbx.files.rename("notes/a.txt", "notes/b.txt")
    eq(sbx.files.read("notes/b.txt"), "hello e2b", "read after rename")
    sbx.files.remove("notes/b.txt")
    with raises(FileNotFoundException):
        sbx.files.read("notes/b.txt")


def watch(sbx):
    step("files.watch_dir reports creates, writes and removes")
    sbx.files.make_dir("watched")
    w = sbx.files.watch_dir("watched")
    seen = []

    def saw(name, typ):
        seen.extend(w.get_new_events())
        return any(e.name == name and e.type == typ for e in seen)

    sbx.files.write("watched/x.txt", "1")
    until("a CREATE of x.txt", lambda: saw("x.txt", FilesystemEventType.CREATE))
    sbx.commands.run("echo more >> watched/x.txt")
    until("a WRITE of x.txt", lambda: saw("x.txt", FilesystemEventType.WRITE))
    sbx.files.remove("watched/x.txt")
    until("a REMOVE of x.txt", lambda: saw("x.txt", FilesystemEventType.REMOVE))
    w.stop()
    with raises(SandboxException, "already stopped"):
        w.get_new_events()


def pty(sbx):
    step("pty: create, send input, resize, output, kill")
    out = bytearray()
    term = sbx.pty.create(PtySize(rows=24, cols=80))

    def read():
        try:
            term.wait(on_pty=out.extend)
        except CommandExitException:
            pass  # killed below

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    sbx.pty.send_stdin(term.pid, b"echo $((6*7))x\n")
    until("the shell's answer", lambda: b"42x" in out)
    sbx.pty.resize(term.pid, PtySize(rows=30, cols=100))
    sbx.pty.send_stdin(term.pid, b"stty size\n")
    until("the new size", lambda: b"30 100" in out)
    eq(sbx.pty.kill(term.pid), True, "pty.kill")
    reader.join(15)
    if reader.is_alive():
        raise AssertionError("the terminal's stream did not end after pty.kill")


def lifecycle(sbx, run_id, other_key):
    step("Sandbox.connect, Sandbox.list, set_timeout")
    same = Sandbox.connect(sbx.sandbox_id)
    eq(same.commands.run("cat multi/1.txt").stdout, "one", "a command through connect's token")
    listed = Sandbox.list(query=SandboxQuery(metadata={"run": run_id}))
    ids = [s.sandbox_id for s in listed.next_items()]
    if sbx.sandbox_id not in ids:
        raise AssertionError(f"Sandbox.list by metadata: {ids} lacks {sbx.sandbox_id}")
    eq(Sandbox.list(query=SandboxQuery(metadata={"run": run_id}), api_key=other_key).next_items(), [], "the other tenant's list")
    step("pause, and Sandbox.connect resumes")
    eq(sbx.pause(), True, "pause")
    eq(sbx.pause(), False, "pause of a paused sandbox")
    eq(sbx.is_running(), False, "is_running while paused")
    eq(Sandbox.connect(sbx.sandbox_id).files.read("multi/1.txt"), "one", "a file after resume")
    eq(sbx.is_running(), True, "is_running after connect")
    sbx.set_timeout(600)
    left = (sbx.get_info().end_at - datetime.now(timezone.utc)).total_seconds()
    if not 570 < left <= 600:
        raise AssertionError(f"after set_timeout(600) the sandbox has {left:.0f} s left")


def timeouts(run_id):
    step("a sandbox with less than a minute to live runs commands with the default 60 s timeout")
    short = Sandbox.create(timeout=20, metadata={"run": run_id})
    print(f"SANDBOX {short.sandbox_id}", flush=True)
    eq(short.commands.run("echo short").stdout, "short\n", "default timeout in a 20 s sandbox")
    bg = short.commands.run("sleep 1; echo bg", background=True)
    eq(bg.wait().stdout, "bg\n", "background command in a 20 s sandbox")
    Sandbox.set_timeout(short.sandbox_id, 5)
    eq(short.commands.run("echo last", timeout=120).stdout, "last\n", "a 120 s timeout in the last seconds")
    until("the 5 s sandbox to end", lambda: not short.is_running(), 30)
    with raises(TimeoutException, "sandbox was not found"):
        short.commands.run("echo gone")


def errors(sbx, other_key):
    step("a wrong API key raises AuthenticationException")
    with raises(AuthenticationException):
        Sandbox.create(api_key=WRONG_KEY)
    with raises(AuthenticationException):
        Sandbox.list(api_key=WRONG_KEY).next_items()

    step("unknown and other tenants' sandboxes are not found")
    with raises(SandboxNotFoundException):
        Sandbox.connect("sb-doesnotexist")
    with raises(SandboxNotFoundException):
        Sandbox.get_info("sb-doesnotexist")
    eq(Sandbox.kill("sb-doesnotexist"), False, "kill of an unknown sandbox")
    with raises(SandboxNotFoundException):
        Sandbox.connect(sbx.sandbox_id, api_key=other_key)

    step("calls on a killed sandbox raise E2B's errors, not AuthenticationException")
    eq(sbx.kill(), True, "kill")
    eq(sbx.is_running(), False, "is_running after kill")
    eq(sbx.kill(), False, "second kill")
    # E2B's edge answers 502 "The sandbox was not found" for an ended
    # sandbox: TimeoutException, a SandboxException.
    with raises(TimeoutException, "sandbox was not found"):
        sbx.commands.run("echo hi")
    with raises(TimeoutException, "sandbox was not found"):
        sbx.files.read("multi/1.txt")
    with raises(TimeoutException, "sandbox was not found"):
        sbx.files.write("x.txt", "x")
    with raises(TimeoutException, "sandbox was not found"):
        sbx.files.list(".")
    with raises(TimeoutException, "sandbox was not found"):
        sbx.commands.list()
    with raises(SandboxNotFoundException):
        sbx.get_info()
    with raises(SandboxNotFoundException):
        Sandbox.connect(sbx.sandbox_id)
