"""The asynchronous API (e2b.AsyncSandbox) against Airlock's E2B facade."""

import asyncio
import hashlib
import os
import time

from e2b import (
    AsyncSandbox,
    AuthenticationException,
    CommandExitException,
    FileNotFoundException,
    FilesystemEventType,
    PtySize,
    SandboxNotFoundException,
    SandboxQuery,
    TimeoutException,
)

from common import eq, raises, step

WRONG_KEY = "e2b_" + "00" * 24
CONCURRENT = 10


async def until(what, cond, seconds=15.0):
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def run(run_id, other_key):
    step("AsyncSandbox.create")
    sbx = await AsyncSandbox.create(metadata={"suite": "e2bpy-async", "run": run_id})
    print(f"SANDBOX {sbx.sandbox_id}", flush=True)
    await commands(sbx)
    await files(sbx)
    await watch(sbx)
    await pty(sbx)
    await lifecycle(sbx, run_id, other_key)
    await concurrent(run_id)
    await errors(sbx)


async def commands(sbx):
    step("async commands.run: output, callbacks (sync and async), CommandExitException")
    eq((await sbx.commands.run("echo hi")).stdout, "hi\n", "echo hi")
    outs, errs = [], []

    async def on_err(d):
        errs.append(d)

    res = await sbx.commands.run("for i in 1 2; do echo o$i; sleep 0.3; done; echo e >&2", on_stdout=outs.append, on_stderr=on_err)
    eq(("".join(outs), "".join(errs), res.exit_code), ("o1\no2\n", "e\n", 0), "streamed output")
    with raises(CommandExitException) as r:
        await sbx.commands.run("exit 7")
    eq(r.error.exit_code, 7, "exit code")

    step("async background: wait, stdin, kill")
    bg = await sbx.commands.run("sleep 0.3; echo later", background=True)
    eq((await bg.wait()).stdout, "later\n", "background wait")
    cat = await sbx.commands.run("cat", background=True, stdin=True)
    await sbx.commands.send_stdin(cat.pid, "in\n")
    await cat.close_stdin()
    eq((await cat.wait()).stdout, "in\n", "stdin")
    long = await sbx.commands.run("sleep 600", background=True, timeout=0)
    eq(long.pid in [p.pid for p in await sbx.commands.list()], True, "listed")
    eq(await long.kill(), True, "kill")
    with raises(CommandExitException):
        await long.wait()


async def files(sbx):
    step("async files: text, bytes, 20 MB, not found")
    await sbx.files.write("a.txt", "async text")
    eq(await sbx.files.read("a.txt"), "async text", "read text")
    big = os.urandom(20 << 20)
    await sbx.files.write("big.bin", big)
    got = await sbx.files.read("big.bin", format="bytes")
    eq(hashlib.sha256(got).hexdigest(), hashlib.sha256(big).hexdigest(), "20 MB read back")
    await sbx.files.remove("big.bin")
    with raises(FileNotFoundException):
        await sbx.files.read("missing.txt")


async def watch(sbx):
    step("async files.watch_dir calls on_event")
    await sbx.files.make_dir("watched")
    events = []
    w = await sbx.files.watch_dir("watched", on_event=events.append, timeout=0)
    await sbx.files.write("watched/y.txt", "1")
    await until("a CREATE of y.txt", lambda: any(e.name == "y.txt" and e.type == FilesystemEventType.CREATE for e in events))
    await sbx.files.remove("watched/y.txt")
    await until("a REMOVE of y.txt", lambda: any(e.name == "y.txt" and e.type == FilesystemEventType.REMOVE for e in events))
    await w.stop()


async def pty(sbx):
    step("async pty: on_data, send_stdin, resize, kill")
    out = bytearray()
    term = await sbx.pty.create(PtySize(rows=24, cols=80), on_data=out.extend)
    await sbx.pty.send_stdin(term.pid, b"echo $((6*7))y\n")
    await until("the shell's answer", lambda: b"42y" in out)
    await sbx.pty.resize(term.pid, PtySize(rows=40, cols=120))
    await sbx.pty.send_stdin(term.pid, b"stty size\n")
    await until("the new size", lambda: b"40 120" in out)
    eq(await sbx.pty.kill(term.pid), True, "pty.kill")
    try:
        await asyncio.wait_for(term.wait(), 15)
    except CommandExitException:
        pass


async def lifecycle(sbx, run_id, other_key):
    step("AsyncSandbox.connect, list, set_timeout")
    same = await AsyncSandbox.connect(sbx.sandbox_id)
    eq((await same.commands.run("cat a.txt")).stdout, "async text", "a command through connect's token")
    ids = [s.sandbox_id for s in await AsyncSandbox.list(query=SandboxQuery(metadata={"run": run_id})).next_items()]
    if sbx.sandbox_id not in ids:
        raise AssertionError(f"AsyncSandbox.list: {ids} lacks {sbx.sandbox_id}")
    await sbx.set_timeout(400)
    with raises(SandboxNotFoundException):
        await AsyncSandbox.connect(sbx.sandbox_id, api_key=other_key)


async def concurrent(run_id):
    step(f"{CONCURRENT} concurrent AsyncSandbox.create, each running a command")
    sbxs = await asyncio.gather(*(AsyncSandbox.create(metadata={"run": run_id, "n": str(i)}, timeout=120) for i in range(CONCURRENT)))
    for s in sbxs:
        print(f"SANDBOX {s.sandbox_id}", flush=True)
    eq(len({s.sandbox_id for s in sbxs}), CONCURRENT, "distinct sandboxes")
    outs = await asyncio.gather(*(s.commands.run(f"echo {i}") for i, s in enumerate(sbxs)))
    eq([o.stdout for o in outs], [f"{i}\n" for i in range(CONCURRENT)], "each sandbox's own output")
    eq(await asyncio.gather(*(s.kill() for s in sbxs)), [True] * CONCURRENT, "kills")


async def errors(sbx):
    step("async errors: wrong key, calls after kill")
    with raises(AuthenticationException):
        await AsyncSandbox.create(api_key=WRONG_KEY)
    eq(await sbx.kill(), True, "kill")
    eq(await sbx.is_running(), False, "is_running after kill")
    with raises(TimeoutException, "sandbox was not found"):
        await sbx.commands.run("echo hi")
    with raises(TimeoutException, "sandbox was not found"):
        await sbx.files.read("a.txt")
    with raises(SandboxNotFoundException):
        await sbx.get_info()
