"""Shared fixtures: tokenizers and tiny models built offline, never downloaded."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

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


_EXIT_PROBE = textwrap.dedent('''
    """Run the script argv[1] with the arguments after it and record, once it has returned, the gloo threads
    this rank still has: any left are torn down during interpreter exit, where they can abort the process
    after a successful run."""
    import atexit, os, runpy, sys

    def thread_name(task):
        try:
            return open(f"/proc/self/task/{task}/comm").read().strip()
        except FileNotFoundError:  # a thread that ended meanwhile
            return ""

    def record(where=f"{__file__}.rank{os.environ['RANK']}"):
        threads = [thread_name(task) for task in os.listdir("/proc/self/task")]
        with open(where, "w") as out:
            out.write(",".join(t for t in threads if "gloo" in t))

    script, sys.argv = sys.argv[1], sys.argv[1:]
    atexit.register(record)
    runpy.run_path(script, run_name="__main__")
''')


class ExitProbe:
    """Put `script` between `accelerate launch ...` and the launched script (Linux: reads /proc)."""

    def __init__(self, directory: Path):
        self.script = directory / "exit_probe.py"
        self.script.write_text(_EXIT_PROBE)

    def gloo_threads_left(self, ranks: int) -> list[str]:
        return [Path(f"{self.script}.rank{rank}").read_text() for rank in range(ranks)]


@pytest.fixture
def exit_probe(tmp_path):
    """Whether each rank of a multi-process launch closed its process group before exiting."""
    return ExitProbe(tmp_path)
