"""Downstream tasks from a fine-tuned checkpoint: what a shared model is for."""
from ppmlm.downstream.classify import train_classifier

__all__ = ["train_classifier"]
