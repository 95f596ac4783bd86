"""The user's command as the gate runs it (unmutated, then once per mutant): each run in a session of its
own, so that a timeout, Ctrl-C or SIGTERM kills what the command started too (a test runner's workers,
a shell's children), and nothing a run started outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import VkverifyError

__all__ = ["CLEAN_TIMEOUT_S", "CannotStart", "Interrupted", "Processes", "kill_group"]

# The unmutated run's limit unless --timeout: generous, since it is a whole test suite, yet a hang ends.
CLEAN_TIMEOUT_S = 3600.0


@dataclass
class _MainThread:
    """The process's main thread, where signal handlers run, whichever Processes installed them (a reader's
    worker process inherits the gate's): whether it is starting a process, and why a handler did not raise."""

    holding: bool = False
    deferred: str | None = None

    def release(self) -> str | None:
        """The process started (or failed to): handlers raise again. Why one did not, if one ran meanwhile."""
        deferred, self.holding, self.deferred = self.deferred, False, None
        return deferred


_MAIN = _MainThread()


class CannotStart(VkverifyError):
    """The command cannot be started (missing, a directory, not executable). Seen by the user of
    `vkverify mutate` (exit 2, the message says why)."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM stopped the gate (Processes.stop killed what ran). A BaseException, as
    KeyboardInterrupt is, so that no handler of errors takes it for one. `partial`: what was judged
    before, where the gate had begun judging (gate.run_command). Seen by the CLI, which reports what was judged."""

    def __init__(self, why: str, partial: tuple | None = None) -> None:
        super().__init__(why)
        self.why, self.partial = why, partial


class Processes:
    """The runs in flight, so that stop() can kill them all from the main thread while worker threads wait
    on them; after stop() no run starts, and a run it ended raises Interrupted rather than give a verdict."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # stop() may run in a signal handler while the main thread holds it
        self._live: set[subprocess.Popen] = set()
        self._groups: set[int] = set()  # process groups of runs forked by a command's process (forks.py)
        self.stopped: str | None = None  # why, once stop() was called

    def run(self, argv: list[str], env: dict[str, str], timeout: float | None) -> subprocess.CompletedProcess:
        """`argv` with `env` added to the environment, its output captured. TimeoutExpired after `timeout` s,
        CannotStart, or Interrupted; each leaves nothing of the run alive."""
        p = self.start(argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        try:
            out, err = p.communicate(timeout=timeout)
        finally:  # ended or not (a timeout; KeyboardInterrupt in the main thread): what it left is killed
            self.end(p)
        if self.stopped:  # killed by stop(): its exit is no verdict
            raise Interrupted(self.stopped)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def start(self, argv: list[str], env: dict[str, str], **popen) -> subprocess.Popen:
        """`argv` started with `env` added to the environment (`popen`: Popen's other arguments) in a session of
        its own, which stop() kills; end() it. CannotStart, or Interrupted (nothing left running)."""
        main = threading.current_thread() is threading.main_thread()
        with self._lock:  # stop() sees every process started
            if self.stopped:
                raise Interrupted(self.stopped)
            # A signal handled in this thread before p is tracked would raise past it and leave it running:
            # until p is tracked, a handler only stops (p is then killed below).
            if main:
                _MAIN.holding = True
            try:
                p = subprocess.Popen(argv, env={**os.environ, **env}, start_new_session=True, **popen)
            except OSError as e:
                if main and (deferred := _MAIN.release()) is not None:
                    raise Interrupted(deferred) from None
                why = "a directory" if os.path.isdir(argv[0]) else e.strerror or e
                raise CannotStart(f"cannot run {argv[0]}: {why}") from None
            self._live.add(p)
        if main and (deferred := _MAIN.release()) is not None:  # a signal came while p started
            self.end(p)
            raise Interrupted(deferred)
        return p

    def end(self, p: subprocess.Popen) -> None:
        """Kill what is left of a process start() began, and forget it."""
        _kill(p)
        with self._lock:
            self._live.discard(p)

    def adopt(self, group: int) -> None:
        """A process group that stop() kills too, until let go; Interrupted (and not adopted) after stop()."""
        with self._lock:
            if self.stopped:
                raise Interrupted(self.stopped)
            self._groups.add(group)

    def let_go(self, group: int) -> None:
        with self._lock:
            self._groups.discard(group)

    def stop(self, why: str) -> None:
        with self._lock:
            self.stopped = self.stopped or why
            for p in self._live:
                kill_group(p.pid)
            for group in self._groups:
                kill_group(group)

    @contextmanager
    def stopped_by_signals(self) -> Iterator[None]:
        """Within: SIGINT and SIGTERM stop() the runs and raise Interrupted in the main thread, once (a second
        signal while the gate winds down changes nothing). Outside the main thread signals stay as they are."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame) -> None:
            first = self.stopped is None
            self.stop(f"interrupted by {signal.Signals(signum).name}")
            if first and _MAIN.holding:  # run() raises, once the process it starts is tracked
                _MAIN.deferred = self.stopped
            elif first:
                raise Interrupted(self.stopped)
        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in previous.items():
                signal.signal(s, h)


def kill_group(group: int) -> None:
    """SIGKILL to every process of a process group (a session's one group is led by its first process)."""
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:  # nothing of it left
        pass


def _kill(p: subprocess.Popen) -> None:
    """Kill what is left of p's group, reap p, close its pipes."""
    kill_group(p.pid)
    p.wait()
    for pipe in (p.stdout, p.stderr):
        if pipe is not None:
            pipe.close()
