"""Training: one accelerate loop for every masking variant."""
from ppmlm.training.loop import train

__all__ = ["train"]
