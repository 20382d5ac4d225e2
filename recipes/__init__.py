"""The training recipes (Hydra configs), installed as the package data of `ppmlm.recipes`."""
