"""Sharing an audited checkpoint: the model card, the audit policy that gates it, and `ppmlm push`
(docs/sharing.md)."""
from ppmlm.audit.policy import Check, SharingPolicy
from ppmlm.sharing.card import build_model_card
from ppmlm.sharing.checkpoint import load_run_checkpoint
from ppmlm.sharing.push import PolicyError, SharePlan, UnverifiedAuditError, push_run

__all__ = ["Check", "PolicyError", "SharePlan", "SharingPolicy", "UnverifiedAuditError", "build_model_card",
           "load_run_checkpoint", "push_run"]
