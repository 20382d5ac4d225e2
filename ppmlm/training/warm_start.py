"""The public warm start: the MLM head of the starting encoder (and its top layers) trained without DP on public
text only, before the run trains on its private corpus, and cached by content.

Why: the offline encoder comes without an MLM head, and a head learned from scratch under DP-SGD's noise stays at
chance (issue 27: every DP run predicted nothing). Training it on public text costs no privacy, so the private
training, DP or not, starts from a model that already predicts words (Anil et al. 2022 warm-start DP BERT the same
way; Li et al. 2022 fine-tune pretrained heads).

What public means here: the medical abstracts of `model.public.abstracts` when the file is there, and synthetic
users of the corpus generators drawn with `PUBLIC_SYNTH_SEED`, which no run's embedded corpus and no `ppmlm synth`
can draw. A public document that is also a document of the run's corpus (any user: member, audit non-member or
population) is left out, so that the warm start never saw the people the run trains on and audits; the audit would
otherwise measure the warm start's memory, not the run's. The synthetic users' identifiers (their generator's gold
spans: names, places, dates, record numbers) stay visible as context but are never a masked target, as ppmlm keeps a
run's own: the generators draw them from the same lists for their public and their private users, so a warm start
asked to predict them would predict the run's patients' names and places before any private step, and the audit
would count them as leaked (issue 27: privacy 0.95 on `ppmlm synth` from the warm start alone).

The entry is keyed by the starting weights, the public texts and the settings: runs that share them share one warm
start, and another source or another setting trains another. Its `warm_start.json` says what it saw (sources,
document counts, a digest of the texts, never a text); every checkpoint of a run started from it carries a copy,
which the audit signs and the model card shows.
"""
from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForMaskedLM, get_linear_schedule_with_warmup

from ppmlm.corpus.domains import generate_synthetic
from ppmlm.errors import PPMLMError
from ppmlm.features import FEATURE_COLUMNS, build_features
from ppmlm.files import COMPLETE
from ppmlm.identifiers.blacklist import Blacklist
from ppmlm.identifiers.ner import Span
from ppmlm.masking.collator import IGNORE_INDEX, PrivacyMaskingCollator
from ppmlm.models import PUBLIC_SYNTH_SEED, lm_head
from ppmlm.rundir import WARM_START_RECORD as RECORD  # beside the weights, here and in the run's checkpoints
from ppmlm.rundir import checkpoint_warm_start
from ppmlm.training.objective import MaskedLMLoss

ABSTRACT_COLUMN = "medical_abstract"
SEED = 0  # the warm start's own masking, order and dropout: one artifact for every run seed
HELD_OUT_EVERY = 50  # one public document in 50 (by a hash of its text) is held out to measure the warm start


@dataclass
class PublicText:
    """The public documents of a warm start, after leaving out those of the run's corpus."""

    train: list[str] = field(default_factory=list)
    held_out: list[str] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)  # per source: what it is and how many documents it gave
    skipped: list[str] = field(default_factory=list)  # sources not found, said
    # the identifier spans of each document of `train` and `held_out`, in the same order: never a masked target
    train_spans: list[list[Span]] = field(default_factory=list)
    held_out_spans: list[list[Span]] = field(default_factory=list)

    def add(self, text: str, spans: list[Span]) -> None:
        texts, span_lists = (self.held_out, self.held_out_spans) if held_out(text) else (self.train, self.train_spans)
        texts.append(text)
        span_lists.append(spans)

    def digest(self) -> str:
        sha = hashlib.sha256()
        for part, texts, span_lists in (("train", self.train, self.train_spans),
                                        ("held_out", self.held_out, self.held_out_spans)):
            for text, spans in zip(texts, span_lists):
                sha.update(f"{part}\x00{len(text)}\x00".encode())
                sha.update(text.encode("utf-8", "surrogatepass"))
                sha.update("".join(f"\x00{s.start}-{s.end}" for s in spans).encode())
        return sha.hexdigest()

    def protected_spans(self) -> int:
        return sum(map(len, self.train_spans)) + sum(map(len, self.held_out_spans))


def normalized(text: str) -> str:
    """What makes two documents the same one here: their words, whatever the spacing."""
    return " ".join(text.split())


def public_text(public, run_texts) -> PublicText:
    """The texts `public` (the run's `model.public`) names, less every document of `run_texts` (the run's corpus)."""
    excluded = {normalized(text) for text in run_texts}
    found = PublicText()
    candidates: list[tuple[dict, list[tuple[str, list[Span]]]]] = []
    if public.abstracts is not None:
        path = Path(public.abstracts)
        if path.is_file():
            candidates.append(({"source": "medical abstracts", "file": path.name},
                               [(text, []) for text in read_abstracts(path)]))
        else:
            found.skipped.append(f"medical abstracts: {public.abstracts} not found (model.public.abstracts)")
    if public.synth_users:
        for domain in public.synth_domains:
            records = generate_synthetic(domain, public.synth_users, seed=PUBLIC_SYNTH_SEED)
            candidates.append(({"source": f"synthetic {domain}", "seed": PUBLIC_SYNTH_SEED, "users": public.synth_users},
                               [(record["text"], [Span(s["start"], s["end"], s["label"]) for s in record["phi"]])
                                for record in records]))
    for source, documents in candidates:
        kept = [(text, spans) for text, spans in documents if normalized(text) not in excluded]
        found.sources.append({**source, "documents": len(kept), "left_out_as_in_run_corpus": len(documents) - len(kept),
                              **({"identifier_spans_never_targets": sum(len(spans) for _, spans in kept)}
                                 if any(spans for _, spans in kept) else {})})
        for text, spans in kept:
            found.add(text, spans)
    return found


def held_out(text: str) -> bool:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).digest()) % HELD_OUT_EVERY == 0


def read_abstracts(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if ABSTRACT_COLUMN not in (reader.fieldnames or []):
            raise PPMLMError(f"model.public.abstracts={path}: no column {ABSTRACT_COLUMN!r} (columns: "
                             f"{', '.join(reader.fieldnames or [])}); expected the Medical Abstracts CSV")
        return [row[ABSTRACT_COLUMN] for row in reader if (row[ABSTRACT_COLUMN] or "").strip()]


def wanted(model_cfg, dp_enabled: bool, model) -> bool:
    """`model.warm_start`: public always, none never, auto under DP-SGD when the checkpoint lacks parameters of its
    MLM head (the offline encoder: a head trained under noise from scratch stays at chance)."""
    if model_cfg.warm_start == "auto":
        return dp_enabled and bool(getattr(model, "ppmlm_fresh_parameters", None))
    return model_cfg.warm_start == "public"


def inherited_record(model_cfg) -> dict | None:
    """What a starting checkpoint's own warm start saw (a run's checkpoint, or a warm start given as the model)."""
    if model_cfg.config is not None or model_cfg.name_or_path is None:
        return None
    return checkpoint_warm_start(model_cfg.name_or_path)


def public_warm_start(cfg, model, tokenizer, run_corpus, accelerator):
    """(model, record): the run's starting `model` warm-started on public text when `model.warm_start` asks for it
    (loaded from the cache, trained there first if needed, by the main process), else as given; `record` is what
    the warm start saw (None: no warm start)."""
    if not wanted(cfg.model, cfg.train.dp.enabled, model):
        return model, inherited_record(cfg.model)
    public = cfg.model.public
    text = public_text(public, run_corpus["text"])
    for note in text.skipped:
        accelerator.print(f"warm start: {note}: skipped")
    if not text.train:
        raise PPMLMError(f"model.warm_start={cfg.model.warm_start}: no public text to train on ("
                         + "; ".join(text.skipped + [f"{s['source']}: {s['documents']} documents" for s in text.sources])
                         + "); set model.public.abstracts or model.public.synth_users, or model.warm_start=none")
    settings = {key: getattr(public, key) for key in ("layers", "epochs", "batch_size", "lr", "head_lr")}
    settings.update(max_length=cfg.train.max_length, mlm_probability=cfg.masking.mlm_probability)
    redraw_fresh_matrices(model)
    key = hashlib.blake2b(json.dumps({"encoder": weights_digest(model), "vocabulary": len(tokenizer),
                                      "texts": text.digest(), "settings": settings}, sort_keys=True).encode(),
                          digest_size=12).hexdigest()
    entry = Path(public.cache_dir) / key
    with accelerator.main_process_first():
        if accelerator.is_main_process:
            with building(entry) as done:
                if done:
                    accelerator.print(f"warm start: reusing {entry}")
                else:
                    accelerator.print(f"warm start: training the MLM head and the top {public.layers} encoder layer(s) "
                                      f"on public text ({describe(text)}) into {entry}")
                    record = train_warm_start(model, tokenizer, text, settings, accelerator.device)
                    save(entry, model, tokenizer, dict(record, key=key, text_digest=text.digest()))
    warm = AutoModelForMaskedLM.from_pretrained(str(entry))
    warm.ppmlm_fresh_parameters = frozenset()
    record = checkpoint_warm_start(entry)
    accuracy = record["held_out_masked_token_accuracy"]
    accelerator.print(f"warm start: {describe(text)}" + (
        f"; masked-token accuracy on {record['held_out_documents']} held-out public documents {accuracy['before']:.3f} "
        f"before, {accuracy['after']:.3f} after" if record["held_out_documents"] else ""))
    return warm, record


def redraw_fresh_matrices(model) -> None:
    """The matrices the checkpoint lacked (the fresh MLM head's transform) drawn again from the warm start's own seed.
    At load they come from the run's seed, and the warm start, its cache key and its weights alike, must be one for
    every run seed; the fresh biases and norms start at constants already."""
    fresh = getattr(model, "ppmlm_fresh_parameters", frozenset())
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name in fresh and parameter.dim() >= 2:
                drawn = torch.randn(parameter.shape, generator=generator) * model.config.initializer_range
                parameter.copy_(drawn.to(parameter.device, parameter.dtype))


def describe(text: PublicText) -> str:
    return ", ".join(f"{s['source']} {s['documents']} documents"
                     + (f" ({s['left_out_as_in_run_corpus']} left out: in the run's corpus)"
                        if s["left_out_as_in_run_corpus"] else "") for s in text.sources)


def weights_digest(model) -> str:
    """The starting weights by content (a checkpoint's files or a model built from a config alike)."""
    config = {k: v for k, v in model.config.to_dict().items() if k not in ("_name_or_path", "transformers_version")}
    sha = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.state_dict().items()):
        sha.update(name.encode())
        sha.update(tensor.detach().cpu().reshape(-1).contiguous().view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()


@contextlib.contextmanager
def building(entry: Path):
    """Yields whether `entry` is complete already; otherwise the caller builds it while holding its lock, so that
    two runs needing the same warm start train it once (the second waits, then reuses it)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f".{entry.name}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"warm start: waiting for another process training {entry}", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield (entry / COMPLETE).is_file()


def trained_parameters(model, layers: int) -> list[tuple[str, torch.nn.Parameter, bool]]:
    """(name, parameter, is of the head) of what the warm start trains: the MLM head but the word embeddings it
    shares (tied to the input), and the top `layers` encoder layers."""
    head = lm_head(model)
    encoder = getattr(model.base_model, "encoder", None)
    blocks = getattr(encoder, "layer", None)
    if head is None or (layers and blocks is None):
        raise PPMLMError(f"model.warm_start: {type(model).__name__} has no MLM head named cls or lm_head"
                         + ("" if head is None else " or no encoder.layer list") + "; set model.warm_start=none")
    embeddings = model.get_input_embeddings().weight
    picked = [(f"head.{name}", p, True) for name, p in head.named_parameters() if p is not embeddings]
    for index in range(max(0, len(blocks) - layers) if layers else len(blocks or []), len(blocks or [])):
        picked += [(f"layer.{index}.{name}", p, False) for name, p in blocks[index].named_parameters()]
    return picked


def masked_token_accuracy(model, batches: list[dict], device) -> float:
    """Top-1 accuracy of the masked tokens of fixed masked `batches`."""
    head, right, total = lm_head(model), 0, 0
    model.eval()
    with torch.no_grad():
        for batch in batches:
            target = batch["labels"] != IGNORE_INDEX
            hidden = model.base_model(input_ids=batch["input_ids"].to(device),
                                      attention_mask=batch["attention_mask"].to(device))[0]
            predicted = head(hidden[target.to(device)]).argmax(-1).cpu()
            right += int((predicted == batch["labels"][target]).sum())
            total += int(target.sum())
    return right / max(total, 1)


def train_warm_start(model, tokenizer, text: PublicText, settings: dict, device) -> dict:
    """Trains `model` in place on `text` (15% whole-word masking; the synthetic documents' identifier spans are seen,
    never targets) and returns the record of what it saw and learned. Forks the global random state: the run's own
    streams are the same whether the warm start was trained now or read from the cache."""
    started = time.perf_counter()
    records = [{"text": t, "user_id": f"public-{i}", "doc_id": f"public-{i}"} for i, t in enumerate(text.train)]
    held = [{"text": t, "user_id": f"held-{i}", "doc_id": f"held-{i}"} for i, t in enumerate(text.held_out)]
    identifiers = Blacklist.from_terms([], spans={
        **{f"public-{i}": spans for i, spans in enumerate(text.train_spans) if spans},
        **{f"held-{i}": spans for i, spans in enumerate(text.held_out_spans) if spans}})
    columns = list(FEATURE_COLUMNS)
    chunks = build_features(records, identifiers, tokenizer, max_length=settings["max_length"]).select_columns(columns)
    held_chunks = build_features(held, identifiers, tokenizer, max_length=settings["max_length"]).select_columns(columns) \
        if held else None
    trained = trained_parameters(model, settings["layers"])
    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(SEED)
        collate = PrivacyMaskingCollator(tokenizer, mlm_probability=settings["mlm_probability"],
                                         generator=torch.Generator().manual_seed(SEED))
        held_batches = [collate(held_chunks.select(range(i, min(i + 32, len(held_chunks)))).to_list())
                        for i in range(0, len(held_chunks), 32)] if held_chunks else []
        model.to(device)
        before = masked_token_accuracy(model, held_batches, device) if held_batches else None
        requires = {name: p.requires_grad for name, p in model.named_parameters()}
        for p in model.parameters():
            p.requires_grad_(False)
        for _, p, _ in trained:
            p.requires_grad_(True)
        optimizer = torch.optim.AdamW([{"params": [p for _, p, head in trained if head], "lr": settings["head_lr"]},
                                       {"params": [p for _, p, head in trained if not head], "lr": settings["lr"]}],
                                      weight_decay=0.0)
        loader = DataLoader(chunks, batch_size=settings["batch_size"], shuffle=True, collate_fn=collate,
                            generator=torch.Generator().manual_seed(SEED))
        total = settings["epochs"] * len(loader)
        scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(0.06 * total), total)
        objective = MaskedLMLoss(model).train()
        bar = tqdm(total=total, desc="warm start")
        for _ in range(settings["epochs"]):
            for batch in loader:
                batch = {k: v.to(device) for k, v in batch.items()}
                loss = objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).mean()
                loss.backward()
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                bar.update()
                bar.set_postfix(loss=f"{loss.item():.3f}")
        bar.close()
        after = masked_token_accuracy(model, held_batches, device) if held_batches else None
        for name, p in model.named_parameters():
            p.requires_grad_(requires[name])
    layers = settings["layers"]
    return {
        "kind": "public", "sources": text.sources, "skipped": text.skipped,
        "documents": len(text.train), "held_out_documents": len(text.held_out), "chunks": len(chunks),
        "identifier_spans_never_targets": text.protected_spans(),
        "trained": "the MLM head" + (f" and the top {layers} encoder layers" if layers else ""),
        "parameters_trained": sum(p.numel() for _, p, _ in trained), "steps": total, "settings": settings,
        "held_out_masked_token_accuracy": {"before": before, "after": after},
        "seconds": round(time.perf_counter() - started, 1),
    }


def save(entry: Path, model, tokenizer, record: dict) -> None:
    """Saved beside `entry` and renamed into place whole: a killed build leaves no entry a later run would read."""
    staging = entry.with_name(f".{entry.name}.{os.getpid()}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / RECORD).write_text(json.dumps(record, indent=1))
    (staging / COMPLETE).write_text(json.dumps({"key": entry.name}))
    if entry.exists():  # an incomplete entry left by a build killed before the rename existed: ours, never complete
        shutil.rmtree(entry)
    os.replace(staging, entry)
