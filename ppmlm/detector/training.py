"""`ppmlm detector train`: a token classifier fine-tuned on the spans a team annotated in its own notes.

Read top to bottom: settings -> the output folder and the annotations, checked first -> users split (training and
held-out users, whole users) -> BIO-tagged windows -> the encoder with a tagging head -> epochs, each ending with
the held-out loss (early stopping keeps the best epoch's weights) -> the decision threshold, chosen on the held-out
users for recall -> the directory (weights, tokenizer, detector.json, card, marker), swapped in whole.

accelerate runs it on CPU, one GPU or several (`accelerate launch -m ppmlm detector train ...`): batches are split
across processes, and every process measures the held-out loss on the whole held-out set with the same weights, so
all of them stop at the same epoch; the main process chooses the threshold and writes the directory.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.utils import set_seed
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    get_linear_schedule_with_warmup,
)

from ppmlm.detector.card import target_missed, write_card
from ppmlm.detector.directory import DetectorError, check_out, install, mark
from ppmlm.detector.examples import (
    annotations,
    entity_types,
    gold_words,
    held_out_users,
    labelled_windows,
    phi_categories,
)
from ppmlm.files import sensitive_scratch
from ppmlm.identifiers.ner import DetectorSettings
from ppmlm.identifiers.ner.tagger import Tagger
from ppmlm.models import default_model_path
from ppmlm.training.distributed import end_processes
from ppmlm.training.loop import load_report_quiet

THRESHOLD_BOUNDS = (0.05, 0.5)  # never above 0.5 (recall first), never so low that most words would be tagged


@dataclass(frozen=True)
class TrainingSettings:
    """How a detector is trained (`ppmlm detector train` options of the same names). The defaults keep it small for
    CPUs: the first layer of the warm-start encoder, windows of 128 tokens, at most 8 epochs at twice the usual
    learning rate; it tags in half the time of 2 layers trained 4 epochs and, by folds, finds what they find. What
    they cost and find is measured in docs/ner.md, "A detector trained on your annotations"."""

    epochs: int = 8
    patience: int = 1  # epochs without a lower held-out loss before training stops
    batch_size: int = 16  # windows per optimizer step, over all processes
    lr: float = 2e-4
    head_lr: float = 1e-3  # the new tagging head
    warmup: float = 0.1  # share of the steps over which the rates rise from 0
    max_length: int = 128  # tokens per window
    stride: int = 32  # tokens a window shares with the one before it
    layers: int | None = 1  # the encoder's first layers kept (None: all)
    held_out: float = 0.15  # share of the users held out for early stopping and the threshold
    target_recall: float = 0.99  # held-out word recall the threshold is chosen for
    seed: int = 0

    def check(self) -> None:
        """One line naming the first option out of range."""
        limits = {"epochs": (1, None), "patience": (1, None), "batch_size": (1, None), "max_length": (8, None),
                  "stride": (0, self.max_length // 2), "layers": (1, None), "seed": (0, None)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if value is None and name == "layers":
                continue
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                allowed = f"an integer of at least {low}" + (f" and at most {high}" if high is not None else "")
                raise DetectorError(f"--{name.replace('_', '-')} {value!r}: expected {allowed}")
        for name, low, high in (("lr", 0, 1), ("head_lr", 0, 1), ("warmup", 0, 1), ("held_out", 0, 1),
                                ("target_recall", 0, 1)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not low < value < high and not (name == "warmup" and value == 0):
                raise DetectorError(f"--{name.replace('_', '-')} {value!r}: expected a number between {low} and {high}")

    @classmethod
    def from_options(cls, options: dict) -> "TrainingSettings":
        """The settings with the options given (None: the default)."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if options.get(f.name) is not None})


def train_detector(corpus, out, *, spans_from: str = "phi", model=None, settings: TrainingSettings = TrainingSettings(),
                   where: str = "the corpus", progress: bool = True) -> DetectorSettings:
    """Trains a detector on the annotated spans of `corpus` (column `spans_from`) and writes it to `out` (new, empty or
    a detector, replaced whole). `model`: a local checkpoint directory (None: the offline warm-start encoder).
    Returns its settings, the training's counts and held-out figures in `.training`."""
    start = time.perf_counter()
    out = check_out(out)
    settings.check()
    spans = annotations(corpus, spans_from, where)
    users, texts, doc_ids = list(corpus["user_id"]), list(corpus["text"]), list(corpus["doc_id"])
    training_users, held_users = held_out_users(users, settings.held_out, settings.seed, where)
    model_path = _encoder(model)
    types = entity_types(spans)
    detector = DetectorSettings(types, phi_categories(types), 0.5, settings.max_length, settings.stride)

    accelerator = Accelerator(cpu=not torch.cuda.is_available(),
                              dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
    set_seed(settings.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(model_path))
    if not tokenizer.is_fast:
        raise DetectorError(f"--model {model_path}: its tokenizer is not a fast one (no character offsets); a detector "
                            "needs one (tokenizer.json)")
    rows = {side: [i for i, user in enumerate(users) if user in members]
            for side, members in (("training", training_users), ("held_out", held_users))}
    examples = {side: labelled_windows(tokenizer, [texts[i] for i in picked], [spans.get(doc_ids[i], []) for i in picked],
                                       detector) for side, picked in rows.items()}
    network = _tagging_model(model_path, detector, settings.layers)
    # The word embeddings stay as pretrained: the names of held-out patients are words training never saw, and the
    # tagger must judge them from the same representation as the names it saw (nor does it memorize its own in them)
    network.get_input_embeddings().requires_grad_(False)
    head = [p for name, p in network.named_parameters() if name.startswith("classifier")]
    body = [p for name, p in network.named_parameters() if not name.startswith("classifier") and p.requires_grad]
    optimizer = torch.optim.AdamW([{"params": body, "lr": settings.lr}, {"params": head, "lr": settings.head_lr}],
                                  weight_decay=0.01)
    collator = DataCollatorForTokenClassification(tokenizer)
    per_process = max(settings.batch_size // accelerator.num_processes, 1)
    loader = DataLoader(examples["training"], batch_size=per_process, shuffle=True, collate_fn=collator)
    network, optimizer, loader = accelerator.prepare(network, optimizer, loader)
    total = settings.epochs * len(loader)
    scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(settings.warmup * total), total)
    accelerator.print(f"detector: {len(rows['training'])} documents of {len(training_users)} users to train on "
                      f"({len(examples['training'])} windows), {len(rows['held_out'])} of {len(held_users)} held-out "
                      f"users; {len(types)} labels; {accelerator.num_processes} process(es) on {accelerator.device}")

    history, best, best_loss, best_epoch = [], None, math.inf, 0
    for epoch in range(1, settings.epochs + 1):
        set_seed(settings.seed + 1000 * epoch, device_specific=True)  # dropout
        loader.set_epoch(epoch)
        network.train()
        losses = []
        shown = progress and accelerator.is_local_main_process
        for batch in tqdm(loader, desc=f"epoch {epoch}/{settings.epochs}", disable=not shown):
            loss = network(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        held_loss = _held_out_loss(accelerator.unwrap_model(network), examples["held_out"], collator, per_process,
                                   accelerator.device)
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), "held_out_loss": held_loss})
        accelerator.print(f"epoch {epoch}: training loss {history[-1]['train_loss']:.4f}, held-out loss {held_loss:.4f}")
        if held_loss < best_loss:
            best_loss, best_epoch = held_loss, epoch
            weights = accelerator.unwrap_model(network).state_dict()
            best = {name: value.detach().to("cpu", copy=True) for name, value in weights.items()}
        elif epoch - best_epoch >= settings.patience:
            break

    trained = accelerator.unwrap_model(network)
    trained.load_state_dict(best)
    if accelerator.is_main_process:
        held_texts = [texts[i] for i in rows["held_out"]]
        held_spans = [spans.get(doc_ids[i], []) for i in rows["held_out"]]
        threshold, figures = choose_threshold(Tagger(trained, tokenizer, detector), held_texts, held_spans,
                                              settings.target_recall)
        facts = {
            "spans_from": spans_from, "encoder": _encoder_name(model), "layers": trained.config.num_hidden_layers,
            "users": {"training": len(training_users), "held_out": len(held_users)},
            "documents": {side: len(picked) for side, picked in rows.items()},
            "windows": {side: len(found) for side, found in examples.items()},
            "spans_by_type": _spans_by_type(spans, [doc_ids[i] for i in rows["training"]]),
            "held_out": figures, "target_recall": settings.target_recall, "threshold_bounds": list(THRESHOLD_BOUNDS),
            "epochs": history, "epochs_run": len(history), "epochs_asked": settings.epochs, "best_epoch": best_epoch,
            "patience": settings.patience, "batch_size": settings.batch_size, "lr": settings.lr,
            "head_lr": settings.head_lr, "seed": settings.seed, "processes": accelerator.num_processes,
            "device": accelerator.device.type, "seconds": round(time.perf_counter() - start, 1),
        }
        detector = replace(detector, threshold=threshold, training=facts)
        _save(out, trained, tokenizer, detector)
        accelerator.print(f"threshold {threshold:.4f}: held-out word recall {figures['recall']:.4f}, precision "
                          f"{figures['precision']:.4f}; wrote {out} (sensitive: it may have memorized names; never "
                          "share it beyond the notes' readers)")
        if (missed := target_missed(facts)) is not None:
            accelerator.print(missed)
    del network, trained, optimizer, scheduler, loader  # the DDP-wrapped model above all
    end_processes(accelerator)
    return detector


def _encoder(model) -> Path:
    path = Path(model) if model is not None else default_model_path()
    if not (path / "config.json").is_file():
        raise DetectorError(f"--model {path}: not a local checkpoint (no config.json); give a directory holding a "
                            "Hugging Face encoder and its tokenizer (models are never downloaded)")
    return path


def _encoder_name(model) -> str:
    return "all-MiniLM-L6-v2 (the offline warm-start encoder)" if model is None else Path(model).name


def _tagging_model(path: Path, detector: DetectorSettings, layers: int | None):
    """The encoder with a fresh tagging head over the detector's tags, cut to its first `layers` layers."""
    config = AutoConfig.from_pretrained(str(path))
    has = getattr(config, "num_hidden_layers", None)
    if layers is not None and has is not None and layers > has:
        raise DetectorError(f"--layers {layers}: the encoder {path} has {has} layers")
    tags = detector.tags
    cut = {} if layers is None or has is None else {"num_hidden_layers": layers}
    with load_report_quiet():  # its load report lists the layers left out and the new head: expected
        return AutoModelForTokenClassification.from_pretrained(
            str(path), num_labels=len(tags), id2label=dict(enumerate(tags)), label2id={t: i for i, t in enumerate(tags)},
            **cut)


def _held_out_loss(model, examples: list[dict], collator, batch_size: int, device) -> float:
    """Mean token loss over the held-out windows (every process the whole set: the same figure everywhere)."""
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for first in range(0, len(examples), batch_size):
            batch = {key: value.to(device) for key, value in collator(examples[first:first + batch_size]).items()}
            counted = int((batch["labels"] != -100).sum())
            total += float(model(**batch).loss) * counted
            tokens += counted
    return total / max(tokens, 1)


def choose_threshold(tagger: Tagger, texts: list[str], spans: list[list], target_recall: float) -> tuple[float, dict]:
    """The highest threshold on a word's score at which the annotated words of `texts` are found at `target_recall`,
    kept within THRESHOLD_BOUNDS; and the recall and precision of words there and at 0.5."""
    scores, gold = [], []
    for first in range(0, len(texts), 64):
        for words, doc_spans in zip(tagger.word_scores(texts[first:first + 64]), spans[first:first + 64]):
            scores.append(words.scores)
            gold.append(gold_words(words.starts, words.ends, doc_spans))
    scores, gold = np.concatenate(scores), np.concatenate(gold)
    annotated = np.sort(scores[gold])[::-1]
    needed = math.ceil(target_recall * len(annotated))
    reached = annotated[needed - 1] if len(annotated) and needed else THRESHOLD_BOUNDS[1]
    threshold = float(min(max(reached, THRESHOLD_BOUNDS[0]), THRESHOLD_BOUNDS[1]))

    def at(level: float) -> tuple[float, float]:
        found = scores >= level
        return float(found[gold].mean()) if gold.any() else 1.0, float(gold[found].mean()) if found.any() else 1.0

    (recall, precision), (recall_half, precision_half) = at(threshold), at(0.5)
    return threshold, {"recall": recall, "precision": precision, "recall_at_half": recall_half,
                       "precision_at_half": precision_half, "annotated_words": int(gold.sum()), "words": len(gold)}


def _spans_by_type(spans: dict, doc_ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for doc_id in doc_ids:
        for span in spans.get(doc_id, ()):
            counts[span.label] = counts.get(span.label, 0) + 1
    return dict(sorted(counts.items()))


def _save(out: Path, model, tokenizer, detector: DetectorSettings) -> None:
    """The directory, written beside `out` and swapped in whole (`install`)."""
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    with sensitive_scratch(out.absolute().parent, f"{out.name}.staging") as staging:  # half a detector: deleted
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        detector.save(staging)
        write_card(staging, detector)
        mark(staging)
        install(staging, out)
