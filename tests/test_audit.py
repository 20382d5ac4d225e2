"""The privacy audit on tiny models: masking plans, scoring, the measures' logic, a model that memorizes
against one that is protected, `ppmlm audit` end to end, outputs free of identifiers, the report in a
headless browser."""
import base64
import contextlib
import io
import json
import random
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import datasets
import numpy as np
import pytest
import torch
from conftest import TINY_MODEL, small_corpus
from omegaconf import OmegaConf
from sklearn.metrics import roc_auc_score

from ppmlm.audit import AuditConfig, run_audit
from ppmlm.audit.checkpoint import settings_digest
from ppmlm.audit.command import audit_command
from ppmlm.audit.identifiers import AuditorGraph, Identifiers, SpanWords, WordReader, identifier_count
from ppmlm.audit.occurrences import ChunkKeys, Guesses, Occurrence, find_occurrences, probe_plans, side_figures
from ppmlm.audit.outputs import SIGNATURE, audit_secret, signature
from ppmlm.audit.reference import reference_checkpoint, reference_config, resolve_reference
from ppmlm.audit.sampling import Sample, build_samples, masking_plan
from ppmlm.audit.scoring import WordPrediction, score_samples
from ppmlm.corpus.loading import load_corpus
from ppmlm.corpus.split import UserSplit
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.blacklist import Blacklist, build_blacklist
from ppmlm.models import weights_digests
from ppmlm.words import WordSegmenter

ROOT = Path(__file__).resolve().parents[1]
QUIET = {"progress": False}


def tiny_bert(vocab_size: int, seed: int = 0, hidden: int = 32):
    from transformers import AutoModelForMaskedLM, BertConfig

    torch.manual_seed(seed)
    return AutoModelForMaskedLM.from_config(BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=2 * hidden))


def test_masking_plan_hides_every_word_and_repeats_with_the_seed():
    terms = [f"w{i}" for i in range(20)]
    terms[3] = None  # punctuation is never masked
    word_ids = np.array([-1, *range(8), 7, *range(8, 20), -1])  # word 7 has two subwords
    sample = Sample("u", "d", 0, True, np.arange(len(word_ids)) + 100, word_ids, terms)
    maskable = set(sample.maskable_words.tolist())
    assert maskable == set(range(20)) - {3}

    plan = masking_plan(sample, 10, 0.15, False, torch.Generator().manual_seed(1))
    assert len(plan) == 10
    assert all(1 <= len(words) <= 3 and set(words.tolist()) <= maskable for words in plan)  # ceil(0.15 * 19) = 3
    assert set(np.concatenate(plan[:7]).tolist()) == maskable  # 7 maskings of 3 cover the 19 words
    again = masking_plan(sample, 10, 0.15, False, torch.Generator().manual_seed(1))
    assert all(np.array_equal(a, b) for a, b in zip(plan, again))
    other = masking_plan(sample, 10, 0.15, False, torch.Generator().manual_seed(2))
    assert not all(np.array_equal(a, b) for a, b in zip(plan, other))

    each = masking_plan(sample, 10, 0.15, True, torch.Generator().manual_seed(1))
    assert [w.tolist() for w in each] == [[w] for w in sorted(maskable)]


def test_scoring_matches_a_plain_forward_pass(bert_tokenizer):
    """Energies from the head-on-masked-positions path equal the full model's; words keep their subwords."""
    records = [{"doc_id": "d", "user_id": "u", "text": "Hypertension was treated with lisinopril, then metoprolol."}]
    corpus = load_corpus(datasets.Dataset.from_list(records))
    [sample], _ = build_samples(corpus, {"u": True}, WordSegmenter(), bert_tokenizer, 64, None, torch.Generator())
    model = tiny_bert(len(bert_tokenizer)).eval()
    plan = masking_plan(sample, 4, 0.3, False, torch.Generator().manual_seed(0))
    [result] = score_samples(model, [sample], [plan], bert_tokenizer.mask_token_id, bert_tokenizer.pad_token_id, batch_size=3)
    for m, words in enumerate(plan):
        hidden = np.isin(sample.word_ids, words)
        ids = torch.tensor(np.where(hidden, bert_tokenizer.mask_token_id, sample.input_ids))[None]
        with torch.no_grad():
            log_probs = torch.log_softmax(model(input_ids=ids).logits[0], -1)
        expected = -log_probs[torch.from_numpy(hidden), torch.from_numpy(sample.input_ids[hidden])].sum().item()
        assert result.nll[m] == pytest.approx(expected, rel=1e-4)
        assert result.tokens[m] == hidden.sum()
        assert [p.word for p in result.predictions[m]] == sorted(words.tolist())
        for prediction in result.predictions[m]:
            assert prediction.original == tuple(sample.input_ids[sample.word_ids == prediction.word].tolist())
            assert len(prediction.predicted) == len(prediction.original)
    assert model.training is False


def test_privacy_figures_and_identifier_count_by_hand():
    """Three identifiers occur in a chunk; the model writes "ann" at its own place and in the place of "zed", and "far",
    which the chunk does not hold, in ordinary text twice."""
    identifiers = Identifiers({"ann": {"direct"}, "zed": {"indirect"}, "q7": {"direct", "indirect"}, "far": {"indirect"}},
                              2, labels={"ann": {"NAME"}, "far": {"DATE"}})
    chunk = ("doc", 0)
    occurrences = [Occurrence(chunk, (1,), ("ann",)), Occurrence(chunk, (3,), ("zed",)), Occurrence(chunk, (5,), ("q7",))]
    guesses = Guesses(reader=None)
    for word, original, predicted in ((1, "ann", "ann"), (3, "zed", "ann"), (5, "q7", "zzz"), (7, "the", "far"),
                                      (7, "the", "far"), (8, "of", "common")):
        guesses.at[(chunk, word)][predicted] += 1
        guesses.original[(chunk, word)] = original
    result = side_figures(identifiers, occurrences, guesses, guesses, 0.95, {"ann": 5, "far": 2, "zed": 1})
    assert (result["identifiers"], result["leaked"]) == (3, 1) and result["score"] == pytest.approx(2 / 3)
    assert {k: result["direct"][k] for k in ("identifiers", "leaked", "score")} == {"identifiers": 2, "leaked": 1, "score": 0.5}
    assert {k: result["indirect"][k] for k in ("identifiers", "leaked", "score")} == {"identifiers": 2, "leaked": 0, "score": 1.0}
    assert result["indirect"]["score_ci"][1] == 1.0 and 0 < result["indirect"]["score_ci"][0] < 1.0
    assert result["by_label"]["NAME"]["leaked"] == 1 and result["by_label"]["DATE"]["identifiers"] == 0
    assert {k: result["occurrences"][k] for k in ("probed", "predicted")} == {"probed": 3, "predicted": 1}  # zed: not itself
    assert result["occurrences"]["direct"]["probed"] == 2 and result["occurrences"]["indirect"]["predicted"] == 0
    assert result["predicted_where"] == {"own_occurrence": 1, "another_identifier": 1, "ordinary_text": 1}
    assert result["leaked_elsewhere"] == 1 and result["ngram_identifiers_not_scored"] == 2
    assert result["elsewhere"] == {"identifiers": 1, "direct": 0, "indirect": 1, "by_label": {"DATE": 1},
                                   "another_identifier": 0, "ordinary_text": 1,
                                   "predictions": {"another_identifier": 0, "ordinary_text": 2}}
    assert result["regurgitation"] == {"training_occurrences": [2, 5], "predictions": [2, 2]}
    assert side_figures(identifiers, [], Guesses(None), Guesses(None), 0.95, {})["score"] == 1.0  # nothing audited
    assert identifier_count({"a", "b", "c"}, {"b", "x"}) == (1, pytest.approx(1 / 3))
    assert identifier_count(set(), {"b"}) == (0, 0.0)


def test_gold_occurrences_are_spans_and_far_apart_ones_share_a_masked_input():
    """A gold span is one occurrence, its words masked together, in each chunk it reaches; occurrences at least the gap
    apart share an input, closer ones do not, and the same words of two answer keys are masked once."""
    terms = [f"w{i}" for i in range(12)]
    terms[4] = None  # punctuation inside a span is not masked
    chunk = Sample("u", "doc", 1, True, np.arange(14), np.array([-1, *range(12), -1]), terms, first_word=10)
    gold = Identifiers({}, 0, spans={"doc": [SpanWords(8, 11, "NAME", False), SpanWords(13, 16, "DATE", True),
                                             SpanWords(21, 30, "ID", False), SpanWords(40, 41, "AGE", False)]})
    gold.kinds = {f"w{i}": {"direct"} for i in range(12)}
    keys = ChunkKeys(SimpleNamespace(key=lambda term: term))
    found = find_occurrences([chunk], gold, keys)
    assert [(o.words, o.label, o.unprotected) for o in found] == [((0,), "NAME", False), ((3, 5), "DATE", True),
                                                                  ((11,), "ID", False)]
    terms_key = Identifiers({"w0": {"indirect"}, "w9": {"direct"}}, 0)
    found += find_occurrences([chunk], terms_key, keys)  # w0 is both a term and a gold span's word: one masked input
    assert [plan.tolist() for plan in probe_plans([chunk], found, gap=5)[0]] == [[0, 9], [3, 5, 11]]
    assert [plan.tolist() for plan in probe_plans([chunk], found, gap=None)[0]] == [[0], [3, 5], [9], [11]]
    assert [plan.tolist() for plan in probe_plans([chunk], found, gap=1)[0]] == [[0, 3, 5, 9, 11]]


def test_words_are_compared_as_the_model_sees_them(bert_tokenizer):
    reader = WordReader(bert_tokenizer, WordSegmenter(casefold=False))
    assert reader.key("Smith") == "smith" and reader.key("Café") == "cafe" and reader.key("--") is None

    def ids(word):
        return tuple(bert_tokenizer(word, add_special_tokens=False)["input_ids"])

    assert len(ids("lisinopril")) > 1
    assert reader.predicted(WordPrediction(0, ids("lisinopril"), ids("aspirinxx")), "aspirinxx") == "lisinopril"
    assert reader.predicted(WordPrediction(0, ids("Smith"), ids("Smith")), "Smith") == "smith"
    assert reader.predicted(WordPrediction(0, (bert_tokenizer.sep_token_id,), (5,)), "x") is None


def test_auditor_graph_counts_members_and_non_members_together(bert_tokenizer):
    records = [{"doc_id": "1", "user_id": "a", "text": "Kestrel owns a boat."},
               {"doc_id": "2", "user_id": "b", "text": "A boat and a kestrel."},
               {"doc_id": "3", "user_id": "c", "text": "Boat boat Boat."}]
    corpus = load_corpus(datasets.Dataset.from_list(records))
    segmenter = WordSegmenter()
    cased = AuditorGraph(corpus, {"a", "b"}, {"c"}, segmenter, WordReader(object(), segmenter))
    assert (cased.degree["boat"], cased.degree["Boat"], cased.degree["kestrel"], cased.degree["Kestrel"]) == (3, 1, 1, 1)
    assert cased.training_occurrences["boat"] == 2 and cased.training_occurrences["Boat"] == 0
    assert cased.indirect({"Kestrel", "kestrel", "owns", "boat"}, k=2) == {"Kestrel", "kestrel", "owns"}
    uncased = AuditorGraph(corpus, {"a", "b"}, {"c"}, segmenter, WordReader(bert_tokenizer, segmenter))
    assert (uncased.degree["boat"], uncased.degree["kestrel"]) == (3, 2)  # one word for a model that cannot see case
    assert uncased.training_occurrences["boat"] == 2 and uncased.indirect({"kestrel", "owns"}, k=2) == {"owns"}


# A corpus where each user has a distinctive pair of words that only their notes use: a model trained on
# them as targets memorizes the pairs, one that never sees them as targets cannot produce them.
PAIRS = [("violin", "volcano"), ("saxophone", "lantern"), ("meadow", "canyon"), ("orchid", "falcon"),
         ("harbor", "glacier"), ("pepper", "dolphin"), ("marble", "cactus"), ("anchor", "velvet"),
         ("tornado", "maple"), ("walrus", "giraffe"), ("tulip", "pelican"), ("copper", "hammock")]
TEMPLATES = ["the patient talked about {} and {} at the visit .", "a nurse wrote that {} reminds them of {} .",
             "family said the {} and the {} matter a lot .", "we discussed {} then {} before discharge ."]


@pytest.fixture(scope="module")
def memorization_setup(tmp_path_factory):
    """Twelve users (six members, six non-members), three notes each, and a word-level tokenizer with
    every word whole, so a tiny model memorizes within seconds."""
    from transformers import AutoTokenizer

    records = [{"doc_id": f"u{u}d{d}", "user_id": f"u{u}",
                "text": " ".join(t.format(*pair) for t in TEMPLATES[d:] + TEMPLATES[:d])}
               for u, pair in enumerate(PAIRS) for d in range(3)]
    directory = tmp_path_factory.mktemp("word_tokenizer")
    words = sorted({w for r in records for w in r["text"].split()})
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    (directory / "config.json").write_text('{"model_type": "bert"}')
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    corpus = load_corpus(datasets.Dataset.from_list(records))
    split = UserSplit(0, 0.5, 0.0, members=[f"u{u}" for u in range(6)], audit_non_members=[f"u{u}" for u in range(6, 12)])
    members = corpus.filter(lambda user: user in set(split.members), input_columns="user_id")
    blacklist = build_blacklist(members, k=2, n=1, ner="none", progress=False)
    assert len(blacklist) == 12  # the members' distinctive words, nothing else
    return SimpleNamespace(tokenizer=tokenizer, corpus=corpus, split=split, members=members, blacklist=blacklist)


def memorized(setup, variant: str):
    """A tiny BERT trained 200 steps on the members' notes with the collator and loss of training."""
    from ppmlm.features import FEATURE_COLUMNS, build_features
    from ppmlm.masking.collator import PrivacyMaskingCollator
    from ppmlm.masking.variants import VARIANTS, protected_view
    from ppmlm.training.objective import MaskedLMLoss

    protected = protected_view(setup.blacklist, VARIANTS[variant])
    features = build_features(setup.members, protected, setup.tokenizer, max_length=64)
    features = features.select_columns(list(FEATURE_COLUMNS)).to_list()
    objective = MaskedLMLoss(tiny_bert(len(setup.tokenizer), hidden=64))
    optimizer = torch.optim.AdamW(objective.parameters(), lr=3e-3)
    collator = PrivacyMaskingCollator(setup.tokenizer, generator=torch.Generator().manual_seed(0))
    draw = torch.Generator().manual_seed(1)
    for _ in range(200):
        batch = collator([features[i] for i in torch.randint(len(features), (8,), generator=draw).tolist()])
        objective(batch["input_ids"], batch["attention_mask"], batch["labels"]).mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    return objective.model


@pytest.mark.kernels
def test_memorizing_model_leaks_identifiers_and_protected_model_does_not(memorization_setup, protected_model, tmp_path):
    setup = memorization_setup
    config = AuditConfig(max_length=64, max_users_per_side=None, max_chunks_per_user=None, **QUIET)
    plain, protected = memorized(setup, "mlm"), protected_model
    states = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    leaky = run_audit(plain, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "mlm", 1, config)
    assert torch.equal(states[0], torch.get_rng_state()) and np.array_equal(states[1], np.random.get_state()[1])
    assert states[2] == random.getstate()  # training resumes rely on the global random streams
    safe = run_audit(protected, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "ppmlm", 1, config)

    assert leaky["privacy"]["identifiers"] == safe["privacy"]["identifiers"] == 12
    assert leaky["privacy"]["leaked"] >= 3 and leaky["privacy"]["score"] <= 0.75
    assert safe["privacy"]["leaked"] == 0 and safe["privacy"]["score"] == 1.0
    assert len(leaky["privacy"]["regurgitation"]["predictions"]) >= leaky["privacy"]["leaked"]
    assert leaky["attacks"]["identifier_count"]["user"]["auc"] >= 0.75
    assert safe["attacks"]["identifier_count"]["user"]["auc"] == 0.5  # nobody's identifiers come out
    users = [json.loads(line) for line in (tmp_path / "mlm" / "scores-epoch-1-users.jsonl").read_text().splitlines()]
    assert {u["identifiers"] for u in users} == {2}  # each user's two distinctive words, members and non-members
    assert all(u["identifiers_predicted"] == 0 for u in users if not u["member"])
    for figures in (leaky, safe):
        assert figures["utility"]["masked_word_accuracy"] > 0.5  # the shared words are learned either way
        assert figures["attacks"]["likelihood_ratio"]["user"] is None  # no reference model given

    each_word = run_audit(plain, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "each", 1,
                          AuditConfig(max_length=64, max_users_per_side=2, max_chunks_per_user=1, mask_each_word=True, **QUIET),
                          reference=protected)
    assert each_word["audited"]["maskings_per_sample"] == "each word"
    assert each_word["attacks"]["likelihood_ratio"]["sample"]["members"] == 2


@pytest.fixture(scope="module")
def protected_model(memorization_setup):
    return memorized(memorization_setup, "ppmlm")


@pytest.mark.kernels
def test_a_leak_the_blacklist_misses_is_found_by_the_independent_audit(memorization_setup, protected_model, tmp_path):
    """Gold spans say that "nurse" names someone in every member note; the blacklist (built without them)
    does not protect it, so the protected model learns and predicts it. Today's score, graded with the
    blacklist's own answer key, sees nothing; the independent audit counts the leak."""
    setup = memorization_setup
    gold = [[{"start": m.start(), "end": m.end(), "label": "NAME"} for m in re.finditer(r"\bnurse\b", text)]
            for text in setup.corpus["text"]]
    corpus = setup.corpus.add_column("phi", gold)
    config = AuditConfig(max_length=64, max_users_per_side=None, max_chunks_per_user=None, identifiers_from="phi",
                         bootstrap_resamples=200, **QUIET)
    figures = run_audit(protected_model, setup.tokenizer, corpus, setup.split, setup.blacklist, tmp_path / "gold", 1, config)
    assert figures["privacy"]["score"] == 1.0 and figures["privacy"]["score_ci"][1] == 1.0
    independent = figures["privacy_independent"]
    assert independent["source"] == "gold spans of corpus column 'phi'"
    assert (independent["identifiers"], independent["leaked"], independent["score"]) == (1, 1, 0.0)
    assert independent["missed_by_blacklist"] == {"identifiers": 1, "leaked": 1, "occurrences": 18, "occurrences_predicted": 18}
    assert independent["occurrences"]["probed"] == 18 and independent["probe"]["every_occurrence"]  # 6 members x 3 notes
    assert independent["baseline"]["occurrences"]["probed"] == 18  # the non-members' notes: a word the language teaches
    assert independent["by_label"]["NAME"]["leaked"] == 1 and independent["direct"]["leaked"] == 1
    report = (tmp_path / "gold" / "report.html").read_text()
    assert "missed by the training blacklist" in report and "blind (no model)" in report
    assert "Identifiers predicted outside the probed chunks (independent identifiers)" in report
    assert set(figures["attacks"]["blind"]) == {"sample", "user"}

    setup.blacklist.save(tmp_path / "same-blacklist")  # the training blacklist as the answer key: nothing missed
    again = run_audit(protected_model, setup.tokenizer, corpus, setup.split, setup.blacklist, tmp_path / "same", 1,
                      AuditConfig(max_length=64, identifiers_from=str(tmp_path / "same-blacklist"), **QUIET), final=False)
    assert not again["privacy"]["probe"]["every_occurrence"]  # an audit before the final one reads its sampled chunks
    assert again["privacy_independent"]["missed_by_blacklist"] == {"identifiers": 0, "leaked": 0}
    assert again["privacy_independent"]["score"] == again["privacy"]["score"]
    assert run_audit(protected_model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "auto", 1,
                     AuditConfig(max_length=64, **QUIET))["privacy_independent"] is None  # auto: no phi column, no block
    with pytest.raises(PPMLMError, match="no such column"):
        run_audit(protected_model, setup.tokenizer, setup.corpus, setup.split, setup.blacklist, tmp_path / "x", 1,
                  AuditConfig(max_length=64, identifiers_from="gold", **QUIET))


def test_reference_configuration_and_cache(tmp_path):
    from ppmlm.pipeline import compose_config

    base = [TINY_MODEL, "data.synth_users=6", f"++audit.reference_cache_dir={tmp_path}"]
    cfg = compose_config([*base, "++data.train_users=members", "output_dir=runs/a"])
    reference = reference_config(cfg)
    assert reference.data.train_users == "population" and reference.audit.enabled is False
    assert Path(reference.output_dir).parent == tmp_path
    same = reference_config(compose_config([*base, "++data.train_users=members", "output_dir=runs/b", "train.log_every=1"]))
    other = reference_config(compose_config([*base, "++data.train_users=members", "train.lr=0.01"]))
    assert same.output_dir == reference.output_dir != other.output_dir  # where and how a run logs is not in the key
    with pytest.raises(PPMLMError, match="no reference model"):
        reference_checkpoint(cfg)  # no trainer given: the audit never trains one itself
    final = Path(reference.output_dir) / "checkpoints" / f"epoch-{cfg.train.epochs}"
    trained = []
    assert reference_checkpoint(cfg, train=trained.append) == final and trained == [reference]
    final.mkdir(parents=True)
    (final / "complete").write_text("{}")
    assert reference_checkpoint(cfg) == final
    assert resolve_reference("none", cfg) is None and resolve_reference(None) is None
    with pytest.raises(PPMLMError, match="starting checkpoint"):
        resolve_reference("base", cfg)  # a model built from a config has none
    with pytest.raises(PPMLMError, match="not a saved model"):
        resolve_reference(str(tmp_path))


def test_a_reference_another_process_is_training_is_waited_for_then_used(tmp_path, capsys):
    """Two runs needing the same uncached reference: the second waits for the first, which holds the reference's
    folder (its lock), saying so and how far that training is, within a bound; once the first has written its final
    checkpoint, the second uses it instead of training its own."""
    from ppmlm.pipeline import compose_config, train_reference

    cfg = compose_config([TINY_MODEL, "data.synth_users=6", f"++audit.reference_cache_dir={tmp_path}",
                          "++data.train_users=members", "train.epochs=1"])
    reference = reference_config(cfg)
    final = Path(reference.output_dir) / "checkpoints" / "epoch-1"
    holder = subprocess.Popen(  # the first run, training the reference: it finishes its checkpoint when told to
        [sys.executable, "-c", "import pathlib, sys, time; from accelerate import Accelerator; "
                               "from ppmlm.rundir import RunDirectory; run = RunDirectory(sys.argv[1]); "
                               "run.claim(Accelerator(cpu=True)); print('locked', flush=True); sys.stdin.readline(); "
                               "time.sleep(1); run.checkpoint(1).mkdir(parents=True); run.mark_complete(1); time.sleep(1)",
         reference.output_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tries = []

    def train(config):
        tries.append(config)
        return train_reference(config)  # the real training: refused while the folder is locked

    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(PPMLMError, match=rf"waited 0 min for the reference model that another training \(pid "
                                             rf"{holder.pid} .*\) trains into .* \(0 of 1 epochs done\)"):
            reference_checkpoint(cfg, train=train, wait_limit_s=0.5, poll_s=0.1)
        holder.stdin.write("finish\n")
        holder.stdin.flush()
        assert reference_checkpoint(cfg, train=train, poll_s=0.1) == final
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()
        holder.wait(timeout=30)
    out = capsys.readouterr().out
    assert f"waiting for another training (pid {holder.pid} " in out and "0 of 1 epochs done" in out
    assert f"using the reference model {final}, trained by pid {holder.pid} " in out
    assert len(tries) >= 2 and not (final / "model.safetensors").exists()  # never trained here


@pytest.fixture(scope="module")
def audited_run(tmp_path_factory):
    """A tiny mlm run of one epoch on the small corpus, audited twice against a separately initialized reference
    checkpoint: through the Python API as epoch 1 (finding the run's blacklist itself), and by the `ppmlm audit`
    command filed as epoch 2 (so that the report has two epochs). Both audit two chunks per user (128 tokens), so
    that the audited non-members' other chunks are RMIA's population. The command runs in this process (its
    entry points run in test_packaging), its output captured as a user would see it."""
    from transformers import AutoTokenizer

    from ppmlm.cli import main
    from ppmlm.pipeline import compose_config, train

    tmp = tmp_path_factory.mktemp("audited_run")
    corpus = small_corpus()
    overrides = [TINY_MODEL, f"data.path={corpus}", "train.max_length=64", "train.epochs=1", "blacklist.ner=none",
                 "blacklist.spans_from=phi", f"blacklist.cache_dir={tmp / 'cache'}", f"output_dir={tmp / 'run'}", "recipe=mlm",
                 "++audit.enabled=false"]
    run = train(compose_config(overrides))
    [blacklist] = [p for p in (tmp / "cache").iterdir() if p.is_dir() and not p.name.startswith(".")]
    checkpoint, reference, out = run / "checkpoints" / "epoch-1", tmp / "reference", tmp / "audit"
    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    tiny_bert(len(tokenizer), seed=5).save_pretrained(reference)
    tokenizer.save_pretrained(reference)
    first = audit_command(checkpoint, None, None, out, reference=str(reference),
                          settings={**QUIET, "max_tokens_per_user": 128})
    logs = io.StringIO()
    with contextlib.redirect_stdout(logs), contextlib.redirect_stderr(logs):
        status = main(["audit", "--model", str(checkpoint), "--data", str(corpus), "--blacklist", str(blacklist),
                       "--reference", str(reference), "--out", str(out), "--epoch", "2", "--max-tokens", "128"])
    assert status == 0, logs.getvalue()
    return SimpleNamespace(tmp=tmp, corpus=corpus, run=run, blacklist=blacklist, out=out, first=first,
                           logs=logs.getvalue(), overrides=overrides)


def test_ppmlm_audit_writes_every_output_and_reproduces_the_api(audited_run):
    out, split = audited_run.out, UserSplit.load(audited_run.run / "split.json")
    assert {p.name for p in out.iterdir()} >= {"epoch-1.json", "epoch-2.json", "report.html", "scores-epoch-2-samples.jsonl",
                                                "scores-epoch-2-users.jsonl", ".salt"}
    figures = json.loads((out / "epoch-2.json").read_text())
    assert figures["epoch"] == 2 and figures["reference"].endswith("reference") and figures["dp"] is None
    assert figures["audited"]["member_users"] == min(len(split.audit_non_members), len(split.members))  # as many
    assert figures["audited"]["non_member_users"] == len(split.audit_non_members)
    assert figures["audited"]["member_users_available"] == len(split.members)
    assert figures["audited"]["non_member_users_available"] == len(split.audit_non_members)
    assert 0 <= figures["utility"]["masked_word_accuracy"] <= 1 and 0 <= figures["privacy"]["score"] <= 1
    for attack in ("loss", "likelihood_ratio", "rmia"):  # RMIA: the audited non-members' other chunks its population
        for level in ("sample", "user"):
            result = figures["attacks"][attack][level]
            assert 0 <= result["auc"] <= 1 and set(result["tpr_at_fpr"]) == {"0.001", "0.01", "0.1"}
            assert result["auc_ci"][0] <= result["auc"] <= result["auc_ci"][1] and len(result["advantage_ci"]) == 2
            for fpr, needs in (("0.001", 1000), ("0.01", 100), ("0.1", 10)):  # a few users: unresolved cells are null
                if result["non_members"] < needs:
                    assert result["tpr_at_fpr"][fpr] is None and result["tpr_at_fpr_ci"][fpr] is None
                    assert result["unresolved"][fpr]["needs_non_members"] == needs
                else:
                    assert result["tpr_at_fpr_ci"][fpr][0] <= result["tpr_at_fpr"][fpr] <= result["tpr_at_fpr_ci"][fpr][1]
    assert figures["privacy"]["score_ci"][0] <= figures["privacy"]["score"] <= figures["privacy"]["score_ci"][1]
    independent = figures["privacy_independent"]  # the synthetic corpus has gold spans (phi): audited by default
    assert independent["source"] == "gold spans of corpus column 'phi'" and independent["identifiers"] > 0
    assert set(independent["missed_by_blacklist"]) == {"identifiers", "leaked", "occurrences", "occurrences_predicted"}
    assert independent["probe"]["every_occurrence"] and independent["occurrences"]["probed"] > 0  # ppmlm audit probes all
    assert set(figures["attacks"]["blind"]) == {"sample", "user"}
    report = (out / "report.html").read_text()
    assert report.index("Verdict of the sharing policy") < report.index("<h2>Summary") and "not resolved (needs" in report
    assert figures["attacks"]["identifier_count"]["user"] is not None
    assert "audit epoch 2: utility" in audited_run.logs
    lines = audited_run.logs.splitlines()  # ppmlm audit ends with the verdict of the audit it made, and what would resolve it
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict on epoch 2: inconclusive: "))
    assert "non-members resolve no TPR at 1% FPR" in lines[verdict] and lines[verdict + 1] == "to resolve it:"
    assert figures["utility"]["masked_word_accuracy_ci"][0] <= figures["utility"]["masked_word_accuracy"]
    for key in ("audited", "utility", "privacy", "attacks"):  # same checkpoint, same figures
        assert figures[key] == audited_run.first[key], key


def test_the_audit_records_the_digests_of_what_it_measured_and_signs_them(audited_run):
    """Both paths (the API finding the run's blacklist, `ppmlm audit` given it) record the sha256 of the
    checkpoint's weights, of the blacklist and of the split, under an HMAC of the directory's secret."""
    measured = {"weights": weights_digests(audited_run.run / "checkpoints" / "epoch-1"),
                "blacklist": Blacklist.load(audited_run.blacklist).digest(),
                "split": UserSplit.load(audited_run.run / "split.json").digest(),
                "settings": settings_digest(OmegaConf.to_container(OmegaConf.load(audited_run.run / "config.yaml")))}
    assert list(measured["weights"]) == ["model.safetensors"]
    for epoch in (1, 2):
        figures = json.loads((audited_run.out / f"epoch-{epoch}.json").read_text())
        assert figures["measured"] == measured
        assert figures[SIGNATURE] == signature(figures, audit_secret(audited_run.out, create=False))
        assert figures[SIGNATURE] != signature({**figures, "epoch": 3}, audit_secret(audited_run.out, create=False))
    assert audited_run.first == json.loads((audited_run.out / "epoch-1.json").read_text())  # returned as written


def test_every_figure_recomputes_from_the_scores_files(audited_run):
    figures = json.loads((audited_run.out / "epoch-2.json").read_text())
    for level in ("sample", "user"):
        rows = [json.loads(line) for line in (audited_run.out / f"scores-epoch-2-{level}s.jsonl").read_text().splitlines()]
        for attack, levels in figures["attacks"].items():
            if level in levels and levels[level] is not None:
                scored = [r for r in rows if r[f"{attack}_score"] is not None]  # e.g. neighbours for some chunks only
                assert roc_auc_score([r["member"] for r in scored], [r[f"{attack}_score"] for r in scored]) == pytest.approx(
                    levels[level]["auc"])
    users = [json.loads(line) for line in (audited_run.out / "scores-epoch-2-users.jsonl").read_text().splitlines()]
    split = UserSplit.load(audited_run.run / "split.json")
    assert not {u["user"] for u in users} & set(split.members + split.audit_non_members)  # pseudonyms only


def test_training_epoch_audit_follows_the_run_configuration(audited_run):
    """What the training loop calls after each checkpoint: settings from cfg.audit, outputs in <output_dir>/audit;
    a later epoch's audit reuses the first one's inputs and measures exactly what a fresh audit would."""
    from ppmlm.audit import TrainingAudits, audit_checkpoint
    from ppmlm.config import RunConfig
    from ppmlm.pipeline import compose_config
    from ppmlm.training.data import RunData

    output = audited_run.tmp / "loop"
    cfg = RunConfig.from_config(compose_config([*audited_run.overrides, f"output_dir={output}", "++audit.reference=none",
                                                "++audit.max_users_per_side=3", "++audit.maskings=4", "++audit.seed=7",
                                                "++audit.progress=false"]))
    run_data = RunData(load_corpus(audited_run.corpus), UserSplit.load(audited_run.run / "split.json"),
                       Blacklist.load(audited_run.blacklist), features=None)
    checkpoint = output / "epoch-1"  # a DP run's checkpoint: privacy.json beside the weights
    shutil.copytree(audited_run.run / "checkpoints" / "epoch-1", checkpoint)
    (checkpoint / "privacy.json").write_text(json.dumps({"epsilon": {"rdp": 3.5}, "privacy": {"delta": 1e-5}}))
    audits = TrainingAudits(cfg.audit.settings, run_data, output / "audit", policy=cfg.share.policy)
    figures = audits.audit(checkpoint, 1)
    assert json.loads((output / "audit" / "epoch-1.json").read_text()) == figures
    prepared = audits.inputs
    later = audits.audit(checkpoint, 2)
    assert audits.inputs is prepared and later["audited"]["neighbourhood_samples"] > 0  # no reference: neighbours drawn
    fresh = audit_checkpoint(checkpoint, run_data.corpus, run_data.split, run_data.blacklist, output / "fresh", 2,
                             cfg.audit.settings, epsilon=later["dp"], policy=cfg.share.policy)
    for measured in (later, fresh):
        measured.pop("seconds"), measured.pop("signature", None)
    assert later == fresh
    assert figures["audited"]["member_users"] == 3 and figures["audited"]["maskings_per_sample"] == 4
    assert figures["config"]["max_length"] == 64 and figures["config"]["seed"] == 7
    assert figures["dp"] == {"rdp": 3.5, "delta": 1e-5, "unit": "chunk"} and figures["reference"] is None  # unit: default
    assert figures["dp_settings"] == {"delta": 1e-5}  # privacy.json's settings, signed with the figures for the card
    assert "rdp 3.5" in (output / "audit" / "report.html").read_text()


def test_ppmlm_audit_refuses_an_out_holding_another_models_audits(audited_run, tmp_path, capsys):
    """Another model audited into this audit folder would replace and sign again its epoch-1.json: one line before
    anything loads, and the folder stays as it was. The same weights may be audited there again (the fixture's epoch
    2), and a run's checkpoint into its run's own audit folder under its own epoch always (how a stale audit is
    redone), but not filed under another epoch."""
    from ppmlm.cli import main

    before = {p.name: p.read_bytes() for p in audited_run.out.iterdir() if p.is_file()}
    assert main(["audit", "--model", str(audited_run.tmp / "reference"), "--data", str(audited_run.corpus), "--blacklist",
                 str(audited_run.blacklist), "--out", str(audited_run.out)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "epoch-1.json holds the audit of other weights" in error and "choose a new or empty" in error
    assert {p.name: p.read_bytes() for p in audited_run.out.iterdir() if p.is_file()} == before

    run = tmp_path / "run"
    shutil.copytree(audited_run.run, run)
    shutil.copytree(audited_run.out, run / "audit")
    weights = run / "checkpoints" / "epoch-1" / "model.safetensors"
    weights.write_bytes(weights.read_bytes() + b" ")  # other weights than its audit's: retrained since
    (tmp_path / "not-a-split.json").write_text("[]")  # a later refusal, to stop the audit once past the check
    own = ["audit", "--model", str(run / "checkpoints" / "epoch-1"), "--out", str(run / "audit"), "--split",
           str(tmp_path / "not-a-split.json")]
    assert main(own) == 2 and "not a user split file" in capsys.readouterr().err
    assert main([*own, "--epoch", "2"]) == 2 and "epoch-1.json holds the audit of other weights" in capsys.readouterr().err


@pytest.mark.parametrize("content, found", [(None, "not one JSON value: extra data at line 2"), ("", "the file is empty"),
                                            ('{"members": ["u1"]}', "missing audit_fraction, audit_non_members"),
                                            ('{"seed": 1, "audit_fraction": 0.2, "population_fraction": 0.2, "members": '
                                             '["u1"], "audit_non_members": {"u2": 1}, "population": []}',
                                             "audit_non_members is not a list of user ids")])
def test_a_split_option_that_is_not_a_split_file_is_one_line(audited_run, tmp_path, capsys, content, found):
    """A corpus JSONL, an empty file or JSON of another shape given as --split: one line naming the file and what a
    split holds, never a user id or a text, before anything loads."""
    from ppmlm.cli import main

    split = tmp_path / "split.json"
    if content is None:
        shutil.copyfile(audited_run.corpus, split)  # the corpus itself
    else:
        split.write_text(content)
    assert main(["audit", "--model", str(audited_run.run / "checkpoints" / "epoch-1"), "--out", str(tmp_path / "audit"),
                 "--split", str(split)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and f"{split}: not a user split file ({found}" in error
    assert "a split file (split.json) is one JSON object with seed (an integer)" in error
    users = UserSplit.load(audited_run.run / "split.json")
    assert not [user for user in users.members + users.audit_non_members + users.population if user in error]
    assert not (tmp_path / "audit").exists()


class _Page(HTMLParser):
    """Visible text and attribute values of a page, and its images and tables."""

    def __init__(self):
        super().__init__()
        self.text, self.images, self.tables, self.rows = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src") or "")
        if tag == "table":
            self.tables.append(attrs.get("id"))
        if tag == "tr":
            self.rows += 1
        self.text.extend(v for k, v in attrs.items() if v and k != "src")

    def handle_data(self, data):
        self.text.append(data)


def _strings(value):
    """Every string of a JSON value, keys included (numbers are figures, not text)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def test_no_identifier_appears_in_any_output(audited_run):
    """Every text the audit writes or prints, cut into words as blacklist terms are, holds no blacklisted
    term. Terms with a letter are searched, and numbers of five digits or more (record numbers, phones);
    shorter numbers are indistinguishable from the figures themselves. Words of the audit's own source
    and of the test's directory names are template text, not data."""
    blacklist = Blacklist.load(audited_run.blacklist)
    segmenter = blacklist.segmenter
    searched = {t for t in blacklist.terms if " " not in t and (re.search(r"[^\W\d_]", t) or re.fullmatch(r"\d{5,}", t))}
    assert len(searched) > 20
    probe = sorted(searched)[0]
    assert probe in set(segmenter(f"a leak: {probe}.").terms)  # the search finds a term where there is one
    template = "\n".join(p.read_text() for p in (ROOT / "ppmlm" / "audit").rglob("*.py")) + str(audited_run.tmp)
    categories = {span["label"] for spans in load_corpus(audited_run.corpus)["phi"] for span in spans}  # the annotation scheme
    allowed = set(segmenter(template + " " + " ".join(categories)).terms)

    texts = {"logs": [audited_run.logs]}
    for path in audited_run.out.iterdir():
        if path.suffix == ".json":
            texts[path.name] = list(_strings(json.loads(path.read_text())))
        elif path.suffix == ".jsonl":
            texts[path.name] = [s for line in path.read_text().splitlines() for s in _strings(json.loads(line))]
        elif path.suffix == ".html":
            page = _Page()
            page.feed(path.read_text())
            texts[path.name] = page.text
    assert {"epoch-2.json", "scores-epoch-2-samples.jsonl", "report.html"} <= set(texts)
    for name, strings in texts.items():
        found = {t for s in strings for t in segmenter(s).terms if t is not None} & searched - allowed
        assert not found, f"{name} shows {len(found)} identifiers"


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="chromium is not installed")
def test_report_renders_in_headless_chromium(audited_run, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
             "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    url = (audited_run.out / "report.html").as_uri()
    dom = subprocess.run([browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = _Page()
    page.feed(dom.stdout)
    assert len(page.images) == 3  # ROC curves, privacy and utility per epoch, regurgitation
    for source in page.images:
        header, _, payload = source.partition(",")
        assert header == "data:image/png;base64" and base64.b64decode(payload).startswith(b"\x89PNG\r\n\x1a\n")
        assert len(payload) > 5000
    assert {"checks", "summary", "attacks", "sizes"} <= set(page.tables) and page.rows >= 10
    text = " ".join(page.text)
    assert text.index("Verdict of the sharing policy") < text.index("Summary")  # the verdict comes first
    assert "not resolved (needs ≥ 1000 non-members)" in text

    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, "--window-size=1200,2400", f"--screenshot={shot}", url], capture_output=True, timeout=120)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert (pixels.mean(axis=-1) < 0.9).mean() > 0.02  # text, tables and plots drawn, not a blank page
