"""A run's configuration, typed: one frozen dataclass per section, each owned by the stage that reads it.

    data       DataConfig        ppmlm/corpus/config.py
    blacklist  BlacklistConfig   ppmlm/identifiers/config.py
    model      ModelConfig       ppmlm/models.py
    masking    MaskingConfig     ppmlm/masking/config.py
    train      TrainConfig       ppmlm/training/config.py, with train.dp: DPConfig in ppmlm/training/dp/config.py
    audit      RunAuditConfig    ppmlm/audit/config.py (its measure: AuditConfig, also `ppmlm audit`'s settings)
    share      ShareConfig       ppmlm/sharing/config.py (its `policy`: SharingPolicy, ppmlm/audit/policy.py)
    classify   ClassifyConfig    ppmlm/downstream/config.py (recipe=classify only)

`RunConfig.from_config` builds them from the composed configuration once, up front, before anything is read,
built or written: a bad value, an unknown or a missing key is one line naming the key, the value and what is
allowed (ppmlm/section.py says how, and why recipes/config.yaml stays the one source of defaults). Each stage
is handed its own sections; the training loop holds the RunConfig. `resolved` keeps the configuration as
composed, for the run directory's config.yaml and the resume check, which compare it as written.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

from omegaconf import OmegaConf

from ppmlm.audit.config import RunAuditConfig, with_domain_templates
from ppmlm.corpus.config import DataConfig
from ppmlm.corpus.domains import SYNTHETIC_DOMAINS
from ppmlm.downstream.config import ClassifyConfig
from ppmlm.errors import ConfigError
from ppmlm.identifiers.config import BlacklistConfig
from ppmlm.masking.config import MaskingConfig
from ppmlm.models import ModelConfig
from ppmlm.section import Section, checked, choice, integer, plain, refuse_unknown, section, text
from ppmlm.sharing.config import ShareConfig
from ppmlm.training.config import TrainConfig

TASKS = ("mlm", "classify")


@dataclass(frozen=True)
class RunConfig(Section):
    seed: int = checked(integer(minimum=0))
    output_dir: str | None = checked(text(nullable=True))  # null: classify names its run after the checkpoint
    resume: bool | str = checked(choice("auto", True, False))
    allow_resume_changes: bool = checked(choice(True, False))
    task: str = checked(choice(*TASKS))
    data: DataConfig = checked(section(DataConfig))
    blacklist: BlacklistConfig = checked(section(BlacklistConfig))
    model: ModelConfig = checked(section(ModelConfig))
    masking: MaskingConfig = checked(section(MaskingConfig))
    train: TrainConfig = checked(section(TrainConfig))
    audit: RunAuditConfig = checked()
    share: ShareConfig = checked(section(ShareConfig))
    classify: ClassifyConfig | None = checked(section(ClassifyConfig), None)
    resolved: dict = field(default_factory=dict, compare=False, repr=False)  # as composed: config.yaml of the run

    @classmethod
    def from_config(cls, cfg, prefix: str = "", **given) -> RunConfig:
        """The run configuration of a composed one (a DictConfig or a plain mapping), checked whole."""
        resolved = plain(cfg)
        values = copy.deepcopy(resolved)
        refuse_unknown(values, [f.name for f in fields(cls) if f.name != "resolved"], prefix)
        data = DataConfig.from_config(values.pop("data", None), "data")
        masking = MaskingConfig.from_config(values.pop("masking", None), "masking")
        train = TrainConfig.from_config(values.pop("train", None), "train")
        audit_values = with_domain_templates(values.pop("audit", None), {"path": data.path, "synth_domain": data.synth_domain})
        audit = RunAuditConfig.from_config(audit_values, "audit", max_length=train.max_length,
                                           mlm_probability=masking.mlm_probability)
        return super().from_config(values, prefix, data=data, masking=masking, train=train, audit=audit, resolved=resolved,
                                   **given)

    def check_together(self, prefix: str) -> None:
        unknown = [domain for domain in self.model.public.synth_domains if domain not in SYNTHETIC_DOMAINS]
        if unknown:
            raise ConfigError(f"model.public.synth_domains={self.model.public.synth_domains}: {unknown[0]} is not a "
                              f"synthetic domain; choose among {', '.join(SYNTHETIC_DOMAINS)}")
        if self.task == "classify" and self.classify is None:
            raise ConfigError("task=classify: the configuration has no classify section (recipe=classify)")
        if self.task != "mlm":
            return
        if self.data.user_column is None:
            raise ConfigError("data.user_column=None: expected a non-empty name")
        if self.output_dir is None:
            raise ConfigError("output_dir=None: expected a non-empty name")
        if self.data.train_users == "members":
            self.audit.canaries.check_run(self.train.dp, self.train.max_length, self.audit.enabled)
        if self.audit.enabled and self.audit.reference == "base" and self.model.config is not None:
            raise ConfigError("audit.reference=base: this run builds its model from model.config, so there is no starting "
                              "checkpoint to compare with; use population, none or a checkpoint directory")

    def to_yaml(self) -> str:
        return OmegaConf.to_yaml(OmegaConf.create(self.resolved))
