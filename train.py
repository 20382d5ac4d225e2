"""Train a recipe: `python train.py recipe=ppmlm`, or `accelerate launch train.py recipe=ppmlm ...`.

Any configuration key can be overridden (see recipes/config.yaml), e.g. data.path=notes.jsonl
model.name_or_path=/models/roberta-large train.epochs=2 output_dir=runs/notes; `--config-dir DIR` trains
with your own recipe folder instead of the packaged recipes, as `ppmlm train` does.
"""
import argparse
import sys

from ppmlm.cli import add_train_arguments, parse_train_arguments
from ppmlm.errors import PPMLMError
from ppmlm.models import local_models_only

local_models_only()  # before the training modules import the Hugging Face libraries, which read it once
from ppmlm.pipeline import train_from_overrides  # noqa: E402

if __name__ == "__main__":
    args = parse_train_arguments(add_train_arguments(argparse.ArgumentParser(prog="train.py", description=__doc__)))
    try:
        train_from_overrides(args.overrides, args.config_dir)
    except PPMLMError as error:
        sys.exit(f"train.py: error: {error}")
    except KeyboardInterrupt:
        print("train.py: interrupted; resume with the same command (resume=auto)", file=sys.stderr)
        sys.exit(130)
