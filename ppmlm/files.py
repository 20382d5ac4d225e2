"""Writing so that a reader never sees half of what was written: a file replaced in one step, and a folder saved
in several files whose `complete` marker is written last."""
from __future__ import annotations

import os
from pathlib import Path

COMPLETE = "complete"  # written last into a saved checkpoint: a folder without it is half-written and never read


def write_atomically(path: Path, content: str | bytes) -> None:
    """A reader, or a process killed while writing, never sees half a file: the text (UTF-8) or bytes go to a
    hidden file beside it, which then replaces the file in one step."""
    staging = path.with_name(f".{path.name}.tmp")
    if isinstance(content, bytes):
        staging.write_bytes(content)
    else:
        staging.write_text(content, encoding="utf-8")
    os.replace(staging, path)
