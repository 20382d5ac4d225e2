"""Fine-tune a masked language model with your own Hugging Face `Trainer`, masked and audited by ppmlm.

    python examples/hf_trainer.py                      # the embedded default (24 synthetic patients), 4 epochs
    python examples/hf_trainer.py data.path=notes.jsonl model.name_or_path=/models/roberta-base output_dir=runs/notes
    ppmlm push runs/ppmlm-trainer --repo-id org/name --local-dir export/

The Trainer is yours: TrainingArguments below, any model the run's `model` keys name, any callbacks beside ppmlm's.
ppmlm adds three things (ppmlm.hf): the recipe's features, whose `protected` flag marks the identifiers of the
training users; the PrivacyMaskingCollator as `data_collator`, which never makes a protected token a label; and
the PrivacyAuditCallback, which saves each epoch to <output_dir>/checkpoints/epoch-N, audits it into
<output_dir>/audit/ and ends with the sharing policy's verdict. Any key of the recipes' config.yaml can be given as
key=value (recipe, corpus, blacklist, audit, share); the Trainer's own checkpoints go to <output_dir>/trainer, from
which --resume continues a killed run. `--tiny` trains a 2-layer model built from a config for one epoch (a look
at the whole path in a minute, and the tests').
"""
import argparse
import sys
from pathlib import Path

from ppmlm.errors import PPMLMError
from ppmlm.models import local_models_only

local_models_only()  # before the Hugging Face libraries are imported: they read it once
import torch  # noqa: E402
from transformers import AutoTokenizer, Trainer, TrainingArguments  # noqa: E402

from ppmlm import PrivacyAuditCallback, compose_config, prepare_trainer_run  # noqa: E402
from ppmlm.models import default_model_path  # noqa: E402

TINY = ["+model.config={model_type: bert, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 2, "
        "intermediate_size: 64}", "train.max_length=64", "train.epochs=1"]


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(prog="hf_trainer.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, help="num_train_epochs (default: train.epochs of the recipe)")
    parser.add_argument("--batch-size", type=int, help="per_device_train_batch_size (default: train.batch_size)")
    parser.add_argument("--lr", type=float, help="learning_rate, for every parameter (default: train.lr)")
    parser.add_argument("--stop-on-failure", action="store_true",
                        help="stop after an epoch whose audit fails the sharing policy (a measured leak)")
    parser.add_argument("--resume", action="store_true", help="continue from the Trainer's last checkpoint")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model from a config, 64-token chunks, one epoch")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the recipes' config.yaml")
    options = parser.parse_args(argv)
    overrides = [*TINY, *options.overrides] if options.tiny else options.overrides
    if not any(override.lstrip("+").startswith("output_dir=") for override in overrides):
        overrides = [*overrides, "output_dir=runs/${masking.variant}-trainer"]  # never the folder of python train.py
    cfg = compose_config(overrides)
    tokenizer = AutoTokenizer.from_pretrained(str(cfg.model.name_or_path or default_model_path()))
    arguments = TrainingArguments(
        output_dir=str(Path(cfg.output_dir) / "trainer"), num_train_epochs=options.epochs or cfg.train.epochs,
        per_device_train_batch_size=options.batch_size or cfg.train.batch_size, learning_rate=options.lr or cfg.train.lr,
        weight_decay=cfg.train.weight_decay, logging_steps=cfg.train.log_every, save_strategy="epoch",
        save_total_limit=1, seed=cfg.seed, report_to=[],
        use_cpu=not torch.cuda.is_available(),  # on CPUs, what makes `accelerate launch --multi_gpu` ranks train together
        remove_unused_columns=False,  # the collator reads the word_ids and protected columns
    )
    run = prepare_trainer_run(cfg, tokenizer, arguments)
    trainer = Trainer(model=run.load_model(), args=arguments, train_dataset=run.features, data_collator=run.collator,
                      processing_class=tokenizer,
                      callbacks=[PrivacyAuditCallback(run, stop_on_failure=options.stop_on_failure)])
    trainer.train(resume_from_checkpoint=True if options.resume else None)
    return run.path


if __name__ == "__main__":
    try:
        main()
    except PPMLMError as error:
        sys.exit(f"hf_trainer.py: error: {error}")
