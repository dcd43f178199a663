"""CPU-heavy work on untrusted input runs here: in a worker process, with a hard deadline.

    result = await run_bounded(page_text, body, charset, timeout=10)

Why a process and not a thread: a thread cannot be stopped, and C code that keeps the GIL
(a parser) would stall the event loop from a thread as surely as on it. A worker process is
killed (SIGKILL, which it cannot ignore or delay) when the deadline passes or the caller is
cancelled, so the work costs at most `timeout` seconds of one core, and the event loop only
ever waits on pipe I/O, done in a thread. Workers run at a lower priority (nice 10) so a busy
worker does not take the CPU from the event loop, under a memory limit, and at most
`max_workers` at once per event loop; an idle worker is reused, a killed one replaced.

`fn` and its arguments and result are pickled: `fn` must be a module-level function whose
module imports cheaply (the worker imports it on first use).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import pickle
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from typing import IO, Any, TypeVar

T = TypeVar("T")

# The worker's first message is its set-up (sys.path, nice, memory limit); then jobs.
_BOOT = ("import pickle, sys; setup = pickle.load(sys.stdin.buffer); sys.path[:] = setup['path']; "
         "from bot.plumbing.offload import _serve; _serve(setup)")


class WorkTimeout(TimeoutError):
    """The work did not finish within its deadline; the worker was killed."""


class WorkFailed(RuntimeError):
    """The work raised, or its worker died."""


class _Worker:
    def __init__(self, setup: dict[str, Any]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            close_fds=True)
        self._setup = setup

    def exchange(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any]:
        """Send a job and wait for its answer (blocking: runs in a thread)."""
        stdin, stdout = self._pipes()
        if self._setup:
            pickle.dump(self._setup, stdin)
            self._setup = {}
        try:
            pickle.dump((fn, args), stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
            return pickle.load(stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as err:  # killed, or it died
            return "died", f"{type(err).__name__}: {err}"

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1)  # reaped at once after SIGKILL; no zombie left

    def alive(self) -> bool:
        return self.proc.poll() is None


class WorkerPool:
    def __init__(self, max_workers: int = 2, *, memory_limit_bytes: int | None = 1 << 30,
                 nice: int = 10) -> None:
        self.max_workers = max_workers
        self._setup = {"path": list(sys.path), "nice": nice, "memory": memory_limit_bytes}
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()  # the idle list is shared by every event loop
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] \
            = weakref.WeakKeyDictionary()
        self.started = 0  # workers started so far (a test and the benchmark read it)

    async def run(self, fn: Callable[..., T], *args: Any, timeout: float) -> T:
        """`fn(*args)` in a worker; WorkTimeout after `timeout` seconds of work, WorkFailed
        when it raises. Cancelling the caller kills the worker too."""
        loop = asyncio.get_running_loop()
        slots = self._slots.setdefault(loop, asyncio.Semaphore(self.max_workers))
        async with slots:
            worker = self._take()
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    status, value = await asyncio.to_thread(worker.exchange, fn, args)
            except BaseException as err:
                worker.kill()  # the thread's read then ends at once (end of file)
                if isinstance(err, TimeoutError) and deadline.expired():
                    name = getattr(fn, "__name__", "work")
                    raise WorkTimeout(f"{name} did not finish within {timeout:g} s") from None
                raise
        if status == "ok":
            self._give_back(worker)
            return value
        if status == "died":
            worker.kill()
            raise WorkFailed(f"the worker process died ({value})")
        self._give_back(worker)
        raise WorkFailed(value)

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                worker.kill()
            self.started += 1
        return _Worker(dict(self._setup))

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if len(self._idle) < self.max_workers and worker.alive():
                self._idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        """Stop the idle workers (running ones are stopped by their callers)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_pool = WorkerPool(max_workers=max(1, min(4, os.cpu_count() or 1)))
atexit.register(_pool.close)


async def run_bounded(fn: Callable[..., T], *args: Any, timeout: float) -> T:
    """`fn(*args)` off the event loop, in the shared worker pool, killed after `timeout` s."""
    return await _pool.run(fn, *args, timeout=timeout)


def shutdown() -> None:
    """Stop the shared pool's idle workers (the app calls it when it closes)."""
    _pool.close()


# --- inside the worker ------------------------------------------------------------------------


def _serve(setup: dict[str, Any]) -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the answers
    with contextlib.suppress(OSError):
        os.nice(setup.get("nice") or 0)
    if setup.get("memory"):
        import resource

        limit = int(setup["memory"])
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            fn, args = pickle.load(stdin)
        except EOFError:  # the parent closed the pipe or exited
            return
        try:
            answer: tuple[str, Any] = ("ok", fn(*args))
        except MemoryError:
            answer = ("error", "MemoryError: the work needed more memory than allowed")
        except Exception as err:
            answer = ("error", f"{type(err).__name__}: {err}")
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:
            data = pickle.dumps(("error", f"the result cannot be sent back: {err}"))
        stdout.write(data)
        stdout.flush()
