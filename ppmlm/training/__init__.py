"""Training: one accelerate loop for every masking variant. `train` here is the bare loop; the audited
training users call is `ppmlm.train` (ppmlm.pipeline), which hangs the per-epoch audit on it."""
from ppmlm.training.loop import train

__all__ = ["train"]
