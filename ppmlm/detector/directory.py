"""Where a trained detector is written: only a new path, an empty folder or a detector of ours (it is replaced
whole), never a folder of other files; checked before anything is read or trained."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ppmlm.errors import PPMLMError
from ppmlm.identifiers.ner.detector_dir import MARKER, MARKER_CONTENT, is_detector_dir


class DetectorError(PPMLMError, ValueError):
    """A detector that cannot be trained or evaluated as asked: the message names the option or the path."""


def check_out(out) -> Path:
    """The --out of `ppmlm detector train`, refused in one line when it is a link, a file, the current folder or one
    above it, or a folder holding anything but a detector."""
    out = Path(out)
    advice = "choose a new or empty directory (ppmlm replaces only a detector it wrote)"
    if out.is_symlink():
        raise DetectorError(f"--out {out}: is a symbolic link; {advice}")
    here = Path.cwd().resolve()
    if out.resolve() in (here, *here.parents):
        raise DetectorError(f"--out {out}: is the current directory or a folder above it; {advice}")
    if out.exists() and not out.is_dir():
        raise DetectorError(f"--out {out}: is a file; {advice}")
    if out.is_dir() and any(out.iterdir()) and not is_detector_dir(out):
        names = sorted(path.name for path in out.iterdir())
        raise DetectorError(f"--out {out}: holds files that are not a ppmlm detector ({', '.join(names[:3])}"
                            f"{', ...' if len(names) > 3 else ''}); {advice}")
    parent = next(folder for folder in out.absolute().parents if folder.exists())
    if not parent.is_dir():
        raise DetectorError(f"--out {out}: {parent} is a file, not a folder")
    return out


def mark(staging: Path) -> None:
    """The marker, written last: a folder holding it is a complete detector."""
    (staging / MARKER).write_text(json.dumps(MARKER_CONTENT) + "\n", encoding="utf-8")


def install(staging: Path, out: Path) -> None:
    """Puts the complete detector `staging` at `out`: renamed onto a missing path or an empty folder in one step; a
    detector already there is first renamed aside (`.NAME.replaced`), then deleted once the new one is in place, so
    a kill between the two renames leaves the old detector there, hidden, not lost."""
    if not out.exists() or not any(out.iterdir()):
        os.replace(staging, out)
        return
    aside = out.with_name(f".{out.name}.replaced")
    shutil.rmtree(aside, ignore_errors=True)  # a previous replacement killed half-way
    os.rename(out, aside)
    os.rename(staging, out)
    shutil.rmtree(aside)
