"""The privacy audit: utility, privacy score, identifier-count, loss, likelihood-ratio, reference-calibrated
(RMIA) and neighbourhood membership attacks, after every training epoch and on any checkpoint (`ppmlm audit`).
See docs/audit.md."""
from ppmlm.audit.checkpoint import TrainingAudits, audit_checkpoint
from ppmlm.audit.config import AuditConfig
from ppmlm.audit.reference import reference_checkpoint, resolve_reference
from ppmlm.audit.report import write_report
from ppmlm.audit.runner import AuditInputs, prepare_audit, run_audit

__all__ = ["AuditConfig", "AuditInputs", "TrainingAudits", "audit_checkpoint", "prepare_audit", "reference_checkpoint",
           "resolve_reference", "run_audit", "write_report"]
