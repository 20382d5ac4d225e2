"""Hydra composition shared by `python train.py`, `accelerate launch train.py` and `ppmlm train`."""
from __future__ import annotations

import os
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ppmlm.errors import PPMLMError

# `${dp_suffix:${train.dp.enabled}}` in recipes/config.yaml: a DP run of a variant gets its own directory.
OmegaConf.register_new_resolver("dp_suffix", lambda enabled: "-dp" if enabled else "", replace=True)


def recipes_dir() -> Path:
    """recipes/ in the working directory, else the one beside the package (a source checkout)."""
    for candidate in (Path.cwd() / "recipes", Path(__file__).resolve().parents[2] / "recipes"):
        if (candidate / "config.yaml").exists():
            return candidate
    raise PPMLMError("no recipes/config.yaml here or beside the ppmlm package; run from the project directory")


def compose_config(overrides: list[str]):
    with initialize_config_dir(config_dir=str(recipes_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def train_from_overrides(overrides: list[str]):
    """Masked-LM fine-tuning with a recipe, or the downstream classifier when the config says task: classify."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the Hub: every model is local
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cfg = compose_config(overrides)
    if cfg.task == "classify":
        from ppmlm.downstream.classify import train_classifier

        return train_classifier(cfg)
    if cfg.task != "mlm":
        raise PPMLMError(f"task={cfg.task}: choose mlm (a masked-LM recipe) or classify (recipe=classify)")
    from ppmlm.training.loop import train

    return train(cfg)
