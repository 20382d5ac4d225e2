"""Worker processes that end with the process that started them, and a command that ends on SIGTERM as on Ctrl-C.

A pool's workers are ended by the pool when it closes, and by our clean-up on an error or Ctrl-C; a parent killed
by SIGKILL (the out-of-memory killer, `kill -9`, a scheduler's time limit) runs neither, and its workers, some
400 MiB each with the NER model loaded, would run on with nobody to read their results. So each worker asks to be
killed when its parent dies: on Linux the kernel does it (prctl PR_SET_PDEATHSIG); elsewhere a thread of the
worker checks every second that its parent is still there.

Also how a process holds the memory its NER work frees (`freed_memory_kept`).
"""
from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import platform
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Iterator

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_SECONDS = 1.0
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_GLIBC = _LIBC if platform.libc_ver()[0] == "glibc" else None
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h
KEPT_MMAP_THRESHOLD = 512 * 2**20  # blocks below it come from the heap inside `freed_memory_kept`
KEPT_TRIM_THRESHOLD = 1024 * 2**20  # free memory at the heap's top kept there, up to this much
GLIBC_DEFAULT_THRESHOLD = 128 * 1024
_memory_kept = {"depth": 0, "lock": threading.Lock()}  # blocks of `freed_memory_kept` open in this process


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


@contextlib.contextmanager
def freed_memory_kept() -> Iterator[None]:
    """Within the block, glibc's malloc keeps blocks freed by this process for its next allocations.

    The NER model's layers allocate arrays of 25 to 75 MB for each batch of text and free them a moment later.
    glibc serves blocks that large with mmap and hands them back to the kernel when freed, so each new array
    faults in fresh zeroed pages: a fifth of the NER's CPU time, most of it system time (docs/ner.md, One long
    note). Served from the heap and kept there, the same pages are reused. On exit the thresholds return to
    glibc's initial 128 KiB (fixed, no longer adapting) and free memory goes back to the kernel. Elsewhere than
    glibc, a no-op. Blocks may nest or interleave (two backends' generators): the last one open restores.

    Training does not use it: over 8 steps of all-MiniLM-L6-v2 (16 chunks of 128 tokens, one thread) it saved
    about a tenth of the CPU time but raised the peak resident memory from 2.2 to 2.8-3.1 GiB, the heap
    fragmenting around the gradients' larger blocks (2026-11-26, 2 runs each)."""
    # the clean-up holds its own references: a generator left open inside the block (`spans` not read to its end)
    # is closed when the interpreter exits, after this module's globals are gone
    glibc, kept = _GLIBC, _memory_kept
    defaults = ((M_MMAP_THRESHOLD, GLIBC_DEFAULT_THRESHOLD), (M_TRIM_THRESHOLD, GLIBC_DEFAULT_THRESHOLD))
    if glibc is None:
        yield
        return
    with kept["lock"]:
        if kept["depth"] == 0:
            glibc.mallopt(M_MMAP_THRESHOLD, KEPT_MMAP_THRESHOLD)
            glibc.mallopt(M_TRIM_THRESHOLD, KEPT_TRIM_THRESHOLD)
        kept["depth"] += 1
    try:
        yield
    finally:
        with kept["lock"]:
            kept["depth"] -= 1
            if kept["depth"] == 0:
                for option, value in defaults:
                    glibc.mallopt(option, value)
                glibc.malloc_trim(0)


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
