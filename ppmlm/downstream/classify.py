"""Downstream classification from any checkpoint (`recipe=classify`), the paper's protocol.

Boutet et al. (section 5.1, after Sun et al. 2020) measure what masked-LM fine-tuning left in an encoder by
training a classifier on top of it: every encoder layer but the last is frozen, so the lower layers keep what
the fine-tuning put there and learn nothing from the labelled data; the last layer and the head train for 6
epochs with AdamW, the learning rate rising linearly from 0 to 2e-5 over the first 10% of the steps, then
falling linearly to 0. Macro F1 and accuracy are measured on a held-out split after every epoch.

Read top to bottom: configuration -> labelled corpus -> held-out split -> model (frozen but its top) ->
epochs (steps, evaluation) -> results and the saved classifier.
"""
from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter
from pathlib import Path

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.utils import set_seed
from omegaconf import OmegaConf
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    get_linear_schedule_with_warmup,
)

from ppmlm.audit.metrics import load_metric
from ppmlm.corpus.loading import load_run_corpus
from ppmlm.corpus.split import split_users
from ppmlm.errors import PPMLMError
from ppmlm.files import write_atomically
from ppmlm.models import default_model_path
from ppmlm.rundir import RunDirectory
from ppmlm.training.distributed import end_processes
from ppmlm.training.loop import MetricsLog


def train_classifier(cfg) -> Path:
    """Train and evaluate the classifier run configuration `cfg` (a ppmlm.config.RunConfig) describes in its
    `classify` section (a ClassifyConfig); returns the run directory."""
    start = time.perf_counter()
    clf = cfg.classify
    run_dir = Path(cfg.output_dir or Path("runs") / f"classify-{source_name(cfg.model)}")
    resolved = OmegaConf.merge(cfg.resolved, {"output_dir": str(run_dir)})
    run = RunDirectory(run_dir)
    run.check_target()
    accelerator = Accelerator(cpu=not torch.cuda.is_available(),
                              dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
    run.claim(accelerator)  # first: a second training on this folder fails at once, and nothing is written unlocked
    with run.withdrawn_on_failure():
        set_seed(cfg.seed)

        corpus = load_run_corpus(cfg.data, cfg.seed)
        where = cfg.data.path or "the embedded synthetic corpus"
        labels = read_labels(corpus, clf.label_column, where)
        values = class_order(labels)
        names = class_names(values, clf.label_names)
        if len(values) < 2:
            raise PPMLMError(f"{where}: column {clf.label_column!r} holds a single class ({names[0]!r}); "
                             f"a classifier needs two")
        class_id = {value: i for i, value in enumerate(values)}
        user_ids = list(corpus["user_id"])
        train_rows, eval_rows = held_out_split(user_ids, clf, where)
        by = "documents" if cfg.data.path is not None and cfg.data.user_column is None else "users"

        tokenizer = AutoTokenizer.from_pretrained(str(model_path(cfg.model)))
        encodings = tokenizer(list(corpus["text"]), truncation=True, max_length=clf.max_length)
        examples = [dict({key: column[i] for key, column in encodings.items()}, labels=class_id[label])
                    for i, label in enumerate(labels)]
        collator = DataCollatorWithPadding(tokenizer)
        train_loader = DataLoader([examples[i] for i in train_rows], batch_size=clf.batch_size, shuffle=True,
                                  collate_fn=collator)
        eval_loader = DataLoader([examples[i] for i in eval_rows], batch_size=clf.batch_size, collate_fn=collator)

        model = load_classifier(cfg.model, tokenizer, names)
        top, head = freeze_all_but_top(model, clf.trainable_layers)
        trainable = sum(p.numel() for p in top + head)
        total_parameters = sum(p.numel() for p in model.parameters())
        groups = [{"params": top, "lr": clf.lr}, {"params": head, "lr": clf.head_lr or clf.lr}]
        optimizer = torch.optim.AdamW([g for g in groups if g["params"]], weight_decay=clf.weight_decay)
        model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
        steps = len(train_loader)
        total_steps = clf.epochs * steps
        warmup_steps = math.ceil(clf.warmup_ratio * total_steps)
        scheduler = get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    if accelerator.is_main_process:
        write_atomically(run.config, OmegaConf.to_yaml(resolved, resolve=True))
        write_atomically(run.metrics, "")  # a run again in the same directory replaces the last one
    accelerator.print(
        f"classify: {len(train_rows)} training and {len(eval_rows)} held-out documents (split by {by}), "
        f"{len(names)} classes; {trainable:,} of {total_parameters:,} parameters trained "
        f"(top {clf.trainable_layers} encoder layer(s) and the head); run directory {run_dir}"
    )
    metrics = MetricsLog(run.metrics, accelerator)
    history = []
    for epoch in range(clf.epochs):
        set_seed(cfg.seed + 1000 * epoch, device_specific=True)  # dropout
        train_loader.set_epoch(epoch)
        model.train()
        losses, logged = [], 0
        bar = tqdm(train_loader, desc=f"epoch {epoch + 1}/{clf.epochs}", disable=not accelerator.is_local_main_process)
        for step, batch in enumerate(bar):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            if (step + 1) % clf.log_every == 0 or step + 1 == steps:
                window = mean_over_processes(losses[logged:], accelerator)
                rates = scheduler.get_last_lr()  # the top layers' group first, the head's last
                metrics.write({"epoch": epoch + 1, "step": epoch * steps + step + 1, "loss": window,
                               "lr": rates[0], "head_lr": rates[-1]})
                bar.set_postfix(loss=f"{window:.3f}")
                logged = len(losses)
        figures = {"epoch": epoch + 1, **evaluate_classifier(model, eval_loader, accelerator)}
        history.append(figures)
        metrics.write({"event": "eval", "step": (epoch + 1) * steps,
                       "train_loss": mean_over_processes(losses, accelerator), **figures})
        accelerator.print(f"epoch {epoch + 1}: macro F1 {figures['macro_f1']:.4f}, accuracy {figures['accuracy']:.4f}")

    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(run_dir / "model")
        tokenizer.save_pretrained(run_dir / "model")
        results = {
            "model": source_name(cfg.model),
            "model_path": None if cfg.model.config is not None else str(model_path(cfg.model)),
            "data": str(where),
            "label_column": clf.label_column,
            "labels": names,
            "split": {
                "by": by, "seed": clf.split_seed, "eval_fraction": clf.eval_fraction,
                "train": split_summary(train_rows, user_ids, labels, values, names, by),
                "eval": split_summary(eval_rows, user_ids, labels, values, names, by),
            },
            "protocol": {
                "epochs": clf.epochs, "lr": clf.lr, "head_lr": clf.head_lr or clf.lr, "warmup_ratio": clf.warmup_ratio,
                "warmup_steps": warmup_steps, "steps": total_steps, "batch_size": clf.batch_size, "max_length": clf.max_length,
                "trainable_layers": clf.trainable_layers, "trainable_parameters": trainable,
                "total_parameters": total_parameters,
            },
            "final": history[-1],
            "best": max(history, key=lambda figures: figures["macro_f1"]),
            "epochs": history,
            "seconds": round(time.perf_counter() - start, 1),
        }
        (run_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    del model, optimizer, scheduler, train_loader, eval_loader  # the DDP-wrapped model above all
    end_processes(accelerator)  # then the process group ends (ppmlm.training.distributed)
    final = history[-1]
    accelerator.print(f"done: macro F1 {final['macro_f1']:.4f}, accuracy {final['accuracy']:.4f}; "
                      f"classifier in {run_dir / 'model'}, figures in {run_dir / 'results.json'}")
    run.release()
    return run_dir


def source_name(model_cfg) -> str:
    """The encoder in a few characters: base (the offline warm start), scratch (model.config), or the
    checkpoint's run and epoch (runs/ppmlm/checkpoints/epoch-4: ppmlm-epoch-4)."""
    if model_cfg.config is not None:
        return "scratch"
    if model_cfg.name_or_path is None:
        return "base"
    path = Path(model_cfg.name_or_path)
    return f"{path.parent.parent.name}-{path.name}" if path.parent.name == "checkpoints" else path.name


def model_path(model_cfg) -> Path:
    path = Path(model_cfg.name_or_path) if model_cfg.name_or_path else default_model_path()
    if not (path / "config.json").is_file():
        raise PPMLMError(f"model.name_or_path={path}: not a local checkpoint (no config.json); give a directory "
                         f"such as runs/ppmlm/checkpoints/epoch-4 (models are never downloaded)")
    return path


def read_labels(corpus, column: str, where) -> list[str]:
    """Each document's label as text (3 becomes "3"); the first bad record stops the run, named."""
    if column not in corpus.column_names:
        raise PPMLMError(f"{where}: no label column {column!r} (columns: {', '.join(corpus.column_names)}); "
                         f"name yours with classify.label_column")
    labels = []
    for i, (value, doc_id) in enumerate(zip(corpus[column], corpus["doc_id"])):
        if isinstance(value, float) and value.is_integer():  # integer labels of a column with nulls (Parquet)
            value = int(value)
        if value is None or value != value or (isinstance(value, str) and not value.strip()):  # None, NaN, ""
            problem = "null or empty"
        elif isinstance(value, bool) or not isinstance(value, (str, int)):
            problem = f"not a class label ({type(value).__name__})"
        else:
            labels.append(str(value).strip())
            continue
        raise PPMLMError(f"{where}: record {i} (doc_id={doc_id!r}): column {column!r} is {problem}")
    return labels


def class_order(labels: list[str]) -> list[str]:
    """Distinct labels in class-id order: as numbers when all are integers ("2" before "10"), else as text."""
    distinct = set(labels)
    if all(re.fullmatch(r"-?[0-9]+", label) for label in distinct):
        return sorted(distinct, key=int)
    return sorted(distinct)


def class_names(values: list[str], names_file) -> list[str]:
    """The name of each class: from `names_file`, a CSV whose first two columns are (label, name), else the label."""
    if names_file is None:
        return list(values)
    import pandas as pd

    if not Path(names_file).is_file():
        raise PPMLMError(f"classify.label_names={names_file}: no such file")
    frame = pd.read_csv(names_file, dtype=str, keep_default_na=False)
    if frame.shape[1] < 2:
        raise PPMLMError(f"{names_file}: expected two columns (label, name), found {frame.shape[1]}")
    named = dict(zip(frame.iloc[:, 0].str.strip(), frame.iloc[:, 1].str.strip()))
    names = [named.get(value, value) for value in values]
    repeated = [name for name, count in Counter(names).items() if count > 1]
    if repeated:
        raise PPMLMError(f"{names_file}: two classes are both named {repeated[0]!r}")
    return names


def held_out_split(user_ids: list[str], clf, where) -> tuple[list[int], list[int]]:
    """Training and held-out rows: whole users held out (a corpus without users has one per document), by the
    seeded hash of `ppmlm.corpus.split`, so no patient is on both sides; then the optional seeded caps."""
    if not 0 < clf.eval_fraction < 1:
        raise PPMLMError(f"classify.eval_fraction={clf.eval_fraction}: must be between 0 and 1")
    split = split_users(user_ids, seed=clf.split_seed, audit_fraction=clf.eval_fraction, population_fraction=0.0)
    held_out = set(split.audit_non_members)
    train = [i for i, user in enumerate(user_ids) if user not in held_out]
    test = [i for i, user in enumerate(user_ids) if user in held_out]
    if not train or not test:
        raise PPMLMError(f"{where}: {len(set(user_ids))} users cannot be split into training and held-out users "
                         f"at classify.eval_fraction={clf.eval_fraction}")
    return _sample(train, clf.train_documents, clf.split_seed), _sample(test, clf.eval_documents, clf.split_seed)


def _sample(rows: list[int], most: int | None, seed: int) -> list[int]:
    if most is None or most >= len(rows):
        return rows
    return sorted(random.Random(seed).sample(rows, most))


def split_summary(rows, user_ids, labels, values, names, by: str) -> dict:
    """Counts only: documents, users and documents per class (no user ids: results.json is shareable)."""
    counts = Counter(labels[i] for i in rows)
    summary = {"documents": len(rows)}
    if by == "users":
        summary["users"] = len({user_ids[i] for i in rows})
    summary["classes"] = {name: counts[value] for value, name in zip(values, names)}
    return summary


def load_classifier(model_cfg, tokenizer, names: list[str]):
    """A sequence classifier with a fresh head on the encoder of a local checkpoint (a masked LM, a bare
    encoder such as the offline warm start, ...), or built from `model.config` (tiny test models)."""
    label_maps = {"id2label": dict(enumerate(names)), "label2id": {name: i for i, name in enumerate(names)}}
    if model_cfg.config is not None:
        config = AutoConfig.for_model(**dict(model_cfg.config),
                                      vocab_size=len(tokenizer), **label_maps)
        return AutoModelForSequenceClassification.from_config(config)
    return AutoModelForSequenceClassification.from_pretrained(str(model_path(model_cfg)), **label_maps)


def freeze_all_but_top(model, layers: int = 1) -> tuple[list, list]:
    """Freeze the embeddings and every encoder layer but the top `layers`; returns the parameters left to
    train: those of the top layers, and those of the head.

    The head stays trainable: every module outside the encoder, and BERT's pooler, which is part of the
    classification path and which a masked-LM checkpoint does not have (it starts random, like the
    classifier). The layer stack is `base_model.encoder.layer`, as in the BERT and RoBERTa families.
    """
    base = model.base_model
    stack = getattr(getattr(base, "encoder", None), "layer", None)
    if not isinstance(stack, torch.nn.ModuleList):
        raise PPMLMError(f"{type(model).__name__}: no encoder layer stack at base_model.encoder.layer; "
                         f"classification supports BERT- and RoBERTa-like encoders")
    if not 0 <= layers <= len(stack):
        raise PPMLMError(f"classify.trainable_layers={layers}: the encoder has {len(stack)} layers")
    model.requires_grad_(False)
    head = [module for module in model.children() if module is not base] + [getattr(base, "pooler", None)]
    parameters = ([p for layer in stack[len(stack) - layers:] for p in layer.parameters()],
                  [p for module in head if module is not None for p in module.parameters()])
    for p in parameters[0] + parameters[1]:
        p.requires_grad_(True)
    return parameters


def mean_over_processes(values: list[float], accelerator) -> float:
    local = torch.tensor(sum(values) / len(values), device=accelerator.device)
    return accelerator.reduce(local, reduction="mean").item()


def evaluate_classifier(model, loader, accelerator) -> dict:
    """Macro F1 and accuracy over the whole held-out set (gathered from every process)."""
    model.eval()
    predictions, references = [], []
    with torch.no_grad():
        for batch in loader:
            logits = model(**{key: value for key, value in batch.items() if key != "labels"}).logits
            predicted, labels = accelerator.gather_for_metrics((logits.argmax(dim=-1), batch["labels"]))
            predictions += predicted.tolist()
            references += labels.tolist()
    return {
        "macro_f1": load_metric("f1_macro").compute(predictions=predictions, references=references)["macro_f1"],
        "accuracy": load_metric("accuracy").compute(predictions=predictions, references=references)["accuracy"],
    }
