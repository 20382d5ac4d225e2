"""The recipe layer: composes a run's configuration and wires the stages that make it.

`train(cfg)` is the training loop (ppmlm.training) with the per-epoch audit (ppmlm.audit) hung on it as a
callback, the population reference trained first; `train_from_overrides` adds Hydra composition and the
`task:` switch to the downstream classifier. Only this module knows that training and the audit meet:
training imports nothing from the audit, the audit nothing from training.

Hydra composition is shared by `python train.py`, `accelerate launch train.py` and `ppmlm train`.

The recipes come from one folder: the packaged recipes (`recipes/` of the repository, installed as
`ppmlm.recipes`), or the user's own folder given with `--config-dir`, which holds its own config.yaml and the
recipe/*.yaml it uses. A `recipes/` folder in the working directory is never read implicitly: reading it
would make a run depend on where it was started; a note says how to use it.

Composition errors (an unknown recipe, an unknown key, a malformed override) are one-line PPMLMErrors.
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from ppmlm.audit import TrainingAudits, resolve_reference
from ppmlm.config import RunConfig
from ppmlm.downstream.classify import train_classifier
from ppmlm.errors import PPMLMError
from ppmlm.resources import recipes_folder
from ppmlm.training import loop
from ppmlm.training.distributed import nested_run

# `${dp_suffix:${train.dp.enabled}}` in recipes/config.yaml: a DP run of a variant gets its own directory.
OmegaConf.register_new_resolver("dp_suffix", lambda enabled: "-dp" if enabled else "", replace=True)

OVERRIDE_FORMS = "key=value to change a key, +key=value to add one, ~key to delete one"


def config_folder(config_dir: str | Path | None = None) -> Path:
    """The user's recipe folder when given (it must hold config.yaml), else the packaged recipes."""
    if config_dir is None:
        note_unread_local_recipes()
        return recipes_folder()
    folder = Path(config_dir).expanduser().resolve()
    if not (folder / "config.yaml").is_file():
        raise PPMLMError(f"--config-dir {config_dir}: {folder} has no config.yaml (a recipe folder holds config.yaml "
                         f"and recipe/*.yaml; start from a copy of the packaged one, {recipes_folder()})")
    return folder


def note_unread_local_recipes() -> None:
    """Say so when ./recipes is not the packaged folder: a run started there once read it implicitly."""
    local = Path("recipes")
    if (local / "config.yaml").is_file() and local.resolve() != recipes_folder().resolve():
        print(f"note: training with the packaged recipes ({recipes_folder()}); ./recipes is read only with "
              "--config-dir recipes", file=sys.stderr)


def compose_config(overrides: list[str], config_dir: str | Path | None = None) -> DictConfig:
    """config.yaml of the recipe folder with the overrides applied, every interpolation checked."""
    folder = config_folder(config_dir)
    parsed = parse_overrides(overrides)
    try:
        with initialize_config_dir(config_dir=str(folder), version_base="1.3"):
            cfg = compose(config_name="config", overrides=list(overrides))
    except MissingConfigException as error:
        raise PPMLMError(missing_config_message(error, folder)) from None
    except (HydraException, ValueError) as error:  # Hydra raises ValueError for a group set to null
        raise PPMLMError(composition_message(error, parsed, folder)) from None
    try:
        OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as error:
        raise PPMLMError(f"{error.full_key}: {str(error).splitlines()[0]}") from None
    return cfg


def parse_overrides(overrides: list[str]) -> list[Override]:
    """Each override parsed alone, so that a malformed one is named; sweeps refused (a run trains once)."""
    parser = OverridesParser.create()
    parsed = []
    for text in overrides:
        try:
            override = parser.parse_override(text)
        except HydraException as error:  # OverrideParseException, or the grammar's own syntax error
            raise PPMLMError(f"malformed override {text!r}: {parse_failure(error)}; write {OVERRIDE_FORMS} "
                             "(quote a value holding spaces, commas or brackets)") from None
        if override.is_sweep_override():
            raise PPMLMError(f"{text}: several values are a sweep, and a run trains once; write key=[a,b] for a "
                             "list or key='a,b' for a string")
        parsed.append(override)
    return parsed


def parse_failure(error: HydraException) -> str:
    """The parser's reason, without Hydra's header, its link and the grammar's list of expected tokens."""
    lines = [line for line in str(error).splitlines() if not line.startswith(("Error parsing override", "See "))]
    return (lines[0] if lines else "not an override").split(" expecting {")[0]


def missing_config_message(error: MissingConfigException, folder: Path) -> str:
    group, _, name = (error.missing_cfg_file or "").rpartition("/")
    if not group:
        return one_line(error)
    allowed = sorted(path.stem for path in (folder / group).glob("*.yaml"))
    if not allowed:
        return f"{group}={name}: no such {group}; {folder / group} holds no {group} files (NAME.yaml)"
    return f"{group}={name}: no such {group}; choose one of {', '.join(allowed)} (the files in {folder / group})"


def composition_message(error: Exception, parsed: list[Override], folder: Path) -> str:
    cause = error.__cause__
    if not isinstance(cause, (ConfigAttributeError, ConfigKeyError)) or not cause.full_key:
        return one_line(error)
    override = next((o for o in parsed if o.key_or_group == cause.full_key
                     or o.key_or_group.startswith(cause.full_key + ".")), None)
    given = override.input_line if override else cause.full_key
    siblings = list(cause.parent_node.keys()) if isinstance(cause.parent_node, DictConfig) else []
    close = difflib.get_close_matches(str(cause.key), siblings, n=1)
    parent = cause.full_key.rpartition(".")[0]
    suggestion = f"did you mean {parent + '.' if parent else ''}{close[0]}? " if close else ""
    return (f"{given}: {cause.full_key} is not a key of {folder / 'config.yaml'} or its recipe; {suggestion}"
            f"to add a new key write +{given.lstrip('+')}")


def one_line(error: Exception) -> str:
    """Hydra's message on one line, without the config search path it appends."""
    message = str(error).split("Config search path:")[0]
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


def train_from_overrides(overrides: list[str], config_dir: str | Path | None = None):
    """Masked-LM fine-tuning with a recipe, or the downstream classifier when the config says task: classify."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # read when the data loader forks, not at import
    cfg = RunConfig.from_config(compose_config(overrides, config_dir))
    if cfg.task == "classify":
        return train_classifier(cfg)
    return train(cfg)


def train(cfg: RunConfig | DictConfig) -> Path:
    """A masked-LM run of a configuration (composed, or typed already), audited after every epoch when
    `audit.enabled` (and it trains the members: a reference model's own run is not audited); returns the run
    directory. Every setting is checked before anything is read, built or written."""
    cfg = cfg if isinstance(cfg, RunConfig) else RunConfig.from_config(cfg)
    audit = AuditAfterEachEpoch(cfg) if cfg.audit.enabled and cfg.data.train_users == "members" else None
    run = loop.train(cfg, callbacks=[audit] if audit else [])
    if audit is not None:
        audit.say_verdict()
    return run


def train_reference(reference_cfg) -> Path:
    """Trains a reference model (its configuration from ppmlm.audit.reference) inside whatever run asked for
    it, which keeps its process group."""
    with nested_run():
        return loop.train(RunConfig.from_config(reference_cfg))


class AuditAfterEachEpoch:
    """The per-epoch audit as a training callback. Before the first step every process makes sure the
    population reference exists (training it if needed, together), and the main process audits any epoch
    saved without its audit (a run killed while auditing); after each epoch the main process audits the
    saved checkpoint."""

    def __init__(self, cfg: RunConfig):
        self.cfg = cfg
        self.audits: TrainingAudits | None = None
        self.main = False  # whether this process audits, and says the verdict at the end

    def on_train_begin(self, run, data, accelerator) -> None:
        reference = resolve_reference(self.cfg.audit.reference, OmegaConf.create(self.cfg.resolved), train_reference)
        self.audits = TrainingAudits(self.cfg.audit.settings, data, run.audit, reference, self.cfg.share.policy,
                                     final_epoch=self.cfg.train.epochs)
        self.main = accelerator.is_main_process
        if accelerator.is_main_process:
            for epoch in run.unaudited_epochs():
                accelerator.print(f"auditing epoch {epoch}, which has a checkpoint but no audit")
                self.audit(data, run, run.checkpoint(epoch), epoch)
        accelerator.wait_for_everyone()

    def on_epoch_end(self, run, data, epoch: int, checkpoint: Path, accelerator) -> None:
        if accelerator.is_main_process:
            self.audit(data, run, checkpoint, epoch)

    def audit(self, data, run, checkpoint: Path, epoch: int) -> dict:
        return self.audits.audit(checkpoint, epoch)

    def say_verdict(self) -> None:
        """The run's last lines, on the main process: the sharing policy's verdict on the latest audited epoch, why,
        and what would resolve it (report.html opens with the same verdict)."""
        if self.main and self.audits is not None:
            print("\n".join(self.audits.verdict()), flush=True)
