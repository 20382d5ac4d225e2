"""The detector's own card (README.md in its directory): what it was trained on, in counts; its labels, threshold
and held-out figures; and that it is sensitive. Never a name, a text or a user id."""
from __future__ import annotations

from pathlib import Path

from ppmlm.identifiers.ner import DetectorSettings

CARD = "README.md"


def target_missed(facts: dict) -> str | None:
    """What to say when even the lowest threshold left the held-out recall below the target: such a detector misses
    more than it was asked to, and its user must know before relying on it."""
    recall, target = facts["held_out"]["recall"], facts["target_recall"]
    if recall >= target:
        return None
    return (f"The target recall was not reached: at the lowest threshold, {facts['threshold_bounds'][0]}, the held-out "
            f"users' annotated words were found at a recall of {recall:.4f}, below {target}. Train on more annotated "
            "users or for more epochs, and read `ppmlm detector evaluate` before using this detector.")


def write_card(directory: Path, settings: DetectorSettings) -> None:
    facts = settings.training
    held_out = facts["held_out"]
    labels = "\n".join(f"| {name} | {settings.categories[name]} | {facts['spans_by_type'].get(name, 0):,} |"
                       for name in settings.types)
    epochs = "\n".join(f"| {row['epoch']} | {row['train_loss']:.4f} | {row['held_out_loss']:.4f} |"
                       for row in facts["epochs"])
    missed = target_missed(facts)
    shortfall = "" if missed is None else f"\n**{missed}**\n"
    text = f"""# ppmlm detector (sensitive)

**Do not share this directory beyond those who may read the annotated notes.** A token classifier fine-tuned on
annotated notes can reproduce names and other identifiers it saw in training. `ppmlm push` refuses it. Use it
with `ppmlm blacklist --ner default+detector:DIR` (or `blacklist.ner=default+detector:DIR` in a recipe): the
rules and this detector together, the union of their spans.

## Trained on

| | training users | held-out users |
|---|---|---|
| users | {facts['users']['training']:,} | {facts['users']['held_out']:,} |
| documents | {facts['documents']['training']:,} | {facts['documents']['held_out']:,} |
| windows of {settings.max_length} tokens | {facts['windows']['training']:,} | {facts['windows']['held_out']:,} |

Held-out users (whole users, chosen by a seeded hash of their ids) were never trained on: they decided when
training stopped and the threshold.

## Labels

BIO tags over the annotation labels of column `{facts['spans_from']}`; each label's spans get a PHI category.

| annotation label | PHI category | annotated spans (training users) |
|---|---|---|
{labels}

## Decision

A word is an identifier when P(not O) of one of its tokens reaches **{settings.threshold:.4f}**: the highest
threshold (at most 0.5, at least {facts['threshold_bounds'][0]}) at which the held-out users' annotated words
are found at a word recall of at least {facts['target_recall']}.

| held-out words | at the threshold | at 0.5 |
|---|---|---|
| recall (annotated words found) | {held_out['recall']:.4f} | {held_out['recall_at_half']:.4f} |
| precision (found words annotated) | {held_out['precision']:.4f} | {held_out['precision_at_half']:.4f} |

Counted over {held_out['annotated_words']:,} annotated words of {held_out['words']:,} (the encoder's tokenizer's
words). The figure a hospital trusts comes from `ppmlm detector evaluate --folds K` (K folds of users).
{shortfall}
## Training

Encoder: {facts['encoder']}, {facts['layers']} layer(s); {facts['epochs_run']} epoch(s) run of {facts['epochs_asked']}
(stopped after {facts['patience']} without a lower held-out loss), weights of epoch {facts['best_epoch']}; batches
of {facts['batch_size']} windows, AdamW at {facts['lr']:g} (head {facts['head_lr']:g}), {facts['processes']}
process(es) on {facts['device']}, {facts['seconds']:.0f} s.

| epoch | training loss | held-out loss |
|---|---|---|
{epochs}
"""
    (directory / CARD).write_text(text, encoding="utf-8")
