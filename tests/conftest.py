"""Shared fixtures: tokenizers and tiny models built offline, never downloaded."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_ROBERTA_TRAINING_TEXT = [
    "The patient was seen on 7/22 by Dr. Smith at Mercy Hospital; pain in the left knee.",
    "Blood pressure 120/80, heart rate 72. Denies chest pain, shortness of breath or fever.",
    "PT IS A 65 YO M W/ HX OF CHF, COPD. SEEN BY DR JONES. CALL (555) 123-4567.",
    "Patient reports intermittent headaches since March; neurology referral placed.",
    "Resumed antibiotics for pneumonia; will follow up with cardiology in two weeks.",
]


@pytest.fixture(scope="session")
def bert_tokenizer():
    """The WordPiece vocabulary of the offline warm-start model (BERT uncased vocabulary)."""
    from transformers import AutoTokenizer

    from ppmlm.models import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path())


@pytest.fixture(scope="session")
def roberta_tokenizer(tmp_path_factory):
    """A small byte-level BPE tokenizer in RoBERTa format, trained here on clinical-style text."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AutoTokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _ROBERTA_TRAINING_TEXT * 20,
        vocab_size=400,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    directory = tmp_path_factory.mktemp("roberta_tokenizer")
    bpe.save_model(str(directory))
    (directory / "config.json").write_text('{"model_type": "roberta"}')
    return AutoTokenizer.from_pretrained(str(directory))
