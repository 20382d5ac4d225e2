"""What the audit says of a model's public warm start (ppmlm/training/warm_start.py): the sources it trained on and
their document counts, from the warm_start.json beside the checkpoint, signed with the figures; never a text."""
from __future__ import annotations

from ppmlm.rundir import checkpoint_warm_start

RECORDED = ("kind", "sources", "skipped", "documents", "held_out_documents", "chunks", "text_digest", "trained", "steps",
            "held_out_masked_token_accuracy")


def warm_start_seen(checkpoint) -> dict | None:
    """The checkpoint's warm-start record as the audit signs it (None: the run started from no public warm start)."""
    record = checkpoint_warm_start(checkpoint)
    return None if record is None else {key: record.get(key) for key in RECORDED}


def warm_start_summary(seen: dict | None) -> str:
    """One line for the report and the model card."""
    if not seen:
        return "none: the model's MLM head starts as the base checkpoint has it"
    sources = "; ".join(f"{s['source']}: {s['documents']} documents"
                        + (f" (users drawn with the reserved seed {s['seed']})" if "seed" in s else "")
                        + (f", its {s['identifier_spans_never_targets']} identifier spans seen but never a masked target"
                           if s.get("identifier_spans_never_targets") else "")
                        + (f", {s['left_out_as_in_run_corpus']} left out as documents of the training corpus"
                           if s.get("left_out_as_in_run_corpus") else "") for s in seen.get("sources") or [])
    accuracy = seen.get("held_out_masked_token_accuracy") or {}
    learned = (f"; masked-token accuracy on {seen.get('held_out_documents')} held-out public documents "
               f"{accuracy['before']:.3f} before, {accuracy['after']:.3f} after" if accuracy.get("after") is not None else "")
    return (f"{seen.get('trained', 'the MLM head')} trained without DP on public text only, never on the training corpus "
            f"({sources}; {seen.get('steps')} steps{learned}; sha256 of the texts {str(seen.get('text_digest'))[:16]}…)")
