"""Speed of PrivacyMaskingCollator against Hugging Face's whole-word masking collator.

The collator runs once per training step on the main process, so it must not be slower than the stock
one it replaces. Both get the same chunks (synthetic clinical notes, 128-512 BERT tokens, batch 8) and
collate the same batches; the score is batches per second, median over repetitions.

Hugging Face's collator cannot pad `offset_mapping` (which its whole-word masking needs), so its batches
are padded here beforehand, outside the timing, and get a precomputed `special_tokens_mask`: the
comparison is tilted in its favour. It also skips random replacement (whole-word masking forces 100%
mask tokens in transformers 5). Ours pads and does the full 80/10/10 inside the timing.

    python bench/collator.py [--chunks 2000] [--batch-size 8] [--repeats 5]
"""
from __future__ import annotations

import argparse
import bisect
import os
import random
import statistics
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import AutoTokenizer, DataCollatorForLanguageModeling, logging  # noqa: E402

from ppmlm.corpus.clinical import generate_corpus  # noqa: E402
from ppmlm.masking.collator import PrivacyMaskingCollator  # noqa: E402
from ppmlm.models import default_model_path  # noqa: E402
from ppmlm.words import WordSegmenter  # noqa: E402


def make_chunks(tokenizer, n_chunks: int, seed: int = 0) -> list[dict]:
    """Chunks of one patient's notes, 128-512 tokens, with both collators' input columns.

    Words come from the project's segmenter and protection from the notes' gold identifier spans, so the
    share of protected tokens is the corpus's real one.
    """
    rng = random.Random(seed)
    segmenter = WordSegmenter()
    special = set(tokenizer.all_special_ids)
    chunks: list[dict] = []
    n_users = 64
    while len(chunks) < n_chunks:
        records = generate_corpus(n_users, seed=seed)
        by_user: dict[str, list[dict]] = {}
        for record in records:
            by_user.setdefault(record["user_id"], []).append(record)
        for notes in by_user.values():
            text, spans = "", []
            for note in notes:
                offset = len(text)
                text += note["text"] + "\n\n"
                spans += [(offset + s["start"], offset + s["end"]) for s in note.get("phi", [])]
            chunks += _chunk(tokenizer, segmenter, special, text, spans, rng)
        n_users *= 2
    return chunks[:n_chunks]


def _chunk(tokenizer, segmenter, special, text, spans, rng) -> list[dict]:
    words = segmenter(text)
    protected_word = [False] * len(words)
    for start, end in spans:
        w = bisect.bisect_right(words.ends, start)
        while w < len(words) and words.starts[w] < end:
            protected_word[w] = True
            w += 1
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    token_word = []
    for start, end in offsets:
        w = bisect.bisect_right(words.starts, start) - 1
        token_word.append(w if w >= 0 and start < words.ends[w] and end > start else -1)
    out, pos = [], 0
    while pos < len(ids):
        size = rng.randint(126, 510)
        stop = min(pos + size, len(ids))
        while stop < len(ids) and stop > pos + 1 and token_word[stop] == token_word[stop - 1] >= 0:
            stop -= 1  # end on a word boundary
        if stop - pos < 126:
            break
        wids = [-1] + token_word[pos:stop] + [-1]
        dense = {w: i for i, w in enumerate(sorted({w for w in wids if w >= 0}))}
        chunk_ids = [tokenizer.cls_token_id] + ids[pos:stop] + [tokenizer.sep_token_id]
        out.append({
            "input_ids": chunk_ids,
            "attention_mask": [1] * len(chunk_ids),
            "word_ids": [dense[w] if w >= 0 else -1 for w in wids],
            "protected": [False] + [w >= 0 and protected_word[w] for w in token_word[pos:stop]] + [False],
            "offset_mapping": [(0, 0)] + [tuple(o) for o in offsets[pos:stop]] + [(0, 0)],
            "special_tokens_mask": [int(i in special) for i in chunk_ids],
            "doc_id": "bench",
        })
        pos = stop
    return out


def hf_batch(batch: list[dict], pad_id: int) -> list[dict]:
    """Pads a batch for Hugging Face's collator, whose tokenizer.pad cannot pad offset_mapping."""
    width = max(len(f["input_ids"]) for f in batch)
    out = []
    for f in batch:
        pad = width - len(f["input_ids"])
        out.append({
            "input_ids": f["input_ids"] + [pad_id] * pad,
            "attention_mask": f["attention_mask"] + [0] * pad,
            "offset_mapping": f["offset_mapping"] + [(0, 0)] * pad,
            "special_tokens_mask": f["special_tokens_mask"] + [1] * pad,
        })
    return out


def batches_per_second(collator, batches: list) -> float:
    start = time.perf_counter()
    for batch in batches:
        collator(batch)
    return len(batches) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (a data loader worker has one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()  # notes are tokenized whole, then chunked: the length warning is moot

    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    chunks = make_chunks(tokenizer, args.chunks)
    ours_batches = [chunks[i : i + args.batch_size] for i in range(0, len(chunks), args.batch_size)]
    theirs_batches = [hf_batch(b, tokenizer.pad_token_id) for b in ours_batches]

    ours = PrivacyMaskingCollator(tokenizer, generator=torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "random replacement not supported with whole word masking"
        theirs = DataCollatorForLanguageModeling(tokenizer, whole_word_mask=True, mlm_probability=0.15,
                                                 seed=0)

    lengths = [len(c["input_ids"]) for c in chunks]
    protected = sum(sum(c["protected"]) for c in chunks) / sum(lengths)
    print(f"{len(chunks)} chunks, {min(lengths)}-{max(lengths)} tokens "
          f"(mean {statistics.mean(lengths):.0f}), "
          f"{protected:.1%} protected tokens, {len(ours_batches)} batches of {args.batch_size}, "
          f"{args.threads} torch thread(s)")
    ours(ours_batches[0])  # warm-up
    theirs(theirs_batches[0])
    rates: dict[str, list[float]] = {"ppmlm PrivacyMaskingCollator": [], "HF whole_word_mask": []}
    for _ in range(args.repeats):
        rates["ppmlm PrivacyMaskingCollator"].append(batches_per_second(ours, ours_batches))
        rates["HF whole_word_mask"].append(batches_per_second(theirs, theirs_batches))

    print(f"{'collator':<30} {'median batches/s':>17} {'min':>9} {'max':>9} {'ms/batch':>9}")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:<30} {median:>17.1f} {min(values):>9.1f} {max(values):>9.1f} {1000 / median:>9.2f}")
    medians = [statistics.median(values) for values in rates.values()]
    ratio = medians[0] / medians[1]
    print(f"collator_speed_ratio: {ratio:.2f}")


if __name__ == "__main__":
    main()
