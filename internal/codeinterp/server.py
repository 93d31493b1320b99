"""Airlock's code interpreter: what E2B's code interpreter SDKs talk to.

Runs inside a sandbox made from the code-interpreter template, as the
sandbox user, started by the template's start command. It serves, on port
49999, the routes the @e2b/code-interpreter SDKs call:

  POST   /execute               {code, context_id?, language?, env_vars?}
                                -> NDJSON: stdout, stderr, result, error,
                                   number_of_executions, end_of_execution
  POST   /contexts              {language?, cwd?} -> {id, language, cwd}
  GET    /contexts              -> [{id, language, cwd}]
  POST   /contexts/ID/restart
  DELETE /contexts/ID
  GET    /health

Each context is a Jupyter kernel (jupyter_client), so state lives from one
call to the next. A language is available when a Jupyter kernel for it is
installed; for another, the routes answer 404 saying so (the SDK shows a
404's body; other statuses lose it). An execution whose client goes away
(the SDK's timeoutMs) interrupts its kernel.

It must never trust what reaches its port beyond the sandbox: the daemon's
port proxy decides who may. It runs only inside the sandbox.
"""

import argparse
import datetime
import json
import os
import queue
import select
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# jupyter_client loads the debugger, which warns on stderr about Python's
# frozen modules unless told not to.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

PORT = 49999
MAX_BODY = 16 << 20
KERNEL_READY_S = 120
# How long an interrupted execution may take to stop before its kernel is
# restarted instead.
INTERRUPT_GRACE_S = 10

ALIASES = {"py": "python", "python3": "python", "js": "javascript", "ts": "typescript", "sh": "bash", "shell": "bash"}

# What a result's MIME types are called in E2B's results.
MIME_KEYS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
}

# Run silently in every Python kernel after it starts: plain tracebacks,
# and DataFrames also as data ({column: [values]}), as E2B's do.
PYTHON_SETUP = r'''
def __airlock_setup():
    import json
    from IPython.core.formatters import JSONFormatter
    from traitlets import Unicode
    ip = get_ipython()
    ip.run_line_magic("colors", "NoColor")

    class DataFormatter(JSONFormatter):
        format_type = Unicode("e2b/data")

    def frame(df):
        return {str(c): json.loads(df[c].to_json(orient="values", date_format="iso")) for c in df.columns}

    f = DataFormatter(parent=ip.display_formatter)
    f.for_type_by_name("pandas.core.frame", "DataFrame", frame)
    ip.display_formatter.formatters["e2b/data"] = f
    if "e2b/data" not in ip.display_formatter.active_types:
        ip.display_formatter.active_types.append("e2b/data")
__airlock_setup()
del __airlock_setup
'''


def env_code(language, env, restore):
    """Code that sets env in a kernel (and the code that puts it back)."""
    if language == "python":
        if restore:
            return ("for __k, __v in __airlock_env.items():\n"
                    "    (__import__('os').environ.pop(__k, None) if __v is None else __import__('os').environ.__setitem__(__k, __v))\n"
                    "del __airlock_env\n")
        return ("__airlock_env = {k: __import__('os').environ.get(k) for k in %s}\n"
                "__import__('os').environ.update(%s)\n" % (json.dumps(list(env)), json.dumps(env)))
    if language == "bash":
        if restore:
            return "".join("eval \"$__airlock_env_%d\"\n" % i for i in range(len(env)))
        lines = []
        for i, (k, v) in enumerate(env.items()):
            if not k.replace("_", "a").isalnum():
                continue
            lines.append("__airlock_env_%d=$(declare -p %s 2>/dev/null || echo 'unset %s')\n" % (i, k, k))
            lines.append("export %s=%s\n" % (k, shell_quote(v)))
        return "".join(lines)
    if language in ("javascript", "typescript"):
        if restore:
            return "for (const [k, v] of Object.entries(globalThis.__airlockEnv)) { if (v === undefined) delete process.env[k]; else process.env[k] = v }\n"
        return ("globalThis.__airlockEnv = Object.fromEntries(%s.map(k => [k, process.env[k]]));\n"
                "Object.assign(process.env, %s);\n" % (json.dumps(list(env)), json.dumps(env)))
    return ""


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class NotAvailable(Exception):
    """A language without a kernel, or a context that is not there (404)."""


class Gone(Exception):
    """The client of an execution went away."""


class Kernels:
    """The installed Jupyter kernels, by language."""

    def __init__(self):
        self.load()

    def load(self):
        self.by_language = {}
        for name, info in sorted(KernelSpecManager().get_all_specs().items()):
            lang = normalize(info.get("spec", {}).get("language", ""))
            # python3 (ipykernel) before any other Python kernel
            if lang and (lang not in self.by_language or name == "python3"):
                self.by_language[lang] = name

    def spec(self, language):
        name = self.by_language.get(language)
        if name is None:
            self.load()  # one installed since
            name = self.by_language.get(language)
        if name is None:
            have = ", ".join(sorted(self.by_language)) or "none"
            raise NotAvailable(
                'language "%s" is not available in this sandbox: no Jupyter kernel for it is installed (available: %s)'
                % (language, have))
        return name


def normalize(language):
    language = (language or "python").strip().lower()
    return ALIASES.get(language, language)


class Context:
    """One kernel, and what runs in it one execution at a time."""

    def __init__(self, language, cwd, spec, env):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.spec = spec
        self.env = env
        self.lock = threading.Lock()  # one execution at a time
        self.admin = threading.Lock()  # restart and remove
        self.gen = 0  # bumped by a restart or removal
        self.km = None
        self.kc = None

    def info(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def start(self):
        os.makedirs(self.cwd, exist_ok=True)
        km = KernelManager(kernel_name=self.spec)
        km.start_kernel(cwd=self.cwd, env=self.env)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=KERNEL_READY_S)
            if self.language == "python":
                self.silent(kc, PYTHON_SETUP)
        except Exception:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            raise
        self.km, self.kc = km, kc

    def silent(self, kc, code, timeout=30):
        """Runs code quietly and waits for its reply."""
        msg_id = kc.execute(code, silent=True, store_history=False, allow_stdin=False, stop_on_error=False)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = kc.get_shell_msg(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                break
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"].get("status") == "ok"
        return False

    def restart(self):
        with self.admin:
            self.gen += 1  # an execution under way stops
            self.km.restart_kernel(now=True)
            # The same client (a second one would share its session's
            # identity, which the kernel's sockets refuse), once the
            # execution has let go of it.
            with self.lock:
                self.kc.wait_for_ready(timeout=KERNEL_READY_S)
                if self.language == "python":
                    self.silent(self.kc, PYTHON_SETUP)

    def remove(self):
        with self.admin:
            self.gen += 1
            try:
                self.km.shutdown_kernel(now=True)
            finally:
                with self.lock:
                    self.kc.stop_channels()

    def execute(self, code, env, send, gone):
        """Runs code, sending what it outputs; gone() says the client left."""
        if not self.km.is_alive():
            # It died (os._exit, the memory limit): what it held is lost
            # anyway, and a new kernel lets the context go on.
            self.restart()
        with self.lock:
            gen, kc = self.gen, self.kc
            if env:
                self.silent(kc, env_code(self.language, env, False))
            try:
                self.run(gen, kc, code, send, gone)
            finally:
                if env and gen == self.gen and self.km.is_alive():
                    self.silent(kc, env_code(self.language, env, True))

    def run(self, gen, kc, code, send, gone):
        # Not stop_on_error: the kernel would then abort the requests that
        # reach it just after an error (an abort is an idle with no output),
        # the next call's code or the env this call set being unset. There
        # is never a queue of ours to stop: one request runs at a time.
        msg_id = kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=False)
        interrupted = None
        while True:
            if gen != self.gen:
                send({"type": "error", "name": "ContextRestarting", "value": "the context was restarted or removed", "traceback": ""})
                return
            try:
                msg = kc.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if not self.km.is_alive():
                    send({"type": "unexpected_end_of_execution"})
                    send({"type": "error", "name": "KernelDied", "value": "the kernel died during the execution", "traceback": ""})
                    return
                if interrupted is None and gone():
                    self.km.interrupt_kernel()
                    interrupted = time.monotonic()
                elif interrupted is not None and time.monotonic() - interrupted > INTERRUPT_GRACE_S:
                    # It ignores SIGINT (a blocking C call): a restart is
                    # the only way to get the context back.
                    self.gen += 1
                    threading.Thread(target=self.restart, daemon=True).start()
                    return
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content.get("execution_state") == "idle":
                break
            out = output(kind, content)
            if out is not None and interrupted is None:
                try:
                    send(out)
                except Gone:
                    self.km.interrupt_kernel()
                    interrupted = time.monotonic()
        self.reply(kc, msg_id)
        if interrupted is None:
            send({"type": "end_of_execution"})

    def reply(self, kc, msg_id):
        """Takes the execution's reply off the shell channel."""
        end = time.monotonic() + 5
        while time.monotonic() < end:
            try:
                msg = kc.get_shell_msg(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                return
            if msg["parent_header"].get("msg_id") == msg_id:
                return


def output(kind, content):
    """An iopub message as E2B's output line, None for one it has none for."""
    if kind == "stream":
        return {"type": "stderr" if content.get("name") == "stderr" else "stdout", "text": content.get("text", ""), "timestamp": now()}
    if kind in ("execute_result", "display_data"):
        res = {"type": "result", "is_main_result": kind == "execute_result"}
        for mime, value in content.get("data", {}).items():
            res[MIME_KEYS.get(mime, mime)] = value
        return res
    if kind == "error":
        return {"type": "error", "name": content.get("ename", ""), "value": content.get("evalue", ""),
                "traceback": "\n".join(content.get("traceback", []))}
    if kind == "execute_input":
        return {"type": "number_of_executions", "execution_count": content.get("execution_count")}
    return None


class Interpreter:
    def __init__(self, workdir, kernel_env):
        self.workdir = workdir
        self.kernel_env = kernel_env
        self.kernels = Kernels()
        self.mu = threading.Lock()
        self.contexts = {}
        self.defaults = {}  # language -> context id

    def create(self, language, cwd):
        language = normalize(language)
        spec = self.kernels.spec(language)
        ctx = Context(language, cwd or self.workdir, spec, self.kernel_env)
        ctx.start()
        with self.mu:
            self.contexts[ctx.id] = ctx
        return ctx

    def get(self, cid):
        with self.mu:
            ctx = self.contexts.get(cid)
        if ctx is None:
            raise NotAvailable("context %s not found" % cid)
        return ctx

    def default(self, language):
        language = normalize(language)
        with self.mu:
            ctx = self.contexts.get(self.defaults.get(language))
        if ctx is not None:
            return ctx
        ctx = self.create(language, None)
        with self.mu:
            if self.defaults.get(language) in self.contexts:
                # Another request made one meanwhile: keep the first.
                other = self.contexts[self.defaults[language]]
                del self.contexts[ctx.id]
                threading.Thread(target=ctx.remove, daemon=True).start()
                return other
            self.defaults[language] = ctx.id
        return ctx

    def remove(self, cid):
        ctx = self.get(cid)
        with self.mu:
            self.contexts.pop(cid, None)
            for lang, d in list(self.defaults.items()):
                if d == cid:
                    del self.defaults[lang]
        ctx.remove()

    def list(self):
        with self.mu:
            return [c.info() for c in self.contexts.values()]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "airlock-code-interpreter"
    interp = None  # set by main

    def log_message(self, fmt, *args):
        pass  # the daemon's audit log has every request

    def do_GET(self):
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/health":
            return self.reply(200, "OK", "text/plain")
        if path == "/contexts":
            return self.reply(200, self.interp.list())
        self.reply(404, "no route %s %s" % (self.command, path), "text/plain")

    def do_POST(self):
        path = urlsplit(self.path).path.rstrip("/")
        try:
            body = self.body()
            if path == "/execute":
                return self.execute(body)
            if path == "/contexts":
                return self.reply(200, self.interp.create(body.get("language"), body.get("cwd")).info())
            parts = path.split("/")
            if len(parts) == 4 and parts[1] == "contexts" and parts[3] == "restart":
                self.interp.get(parts[2]).restart()
                return self.reply(204, None)
            self.reply(404, "no route %s %s" % (self.command, path), "text/plain")
        except NotAvailable as e:
            self.reply(404, str(e), "text/plain")
        except ValueError as e:
            self.reply(400, str(e), "text/plain")
        except Gone:
            self.close_connection = True
        except Exception as e:
            traceback.print_exc()
            self.reply(500, "%s: %s" % (type(e).__name__, e), "text/plain")

    def do_DELETE(self):
        path = urlsplit(self.path).path.rstrip("/")
        parts = path.split("/")
        try:
            if len(parts) == 3 and parts[1] == "contexts":
                self.interp.remove(parts[2])
                return self.reply(204, None)
            self.reply(404, "no route %s %s" % (self.command, path), "text/plain")
        except NotAvailable as e:
            self.reply(404, str(e), "text/plain")

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise ValueError("request body is larger than %d bytes" % MAX_BODY)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            raise ValueError("request body is not JSON: %s" % e)
        if not isinstance(body, dict):
            raise ValueError("request body must be a JSON object")
        return body

    def execute(self, body):
        code = body.get("code")
        if not isinstance(code, str):
            raise ValueError("code must be a string")
        if body.get("context_id") and body.get("language"):
            raise ValueError("give context_id or language, not both")
        env = body.get("env_vars") or {}
        if not isinstance(env, dict):
            raise ValueError("env_vars must be an object")
        env = {str(k): str(v) for k, v in env.items()}
        if body.get("context_id"):
            ctx = self.interp.get(body["context_id"])
        else:
            ctx = self.interp.default(body.get("language"))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        try:
            ctx.execute(code, env, self.chunk, self.client_gone)
        except (BrokenPipeError, ConnectionResetError, Gone):
            self.close_connection = True
            return
        except Exception as e:
            # The status is sent: the failure goes out as an error line.
            traceback.print_exc()
            try:
                self.chunk({"type": "error", "name": type(e).__name__, "value": str(e), "traceback": traceback.format_exc()})
            except Gone:
                self.close_connection = True
                return
        self.wfile.write(b"0\r\n\r\n")

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        except (BrokenPipeError, ConnectionResetError, OSError):
            raise Gone()

    def client_gone(self):
        """Whether the client closed its end (the SDK's timeout aborts)."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                return False
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def reply(self, status, obj, ctype="application/json"):
        data = b""
        if obj is not None:
            data = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
        self.send_response(status)
        if status != 204:
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if status != 204:
            self.wfile.write(data)


def kernel_env(state):
    """The kernels' environment: the service's own, with their state kept
    out of the workspace and matplotlib drawing PNGs for the results."""
    env = dict(os.environ)
    mpl = os.path.join(state, "matplotlib")
    os.makedirs(mpl, exist_ok=True)
    # The font cache made when the template was built: without it the
    # first chart of every sandbox waits seconds for a font scan.
    # Its configuration too: Debian's matplotlib wants one in /etc, which
    # a sandbox lacks.
    cache = os.path.join(os.path.dirname(os.path.abspath(__file__)), "matplotlib")
    if os.path.isdir(cache):
        for name in os.listdir(cache):
            if name.endswith(".json") or name == "matplotlibrc":
                shutil.copy(os.path.join(cache, name), mpl)
    rc = os.path.join(mpl, "matplotlibrc")
    if not os.path.exists(rc):
        with open(rc, "w") as f:
            f.write("backend: module://matplotlib_inline.backend_inline\n")
    env.update({
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        "MPLCONFIGDIR": mpl,
        "IPYTHONDIR": os.path.join(state, "ipython"),
        "JUPYTER_RUNTIME_DIR": os.path.join(state, "runtime"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "PYTHONUNBUFFERED": "1",
    })
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=PORT)
    ap.add_argument("--workdir", default=os.environ.get("HOME") or os.getcwd())
    ap.add_argument("--state", help="where kernels keep their files (default: a new directory in $TMPDIR)")
    args = ap.parse_args()
    state = args.state or tempfile.mkdtemp(prefix="airlock-code-interpreter-")
    os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(state, "runtime")
    interp = Interpreter(args.workdir, kernel_env(state))
    # Ready means ready to run Python at once: the port opens only after
    # the default context's kernel answers.
    interp.default("python")
    Handler.interp = interp
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    print("code interpreter listening on %s:%d" % (args.host, srv.server_address[1]), file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    finally:
        for ctx in list(interp.contexts.values()):
            try:
                ctx.km.shutdown_kernel(now=True)
            except Exception:
                pass


if __name__ == "__main__":
    main()
