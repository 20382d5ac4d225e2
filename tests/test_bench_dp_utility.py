"""bench/dp_utility.py: the ratio of DP over the plain recipe (undefined, not a division error, where the plain recipe
predicts nothing), and --jobs, whose processes each run one (corpus, seed) pair of the same settings over corpora
written once. Nothing is trained here."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import dp_utility  # noqa: E402


def test_ratio_over_seeds_is_the_mean_of_per_seed_ratios():
    mean, low, high = dp_utility.ratio_over_plain([0.30, 0.33, 0.36], [0.40, 0.44, 0.45])
    assert mean == pytest.approx((0.75 + 0.75 + 0.8) / 3, rel=1e-12, abs=1e-12)
    assert low < mean < high


def test_no_ratio_where_the_plain_recipe_predicts_nothing():
    assert dp_utility.ratio_over_plain([0.0, 0.1], [0.0, 0.2]) is None


def test_each_job_runs_one_pair_with_every_other_setting_of_the_bench(tmp_path):
    args = dp_utility.parse_args(["--work", str(tmp_path), "--seeds", "42", "43", "--epsilons", "8", "3", "--epochs", "1",
                                  "--cold", "--jobs", "4", "--set", "model.public.synth_users=400", "train.max_length=64"])
    job = dp_utility.parse_args(dp_utility.job_argv(args, "abstracts", 43))
    assert (job.corpora, job.seeds, job.jobs) == (["abstracts"], [43], 1)
    same = ("work", "abstracts", "synth_users", "documents", "notes_per_user", "epochs", "epsilons", "chunk_level", "cold",
            "set")
    assert {key: getattr(job, key) for key in same} == {key: getattr(args, key) for key in same}


def test_jobs_below_one_are_refused(capsys):
    with pytest.raises(SystemExit):
        dp_utility.parse_args(["--jobs", "0"])
    assert "--jobs 0: at least 1" in capsys.readouterr().err


def test_the_pseudo_user_corpus_is_written_once_and_never_over_another(tmp_path):
    source = tmp_path / "abstracts.csv"
    source.write_text("condition_label,medical_abstract\n" + "".join(f"{i % 3 + 1},abstract number {i}\n" for i in range(30)))
    out = tmp_path / "corpus.jsonl"
    first = dp_utility.pseudo_user_corpus(source, out, 20, 3, 42)
    written = out.stat().st_mtime_ns
    assert dp_utility.pseudo_user_corpus(source, out, 20, 3, 42) == first
    assert out.stat().st_mtime_ns == written
    with pytest.raises(SystemExit, match="is not this corpus"):
        dp_utility.pseudo_user_corpus(source, out, 10, 3, 42)
