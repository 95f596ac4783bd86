"""`vkverify mutate -- pytest ...`: the mutants' runs forked from one pytest process of the command that
collected its tests once, so that a mutant pays for its tests, not for the interpreter's, pytest's and
the imports' start-up again.

The gate (Runs) starts the command with VKVERIFY_FORKS naming a channel (two pipes) and the files its
stdout and stderr go to, as soon as the listing run's pytest plugin has collected the tests. The
plugin, loaded in it, serves after collection (serve()): it imports the test runner's modules the
listing run imported (live.list_modules), then per request forks a child that applies the mutant's variables
(live.environment), points its output at the request's files and returns into pytest, which deselects,
runs the tests, reports and exits as a fresh run of the command would. Every child starts from the
state collection left (fork copies it), nothing of another mutant's; -j children run at once. The
server answers each child's exit status.

A child runs in a process group of its own, which the gate adopts (Processes.adopt) before the child
may start anything: Ctrl-C kills it with the server; a timeout kills it alone; what it leaves running
is killed when it ends. Where the command does not serve (no vkverify plugin, pytest-xdist, a server
that ends or does not answer), each run is a fresh process of the command (Processes.run).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from ..errors import VkverifyError
from ..model.loader import compile_schema
from .processes import CannotStart, Interrupted, Processes, kill_group

__all__ = ["FORKS", "Channel", "Gone", "Runs", "Server", "channel", "refuse", "serve"]

FORKS = "VKVERIFY_FORKS"  # the channel (Channel as JSON) of a command's process that serves forks
POLL_S = 0.01  # how often the server looks for children that ended, while some run
WATCH_S = 0.05  # how often the gate looks whether the listing run has collected
# What every child imports after collection, vkverify's part of it: the server imports them while the
# listing run runs (the Vulkan bindings open the loader; no instance is made until a Runtime is).
RUNTIME_MODULES = ("vulkan", "vkverify.runtime", "vkverify.check", "vkverify.report", "vkverify.mutations.live")
REAPED_S = 10.0  # how long the gate waits for the server to reap a child it killed


@dataclass(frozen=True)
class Channel:
    """The serving process's side: the descriptors it reads requests from and writes replies to, and the
    files its stdout and stderr are (each child points its copies of them at its own files)."""
    requests: int
    replies: int
    stdout: str
    stderr: str


def channel() -> Channel | None:
    """VKVERIFY_FORKS, taken out of the environment (nothing the tests start serves); None when unset."""
    spec = os.environ.pop(FORKS, None)
    if not spec:
        return None
    ch = Channel(**json.loads(spec))
    for fd in (ch.requests, ch.replies):  # no program it starts holds the gate's pipes open
        os.set_inheritable(fd, False)
    return ch


def _reply(ch: Channel, message: dict) -> None:
    os.write(ch.replies, (json.dumps(message) + "\n").encode())


def refuse(ch: Channel, why: str) -> None:
    """Tell the gate this process cannot serve (its runs are fresh processes then)."""
    _reply(ch, {"refused": why})


def serve(ch: Channel) -> bool:
    """After collection, until the gate closes the channel: the modules each {"warm"} message names imported,
    a child forked per {"id"} request, let run on {"go": pid}, its exit status answered. True in each child
    (its environment and output the request's, in a process group of its own), False here at the end."""
    _warm(RUNTIME_MODULES)
    compile_schema()  # which every Runtime's stream and findings need
    pending, held, running = b"", {}, {}  # held: pid -> (id, the fd that lets it run); running: pid -> id
    while True:
        if select.select([ch.requests], [], [], POLL_S if held or running else None)[0]:
            data = os.read(ch.requests, 1 << 16)
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                message = json.loads(line)
                if "warm" in message:
                    _warm(message["warm"])
                elif "go" in message:
                    pid = message["go"]
                    key, release = held.pop(pid)
                    os.setpgid(pid, pid)
                    os.write(release, b"\0")
                    os.close(release)
                    running[pid] = key
                elif _fork(ch, message, held):
                    return True
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                kill_group(pid)  # what it left running
                _reply(ch, {"id": running.pop(pid), "status": os.waitstatus_to_exitcode(status)})
    for pid in running:  # the gate is gone: nothing it started outlives it
        kill_group(pid)
    for _, release in held.values():
        os.close(release)  # the child ends unrun
    for pid in [*held, *running]:
        os.waitpid(pid, 0)
    return False


def _fork(ch: Channel, request: dict, held: dict) -> bool:
    """Fork the request's child: True in the child, once the gate let it run."""
    # What is alive now is every child's: left out of its collections (and their copy-on-write).
    gc.collect()
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    hold, release = os.pipe()
    pid = os.fork()
    if pid:
        os.close(hold)
        held[pid] = (request["id"], release)
        _reply(ch, {"id": request["id"], "pid": pid})
        return False
    for fd in (release, ch.requests, ch.replies, *(r for _, r in held.values())):
        os.close(fd)
    started = os.read(hold, 1)  # once adopted and in its own group; nothing: the server is gone
    os.close(hold)
    if not started:
        os.kill(os.getpid(), signal.SIGKILL)  # nothing of the server's state is the child's to tear down
    os.environ.update(request["env"])
    _redirect(ch, request["stdout"], request["stderr"])
    return True


def _warm(modules: Iterable[str]) -> None:
    """Import before forking what every child would import after collection, as the listing run did: the
    test runner's own modules (vkverify's runtime: the Vulkan loader opened, no instance made; a plugin's
    lazy imports). None reads the mutant's variables when imported."""
    import importlib

    for name in modules:
        if name not in sys.modules:
            with contextlib.suppress(Exception):  # the child imports it, or fails, as a fresh run would
                importlib.import_module(name)


def _redirect(ch: Channel, stdout: str, stderr: str) -> None:
    """Point every descriptor of the server's stdout and stderr (1 and 2, and copies such as faulthandler's)
    at the request's files."""
    files = {}
    for server, path in ((ch.stdout, stdout), (ch.stderr, stderr)):
        st = os.stat(server)
        files[(st.st_dev, st.st_ino)] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd in map(int, os.listdir("/dev/fd")):
        try:
            st = os.fstat(fd)
        except OSError:  # the listing's own descriptor, closed
            continue
        to = files.get((st.st_dev, st.st_ino))
        if to is not None:
            os.dup2(to, fd, inheritable=os.get_inheritable(fd))
    for fd in files.values():
        os.close(fd)


class _Lines:
    """The JSON objects a file gains, line by line, as it is written."""

    def __init__(self, path: str) -> None:
        self.path, self.read, self.partial = path, 0, b""

    def new(self) -> list[dict]:
        with open(self.path, "rb") as f:
            f.seek(self.read)
            data = f.read()
        self.read += len(data)
        *complete, self.partial = (self.partial + data).split(b"\n")
        entries = []
        for line in complete:
            with contextlib.suppress(ValueError):  # not one of live.py's: the gate's reading warns of it
                entries.append(json.loads(line))
        return [e for e in entries if isinstance(e, dict)]


class Gone(VkverifyError):
    """The server cannot run a request (it refused, ended, or did not fork within the run's timeout). Seen by the
    gate only, which runs that mutant in a fresh process instead and says so once."""


class Server:
    """The gate's side of the command's process serving forks (serve()): run() as Processes.run does, from
    any number of threads at once; a thread reads the replies and hands each to the run it answers."""

    def __init__(self, argv: list[str], processes: Processes) -> None:
        self.argv, self.processes = argv, processes
        self.folder = tempfile.TemporaryDirectory(prefix="vkverify-forks-")
        requests, self._requests = os.pipe()
        self._replies, replies = os.pipe()
        self._inbox: dict[str, queue.Queue] = {}
        self._lock = threading.Lock()  # the inbox
        self._writing = threading.Lock()  # a request's line written whole
        self._ids = itertools.count()
        self._gone: str | None = None  # why it answers no more
        ch = Channel(requests, replies, *(os.path.join(self.folder.name, f"server.{n}") for n in ("out", "err")))
        try:
            with open(ch.stdout, "w") as out, open(ch.stderr, "w") as err:
                self.process = processes.start(argv, {FORKS: json.dumps(asdict(ch))}, stdout=out, stderr=err,
                                               pass_fds=(requests, replies))
        except BaseException:
            for fd in (self._requests, self._replies):
                os.close(fd)
            self.folder.cleanup()
            raise
        finally:
            os.close(requests)
            os.close(replies)
        self._reader = threading.Thread(target=self._read, name="vkverify-forks", daemon=True)
        self._reader.start()

    def warm(self, modules: list[str]) -> None:
        """Have the server import `modules` before it forks."""
        self._send({"warm": modules})

    def run(self, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """The command's run under `env`, forked. TimeoutExpired after `timeout` s (the child killed),
        Interrupted, or Gone."""
        deadline = time.monotonic() + timeout
        key = str(next(self._ids))
        out, err = (os.path.join(self.folder.name, f"{key}.{n}") for n in ("out", "err"))
        with self._lock:  # after the server ended, _end() fills no new inbox
            if self._gone is not None:
                self._raise()
            self._inbox[key] = answers = queue.Queue()
        try:
            self._send({"id": key, "env": env, "stdout": out, "stderr": err})
            try:
                pid = self._answer(answers, deadline)["pid"]
            except subprocess.TimeoutExpired:
                raise Gone(f"it did not fork a run within {timeout:.0f} s") from None
            self.processes.adopt(pid)
            try:
                self._send({"go": pid})
                status = self._answer(answers, deadline)["status"]
            except BaseException as e:  # a timeout, a signal, the server gone: the child must not outlive the run
                kill_group(pid)
                with contextlib.suppress(ProcessLookupError):  # still held in the server's group (not reaped: no reuse)
                    os.kill(pid, signal.SIGKILL)
                if isinstance(e, subprocess.TimeoutExpired):
                    try:
                        self._answer(answers, time.monotonic() + REAPED_S)  # the server reaps it
                    except (subprocess.TimeoutExpired, Gone):
                        pass
                raise
            finally:
                self.processes.let_go(pid)
            return subprocess.CompletedProcess(self.argv, status, _read(out), _read(err))
        finally:
            with self._lock:
                del self._inbox[key]
            for path in (out, err):
                if os.path.exists(path):
                    os.unlink(path)

    def _send(self, message: dict) -> None:
        with self._writing:
            try:
                os.write(self._requests, (json.dumps(message) + "\n").encode())
            except BrokenPipeError:
                pass  # it ended: the reader thread tells each run

    def _answer(self, answers: queue.Queue, deadline: float) -> dict:
        try:
            found = answers.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise subprocess.TimeoutExpired(self.argv, deadline) from None
        if found is None:
            self._raise()
        return found

    def _raise(self):
        if self.processes.stopped:  # stop() killed it
            raise Interrupted(self.processes.stopped)
        raise Gone(self._gone)

    def _read(self) -> None:
        """The reader thread: each reply to the run it names, until the server ends or refuses."""
        buffer = b""
        while data := os.read(self._replies, 1 << 16):
            buffer += data
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                message = json.loads(line)
                if "refused" in message:
                    self._end(f"it cannot fork its runs: {message['refused']}")
                    return
                with self._lock:
                    answers = self._inbox.get(message["id"])
                if answers is not None:
                    answers.put(message)
        code = self.process.wait()
        tail = "\n  ".join(_read(os.path.join(self.folder.name, "server.err")).strip().splitlines()[-5:])
        self._end(f"its serving process ended (exit {code})" + (f":\n  {tail}" if tail else ""))

    def _end(self, why: str) -> None:
        with self._lock:
            self._gone = why
            for answers in self._inbox.values():
                answers.put(None)

    def close(self) -> None:
        """End the server (and any child it holds), once every run is over."""
        self.processes.end(self.process)
        self._reader.join(REAPED_S)  # it reads the end of the pipe, which no process of the server holds now
        for fd in (self._requests, self._replies):
            os.close(fd)
        self.folder.cleanup()


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:  # the child ended before opening it
        return ""


class Runs:
    """Where each mutant's run goes: to the Server, once serve() gave it the modules to warm; else, or once the
    server cannot serve (said once through `log`), a fresh process of the command."""

    def __init__(self, argv: list[str], processes: Processes, log) -> None:
        self.argv, self.processes, self.log = argv, processes, log
        self._server: Server | None = None
        self._warm: list[str] | None = None  # None: no forks
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the server now (alongside the listing run, which tells whether it serves)."""
        self._server = Server(self.argv, self.processes)

    @contextmanager
    def alongside(self, listing: str) -> Iterator[None]:
        """While the listing run writes `listing`: start the server as soon as its pytest plugin has collected the
        tests with no Runtime opened (the line naming the tests, no Runtime's before it), and have it import the
        modules the run names at its end (live.list_modules) while the run exits. Only a command that loads the
        plugin then, which serves and runs no test, starts alongside the listing run."""
        done = threading.Event()

        def watch() -> None:
            lines, collected = _Lines(listing), None
            while not done.wait(WATCH_S):
                for entry in lines.new():
                    if collected is None and ("tests" in entry or "runtime" in entry):
                        collected = "tests" in entry
                        if not collected:
                            return
                        with contextlib.suppress(Interrupted, CannotStart):  # the listing run says so
                            self.start()
                    elif collected and "modules" in entry:
                        if self._server is not None:
                            self._server.warm(entry["modules"])
                        return
        watcher = threading.Thread(target=watch, name="vkverify-listing", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()

    def serve(self, warm: list[str] | None) -> None:
        """Fork the runs after importing `warm`; None: run each in a fresh process (a server started ends)."""
        self._warm = warm
        if self._server is not None:
            if warm is None:
                self.close()
            else:
                self._server.warm(warm)

    def run(self, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        server = self._serving()
        if server is not None:
            try:
                return server.run(env, timeout)
            except Gone as e:
                with self._lock:
                    said, self._warm = self._warm is not None, None
                if said:
                    self.log(f"each mutant runs in a fresh process of the command: {e}")
        return self.processes.run(self.argv, env, timeout)

    def _serving(self) -> Server | None:
        with self._lock:
            if self._warm is not None and self._server is None:
                self.start()
                self._server.warm(self._warm)
            return self._server if self._warm is not None else None

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
