"""Every section of a run's configuration is typed and checked up front: a wrong type, a value out of range,
an unknown choice or an unknown key is one line naming the key, its value and what is allowed, before the run
directory, the blacklist cache or the reference cache is written."""
from dataclasses import FrozenInstanceError

import pytest
from conftest import TINY_MODEL, small_corpus
from omegaconf import OmegaConf

from ppmlm.audit.config import AuditConfig, RunAuditConfig
from ppmlm.config import RunConfig
from ppmlm.corpus.config import DataConfig
from ppmlm.downstream.config import ClassifyConfig
from ppmlm.errors import ConfigError
from ppmlm.identifiers.config import BlacklistConfig
from ppmlm.masking.config import MaskingConfig
from ppmlm.models import ModelConfig
from ppmlm.pipeline import compose_config, train, train_from_overrides
from ppmlm.sharing.config import ShareConfig
from ppmlm.training.config import TrainConfig
from ppmlm.training.dp.config import DPConfig


def overrides(tmp_path, *extra):
    return [TINY_MODEL, f"data.path={small_corpus()}", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
            f"blacklist.cache_dir={tmp_path / 'cache'}", f"audit.reference_cache_dir={tmp_path / 'references'}",
            f"output_dir={tmp_path / 'run'}", *extra]


def test_each_section_has_its_type():
    cfg = RunConfig.from_config(compose_config(["recipe=classify"]))
    sections = {"data": DataConfig, "blacklist": BlacklistConfig, "model": ModelConfig, "masking": MaskingConfig,
                "train": TrainConfig, "audit": RunAuditConfig, "share": ShareConfig, "classify": ClassifyConfig}
    assert {name: type(getattr(cfg, name)) for name in sections} == sections
    assert type(cfg.train.dp) is DPConfig and type(cfg.audit.settings) is AuditConfig
    assert (cfg.audit.settings.max_length, cfg.audit.settings.mlm_probability) == (cfg.train.max_length,
                                                                                    cfg.masking.mlm_probability)
    assert RunConfig.from_config(compose_config([])).classify is None  # only recipe=classify has the section
    with pytest.raises(FrozenInstanceError):
        cfg.train.dp.enabled = True


def test_the_run_directory_records_the_configuration_as_composed():
    cfg = compose_config(["recipe=dp", "train.epochs=3"])
    assert RunConfig.from_config(cfg).to_yaml() == OmegaConf.to_yaml(cfg, resolve=True)


@pytest.mark.parametrize("setting, named", [
    ("seed=-1", "seed=-1: expected an integer of at least 0"),
    ("resume=maybe", "resume=maybe: choose one of auto, true, false"),
    ("task=ner", "task=ner: choose one of mlm, classify"),
    ("+colour=blue", "colour=blue: not a key of the configuration; its keys are seed, output_dir, resume"),
    ("data.synth_users=many", "data.synth_users=many: expected an integer of at least 1"),
    ("data.synth_domain=medical", "data.synth_domain=medical: choose one of clinical, legal"),
    ("data.population_fraction=1.0", "data.population_fraction=1.0: expected a number in [0, 1)"),
    ("+data.user=u", "data.user=u: not a key of data; its keys are path, synth_users, synth_domain, text_column"),
    ("blacklist.profile=max", "blacklist.profile=max: choose one of balanced, high-recall"),
    ("blacklist.casefold=sometimes", "blacklist.casefold=sometimes: choose one of null, true, false"),
    ("blacklist.n_process=0", "blacklist.n_process=0: expected an integer of at least 1 or null"),
    ("+blacklist.kk=2", "blacklist.kk=2: not a key of blacklist; its keys are path, k, n, ner"),
    ("model.config=3", "model.config=3: expected a mapping of keys to values or null"),
    ("+model.revision=main", "model.revision=main: not a key of model; its keys are name_or_path, config"),
    ("masking.mlm_probability=half", "masking.mlm_probability=half: expected a number in (0, 1]"),
    ("+masking.rate=0.2", "masking.rate=0.2: not a key of masking; its keys are variant, mlm_probability, placeholder"),
    ("train.lr=fast", "train.lr=fast: expected a number above 0"),
    ("train.epochs='2'", "train.epochs='2': expected an integer of at least 1; it was given as text: write it without"),
    ("train.epochs=true", "train.epochs=true: expected an integer of at least 1"),
    ("train.lr='1e-4'", "train.lr='1e-4': expected a number above 0; it was given as text"),
    ("train.compile='false'", "train.compile='false': choose one of true, false; it was given as text"),
    ("data.text_column=5", "data.text_column=5: expected a non-empty name; quote it ('5') for a name"),
    ("data.text_column=''", "data.text_column='': expected a non-empty name"),
    ("train.tracker=csv", "train.tracker=csv: choose one of null, tensorboard, wandb"),
    ("train.max_length=4", "train.max_length=4: expected an integer of at least 8"),
    ("+train.steps=3", "train.steps=3: not a key of train; its keys are epochs, batch_size, max_length"),
    ("train.gradient_accumulation_steps=0", "train.gradient_accumulation_steps=0: expected an integer of at least 1"),
    ("train.mixed_precision=fp8", "train.mixed_precision=fp8: choose one of null, no, bf16, fp16"),
    ("train.fused_optimizer=yes", "train.fused_optimizer=yes: choose one of auto, true, false"),
    ("train.compile=max-autotune", "train.compile=max-autotune: choose one of true, false"),
    ("train.dp.enabled=true train.gradient_accumulation_steps=4", "train.gradient_accumulation_steps=4: DP-SGD's logical"),
    ("train.dp.enabled=yes", "train.dp.enabled=yes: choose one of true, false"),
    ("train.dp.delta=1", "train.dp.delta=1: expected a number in (0, 1)"),
    ("train.dp.grad_sample_mode=functorch", "train.dp.grad_sample_mode=functorch: choose one of hooks, ghost, fast"),
    ("train.dp.noise_multiplier=null train.dp.target_epsilon=null", "train.dp.target_epsilon=null: expected a number above 0"),
    ("+train.dp.clip=1", "train.dp.clip=1: not a key of train.dp; its keys are enabled, target_epsilon"),
    ("train.dp.enabled=true train.max_grad_norm=1", "train.max_grad_norm=1: it clips the batch gradient of non-private"),
    ("audit.confidence=1", "audit.confidence=1: expected a number in (0, 1)"),
    ("audit.mask_each_word=3", "audit.mask_each_word=3: choose one of true, false"),
    ("audit.enabled=maybe", "audit.enabled=maybe: choose one of true, false"),
    ("audit.seed=-1", "audit.seed=-1: expected an integer of at least 0"),
    ("+audit.max_length=32", "audit.max_length=32: not a key of audit; its keys are enabled, reference, reference_cache_dir"),
    ("+audit.attack=rmia", "audit.attack=rmia: not a key of audit"),
    ("audit.enabled=true audit.reference=base", "audit.reference=base: this run builds its model from model.config"),
    ("share.min_privacy_score=2", "share.min_privacy_score=2: expected a number in [0, 1] or null"),
    ("+share.max_tpr_at_1pct_fpr.gradient=0.1", "share.max_tpr_at_1pct_fpr.gradient=0.1: not an attack of the audit"),
    ("share.max_tpr_at_1pct_fpr.loss=high", "share.max_tpr_at_1pct_fpr.loss=high: expected a number in [0, 1] or null"),
    ("+share.repo=org/model", "share.repo=org/model: not a key of share; its keys are min_privacy_score"),
])
def test_a_bad_setting_of_any_section_is_one_line_before_anything_is_written(tmp_path, setting, named):
    with pytest.raises(ConfigError) as error:
        train(compose_config(overrides(tmp_path, *setting.split())))
    assert named in str(error.value) and "\n" not in str(error.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("setting, named", [
    ("classify.epochs=0", "classify.epochs=0: expected an integer of at least 1"),
    ("classify.eval_fraction=1", "classify.eval_fraction=1: expected a number in (0, 1)"),
    ("+classify.labels=x", "classify.labels=x: not a key of classify; its keys are label_column, label_names"),
])
def test_a_bad_classify_setting_is_one_line_before_anything_is_written(tmp_path, setting, named):
    with pytest.raises(ConfigError) as error:
        train_from_overrides(["recipe=classify", TINY_MODEL, f"output_dir={tmp_path / 'run'}", setting])
    assert named in str(error.value) and "\n" not in str(error.value)
    assert not any(tmp_path.iterdir())


def test_the_audit_section_takes_the_defaults_of_ppmlm_audit_for_keys_it_leaves_out():
    settings = AuditConfig.from_config({"maskings": 4}, "audit", max_length=64, mlm_probability=0.2)
    assert settings == AuditConfig(maskings=4, max_length=64, mlm_probability=0.2)
    with pytest.raises(ConfigError, match="^audit.maskings=0: expected an integer of at least 1$"):
        AuditConfig.from_config({"maskings": 0}, "audit")
