"""Process-level settings the NER runs under."""
from __future__ import annotations

import ctypes
import platform
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import finish_watched, start_watched

from ppmlm.processes import freed_memory_kept

BLOCK = 64 * 2**20  # over glibc's largest adaptive mmap threshold (32 MiB): mmapped by default


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mmapped_bytes() -> int:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    return libc.mallinfo2().hblkhd


needs_glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or not hasattr(ctypes.CDLL(None), "mallinfo2"),
                                 reason="glibc's malloc (2.33 or later, for mallinfo2)")


def _mapped_while_held() -> int:
    before = _mmapped_bytes()
    block = np.empty(BLOCK, dtype=np.uint8)
    mapped = _mmapped_bytes() - before
    del block
    return mapped


def heap_cycle() -> None:
    """The checks of the test below, run in a process of their own."""
    assert _mapped_while_held() >= BLOCK  # glibc as it starts: a block this large is mapped, and unmapped when freed
    with freed_memory_kept():
        assert _mapped_while_held() == 0  # served from the heap, which keeps it for the next one
        with freed_memory_kept():  # nested (two backends' generators): the inner exit restores nothing
            pass
        assert _mapped_while_held() == 0
    assert _mapped_while_held() >= BLOCK
    print("heap cycle ok")


@needs_glibc
def test_large_blocks_come_from_the_heap_inside_and_from_mmap_again_after(tmp_path):
    """In a fresh process: glibc's thresholds as a process starts them. A test worker's earlier tests may have left
    a backend's generator suspended inside `freed_memory_kept` until the garbage collector closes it."""
    script = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_processes; test_processes.heap_cycle()"
    process = start_watched([sys.executable, "-c", script], tmp_path / "heap.log")
    output = finish_watched(process, timeout=120)
    assert process.returncode == 0 and "heap cycle ok" in output, output



def test_a_backend_read_in_part_exits_quietly(tmp_path):
    """`spans` of the NER backend not read to its end leaves a generator suspended inside `freed_memory_kept`; the
    interpreter closes it at exit, when module globals may already be gone: its clean-up must not raise then."""
    script = ("from ppmlm.identifiers.ner import load_ner\n"
              "spans = load_ner('default').spans(['Dr. Smith saw the pt.', 'Wife Mary called.'])\n"
              "print(next(spans))\n")
    process = start_watched([sys.executable, "-c", script], tmp_path / "exit.log")
    output = finish_watched(process, timeout=300)
    assert process.returncode == 0 and "Exception ignored" not in output, output
