"""Worker processes that end with the process that started them, and a command that ends on SIGTERM as on Ctrl-C.

A pool's workers are ended by the pool when it closes, and by our clean-up on an error or Ctrl-C; a parent killed
by SIGKILL (the out-of-memory killer, `kill -9`, a scheduler's time limit) runs neither, and its workers, some
400 MiB each with the NER model loaded, would run on with nobody to read their results. So each worker asks to be
killed when its parent dies: on Linux the kernel does it (prctl PR_SET_PDEATHSIG); elsewhere a thread of the
worker checks every second that its parent is still there.
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Iterator

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_SECONDS = 1.0
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def worker_pool(processes: int) -> ProcessPoolExecutor:
    """A pool of `processes` spawned workers that die with this process. Spawned, not forked: the caller may hold
    torch's threads, which fork would copy half-alive. The workers start from the thread that submits the first
    tasks, which must outlive them (Linux ties the death signal to that thread), as it does where the pool is used."""
    return ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent, initargs=(os.getpid(),))


def die_with_parent(parent: int) -> None:
    """Pool initializer: this process ends when process `parent` does, however it ends."""
    linked = _LIBC is not None and _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:  # the parent died before the link was made
        os._exit(1)
    if not linked:
        threading.Thread(target=_watch, args=(parent,), name="die-with-parent", daemon=True).start()


def _watch(parent: int) -> None:
    """Ends this process once its parent is gone (it is then another process's child)."""
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (not an Exception: no `except Exception` may swallow it)."""


@contextlib.contextmanager
def terminated_as_exception() -> Iterator[None]:
    """Within the block, SIGTERM (`kill`, a scheduler's time limit) raises `Terminated` where the main thread is, so
    that the command's clean-up runs (scratch folders of sensitive files, worker pools) as it does for Ctrl-C;
    Python's default would end the process without it. Outside the main thread, a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
