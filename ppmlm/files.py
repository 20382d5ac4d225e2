"""Writing so that a reader never sees half of what was written: a file replaced in one step, a folder saved
in several files whose `complete` marker is written last, and scratch folders of sensitive files that no killed
process leaves behind for long."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Iterator

COMPLETE = "complete"  # written last into a saved checkpoint: a folder without it is half-written and never read


def staging_path(path: Path) -> Path:
    """Where `write_atomically` writes `path` before it takes its name."""
    return path.with_name(f".{path.name}.tmp")


def write_atomically(path: Path, content: str | bytes) -> None:
    """A reader, or a process killed while writing, never sees half a file: the text (UTF-8) or bytes go to a
    hidden file beside it (`staging_path`), which then replaces the file in one step."""
    staging = staging_path(path)
    if isinstance(content, bytes):
        staging.write_bytes(content)
    else:
        staging.write_text(content, encoding="utf-8")
    os.replace(staging, path)


@contextlib.contextmanager
def sensitive_scratch(parent: Path, base: str) -> Iterator[Path]:
    """A new private folder `.BASE.HOST.PID-XXXXXXXX` in `parent` for work files as sensitive as the corpus (shards
    of spans, a detector trained on the notes, an artifact before it is swapped in), deleted when the block ends,
    however it ends, unless the caller renamed it away. A process killed by SIGKILL deletes nothing, so each new
    scratch of the same base first deletes those whose process, on this host, is gone."""
    parent = Path(parent)
    remove_abandoned(parent, base)
    folder = Path(tempfile.mkdtemp(prefix=f".{base}.{_host()}.{os.getpid()}-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_abandoned(parent: Path, base: str) -> list[Path]:
    """Deletes the scratch folders of `base` in `parent` left by processes of this host that no longer run; returns
    them. Another host's (a shared file system) and a live process's are left alone."""
    pattern = re.compile(rf"\.{re.escape(base)}\.{re.escape(_host())}\.(\d+)-[^/]+")
    removed = []
    with contextlib.suppress(OSError):
        for entry in Path(parent).iterdir():
            found = pattern.fullmatch(entry.name)
            if found and entry.is_dir() and not entry.is_symlink() and not _running(int(found[1])):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
