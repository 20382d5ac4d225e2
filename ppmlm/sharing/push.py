"""`ppmlm push`: share an audited checkpoint with its model card, only when its audit meets the policy.

The export is the checkpoint's allow-listed model and tokenizer files plus README.md, staged in a fresh
folder: nothing else of the run (blacklist, spans, scores files, corpus, report, metrics, split, optimizer
or RNG state, salt) can be uploaded, whatever the run directory holds.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import ModelCard

from ppmlm.audit.policy import Check, SharingPolicy
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.ner.detector_dir import enclosing_detector
from ppmlm.rundir import RunDirectory
from ppmlm.sharing.card import build_model_card, verdict
from ppmlm.sharing.checkpoint import RunCheckpoint, load_run_checkpoint

CARD = "README.md"


class PolicyError(PPMLMError):
    """The audit of the checkpoint breaks the sharing policy (and --force was not given)."""


class UnverifiedAuditError(PPMLMError):
    """The audit does not speak for the checkpoint: edited, stale, or measured on other files (and no --force)."""


@dataclass
class SharePlan:
    """What a push exports, and the verdict of the policy on it."""

    shared: RunCheckpoint
    repo_id: str
    checks: list[Check]
    forced: bool
    card: ModelCard
    destination: str | None = None  # the local folder or repository URL written; None for a dry run

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def verdict(self) -> str:
        return verdict(self.checks, self.forced, self.shared.unverified)

    @property
    def refusal(self) -> str:
        """One line naming every failing figure and its threshold."""
        return (f"{self.shared.run_dir} epoch {self.shared.epoch}: the audit breaks the sharing policy: "
                + "; ".join(c.describe() for c in self.failures)
                + " (thresholds: share: in the run's config.yaml, --min-privacy-score, --max-tpr; --force shares anyway "
                  "and says so in the card)")

    def files(self) -> list[tuple[str, int]]:
        """(name, bytes) of every file the export holds, the card included."""
        return [(p.name, p.stat().st_size) for p in self.shared.files()] + [(CARD, len(str(self.card).encode()))]

    def write(self, folder: Path) -> None:
        """The export into an existing empty folder."""
        for path in self.shared.files():
            shutil.copyfile(path, folder / path.name)
        self.card.save(folder / CARD)


def write_local(plan: SharePlan, local_dir: Path) -> None:
    """The export into `local_dir` (absent or empty), complete or not at all."""
    if local_dir.is_symlink():
        raise PPMLMError(f"--local-dir {local_dir}: is a symbolic link; give the folder it points to, or a new path")
    if local_dir.exists() and (not local_dir.is_dir() or any(local_dir.iterdir())):
        raise PPMLMError(f"--local-dir {local_dir}: exists and is not an empty folder")
    local_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{local_dir.name}.", dir=local_dir.parent))
    try:
        staging.chmod(0o755)  # mkdtemp's folder is private to its owner; the export is meant to be shared
        plan.write(staging)
        os.replace(staging, local_dir)  # replaces an empty folder atomically
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def upload(plan: SharePlan, private: bool) -> str:
    """Creates the repository if needed and uploads the export from a staging folder; returns its URL."""
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        raise PPMLMError("HF_HUB_OFFLINE is set: unset it to upload, or export with --local-dir DIR")
    api = HfApi()
    with tempfile.TemporaryDirectory(prefix="ppmlm-push-") as staging:
        plan.write(Path(staging))
        try:
            url = api.create_repo(plan.repo_id, private=private, exist_ok=True)
            api.upload_folder(repo_id=plan.repo_id, folder_path=staging,
                              commit_message=f"ppmlm push: {plan.shared.config['masking']['variant']} epoch "
                                             f"{plan.shared.epoch} (audit: {plan.verdict})")
        except OSError as error:  # huggingface_hub's HTTP and offline errors
            raise PPMLMError(f"upload to {plan.repo_id} failed: {error}") from error
    return str(url)


def refuse_detector(path) -> None:
    """A trained detector is never exported, --force or not: one given to push, or a checkpoint inside one."""
    detector = enclosing_detector(path)
    if detector is not None:
        where = "is" if detector == Path(path).resolve() else f"lies inside {detector}, which is"
        raise PPMLMError(f"{path}: {where} a trained detector (ppmlm detector train); it may have memorized names of the "
                         "notes it was trained on and is never pushed: keep it where those notes may be read")


def push_run(run_dir, repo_id: str, epoch: int | None = None, local_dir=None, private: bool = False, dry_run: bool = False,
             force: bool = False, policy: SharingPolicy | None = None) -> SharePlan:
    """Shares checkpoint `epoch` (default: the last complete one) of a training run: to `local_dir` when
    given (no network), else to the Hub repository `repo_id`; `dry_run` writes nothing anywhere.

    Raises PPMLMError when the epoch has no audit or the folder is a trained detector (`refuse_detector`, even with
    `force`); UnverifiedAuditError when the audit does not speak for these weights (edited, stale, or measured
    against another blacklist or split: `RunCheckpoint.unverified`) and PolicyError when its audit breaks `policy`
    (default: the run's `share:` settings), both unless `force`, which exports and says so in the card. A dry run
    returns the plan with its policy failures.
    """
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise PPMLMError(f"--repo-id {repo_id!r}: {error}") from None
    refuse_detector(run_dir)
    shared = load_run_checkpoint(run_dir, epoch)
    refuse_detector(shared.path)
    if shared.unverified and not force:
        raise UnverifiedAuditError(
            f"{shared.run_dir} epoch {shared.epoch}: its audit does not speak for the weights being shared: "
            + "; ".join(shared.unverified)
            + f" (an audit edited or stale since: audit this checkpoint again, ppmlm audit --model {shared.path} --out "
              f"{RunDirectory(shared.run_dir).audit}; --force exports it marked unverified)")
    checks = (policy or SharingPolicy.for_run(shared.run_dir)).check(shared.figures)
    forced = force and (bool(shared.unverified) or any(not c.passed for c in checks))
    plan = SharePlan(shared, repo_id, checks, forced, build_model_card(shared, checks, repo_id, forced))
    plan.files()  # a checkpoint without weights or tokenizer fails here, before anything is written
    if plan.failures and not force and not dry_run:
        raise PolicyError(plan.refusal)
    if dry_run:
        return plan
    if local_dir is not None:
        write_local(plan, Path(local_dir))
        plan.destination = str(local_dir)
    else:
        plan.destination = upload(plan, private)
    return plan
