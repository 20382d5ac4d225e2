"""The `ppmlm` command. Each subcommand is a thin layer over the Python API documented in the README."""
from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import tempfile
from pathlib import Path

from ppmlm.corpus.domains import SYNTHETIC_DOMAINS
from ppmlm.errors import PPMLMError
from ppmlm.identifiers.profiles import DEFAULT_PROFILE, PROFILES
from ppmlm.models import local_models_only
from ppmlm.processes import Terminated, terminated_as_exception


def _synth(args) -> None:
    from ppmlm.corpus.domains import synthetic_records
    from ppmlm.corpus.engine import write_jsonl

    out = Path(args.out)
    if out.is_symlink():  # a dangling link too, which exists() does not see
        raise PPMLMError(f"--out {out}: is a symbolic link; ppmlm synth never writes through one, choose another path")
    if out.exists():
        raise PPMLMError(f"--out {out}: the file exists; ppmlm synth never overwrites one, choose another path")
    if not out.parent.is_dir():
        raise PPMLMError(f"--out {out}: no directory {out.parent}")
    handle, partial = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    os.close(handle)
    try:  # streamed to a file of its own, then put under --out: an interrupted run leaves no half corpus there
        written = write_jsonl(synthetic_records(args.domain, args.users, seed=args.seed), partial)
        _claim(Path(partial), out)
    finally:
        Path(partial).unlink(missing_ok=True)
    users = "patients" if args.domain == "clinical" else "cases"
    print(f"wrote {written} {args.domain} documents of {args.users} synthetic {users} to {out}")


def _claim(written: Path, out: Path) -> None:
    """Puts `written` under the name `out` unless a file of that name appeared meanwhile."""
    try:
        os.link(written, out)  # unlike a rename, fails rather than replace
        return
    except FileExistsError:
        pass
    except OSError:  # a filesystem without hard links
        if not os.path.lexists(out):
            os.replace(written, out)
            return
    raise PPMLMError(f"--out {out}: a file of that name appeared while writing; it was left as it was")


def _peak_rss_mib(who: str) -> float:
    """Peak resident memory of this process, or of its largest ended child process (Linux reports KiB)."""
    usage = resource.getrusage(resource.RUSAGE_SELF if who == "self" else resource.RUSAGE_CHILDREN)
    return usage.ru_maxrss / 1024


def _blacklist(args) -> None:
    from ppmlm.corpus.streaming import FileShards
    from ppmlm.identifiers.blacklist import Blacklist, check_output_dir
    from ppmlm.identifiers.shards import (
        DEFAULT_SHARD_SIZE,
        build_in_shards,
        check_engine,
        check_work_dir,
        remove_work_dir,
    )

    check_output_dir(args.out)  # before minutes of NER, not after
    work_dir = None
    if args.from_dir:
        blacklist = Blacklist.load(args.from_dir).with_k(args.k)
    else:
        if not args.data:
            raise PPMLMError("give --data PATH (or --from DIR to re-threshold a saved blacklist)")
        check_engine(args.engine, args.scheduler)
        work_dir = args.work_dir or args.out.with_name(f".{args.out.name}.shards")
        check_work_dir(work_dir, args.out)
        shards = FileShards(args.data, args.shard_size or DEFAULT_SHARD_SIZE, args.text_column, args.user_column,
                            args.doc_id_column, keep=(args.spans_from, args.gold_field))
        blacklist = build_in_shards(
            shards, k=args.k, n=args.ngram, ner=args.ner, spans_from=args.spans_from, gold_field=args.gold_field,
            casefold=args.casefold, profile=args.profile, engine=args.engine, scheduler=args.scheduler,
            processes=args.n_process, work_dir=work_dir,
        )
    blacklist.save(args.out)
    if work_dir is not None:
        remove_work_dir(work_dir)  # the shard results hold spans: gone once the artifact is saved
    print(blacklist.summary())
    print(f"peak memory: {_peak_rss_mib('self'):,.0f} MiB in this process, "
          f"{_peak_rss_mib('children'):,.0f} MiB in its largest worker process")
    print(f"wrote {args.out} (sensitive: it lists identifiers; never share it)")


def _detector_train(args) -> None:
    from ppmlm.corpus.loading import load_corpus
    from ppmlm.detector.directory import check_out
    from ppmlm.detector.training import TrainingSettings, train_detector

    check_out(args.out)  # before the corpus is read and the encoder loaded
    settings = TrainingSettings.from_options(vars(args))
    settings.check()
    corpus = load_corpus(args.data, args.text_column, args.user_column, args.doc_id_column)
    train_detector(corpus, args.out, spans_from=args.spans_from, model=args.model, settings=settings, where=args.data)


def _detector_evaluate(args) -> None:
    import json

    from ppmlm.corpus.loading import load_corpus
    from ppmlm.detector.evaluation import evaluate_detector, table
    from ppmlm.detector.training import TrainingSettings

    if args.json is not None and (os.path.lexists(args.json) or not args.json.parent.is_dir()):
        raise PPMLMError(f"--json {args.json}: " + ("exists; ppmlm never overwrites a file, choose another path"
                                                     if os.path.lexists(args.json) else f"no directory {args.json.parent}"))
    settings = TrainingSettings.from_options(vars(args))
    settings.check()
    corpus = load_corpus(args.data, args.text_column, args.user_column, args.doc_id_column)
    results = evaluate_detector(corpus, args.folds, spans_from=args.spans_from, model=args.model, settings=settings,
                                k=args.k, profile=args.profile, where=args.data)
    print(table(results))
    if args.json is not None:
        with open(args.json, "x", encoding="utf-8") as handle:  # "x": a file that appeared meanwhile stays as it was
            handle.write(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.json} (counts and shares only)")


def add_detector_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The corpus and training options of `ppmlm detector train` and `evaluate` (defaults: TrainingSettings)."""
    parser.add_argument("--data", required=True, help="annotated corpus: JSONL, CSV, Parquet file or saved datasets directory")
    parser.add_argument("--spans-from", default="phi", help="column of annotated spans, a list of {start, end, label} "
                                                           "per record (default phi)")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--user-column", default="user_id")
    parser.add_argument("--doc-id-column", default="doc_id")
    parser.add_argument("--model", type=Path, help="encoder checkpoint directory with its tokenizer (default: the "
                                                   "offline warm-start encoder, all-MiniLM-L6-v2)")
    parser.add_argument("--epochs", type=positive_int, help="most epochs (default 8)")
    parser.add_argument("--patience", type=positive_int, help="epochs without a lower held-out loss before stopping (1)")
    parser.add_argument("--batch-size", type=positive_int, help="windows per optimizer step (16)")
    parser.add_argument("--lr", type=number_in(0, 1, low_open=True), help="learning rate of the encoder (2e-4)")
    parser.add_argument("--head-lr", type=number_in(0, 1, low_open=True), help="learning rate of the new tagging head (1e-3)")
    parser.add_argument("--max-length", type=integer_from(8, "an integer of at least 8"), help="tokens per window (128)")
    parser.add_argument("--stride", type=integer_from(0, "an integer of at least 0"),
                        help="tokens a window shares with the one before it (32)")
    parser.add_argument("--layers", type=positive_int, help="the encoder's first layers kept (1)")
    parser.add_argument("--held-out", type=number_in(0, 1, low_open=True),
                        help="share of users held out for early stopping and the threshold (0.15)")
    parser.add_argument("--target-recall", type=number_in(0, 1, low_open=True),
                        help="held-out word recall the decision threshold is chosen for (0.99)")
    parser.add_argument("--seed", type=integer_from(0, "an integer of at least 0"), help="seed of the split and training (0)")
    return parser


def _train(args) -> None:
    from ppmlm.pipeline import train_from_overrides

    train_from_overrides(args.overrides, args.config_dir)


def _audit(args) -> None:
    from ppmlm.audit.command import audit_command
    from ppmlm.pipeline import train_reference

    limits = {"max_users_per_side": args.max_users, "max_chunks_per_user": args.max_chunks,
              "max_tokens_per_user": args.max_tokens}
    settings = {key: value or None for key, value in limits.items() if value is not None}  # 0: no limit
    others = {"maskings": args.maskings, "max_length": args.max_length, "batch_size": args.batch_size, "seed": args.seed,
              "identifiers_from": args.identifiers_from, "bootstrap_resamples": args.bootstrap_resamples,
              "lend_population": args.lend_population, "rmia_population_chunks": args.rmia_population,
              "rmia_offline_a": args.rmia_a, "rmia_gamma": args.rmia_gamma, "neighbours": args.neighbours,
              "privacy_probe": args.privacy_probe}
    settings.update({key: value for key, value in others.items() if value is not None})
    if args.mask_each_word:
        settings["mask_each_word"] = True
    columns = {"text_column": args.text_column, "user_column": args.user_column, "doc_id_column": args.doc_id_column}
    audit_command(args.model, args.data, args.blacklist, args.out, reference=args.reference, split=args.split,
                  epoch=args.epoch, columns=columns, settings=settings, train_reference=train_reference)


def _push(args) -> None:
    from ppmlm.sharing import SharingPolicy, push_run
    from ppmlm.sharing.push import refuse_detector

    refuse_detector(args.run_dir)  # before its (absent) config.yaml is looked for
    policy = SharingPolicy.for_run(args.run_dir).with_command_line(args.min_privacy_score, args.max_tpr)
    plan = push_run(args.run_dir, args.repo_id, epoch=args.epoch, local_dir=args.local_dir, private=args.private,
                    dry_run=args.dry_run, force=args.force, policy=policy)
    where = f"--local-dir {args.local_dir}" if args.local_dir else f"{args.repo_id}{' (private)' if args.private else ''}"
    print(f"{'dry run: would export' if args.dry_run else 'exported'} epoch {plan.shared.epoch} of {args.run_dir} to {where}:")
    for name, size in plan.files():
        print(f"  {name:<32} {size:>14,} bytes")
    print(f"sharing policy: {plan.verdict}")
    if plan.failures:
        print("  " + "; ".join(check.describe() for check in plan.failures))
        if args.dry_run and not args.force:
            raise PPMLMError(plan.refusal)
    if plan.destination:
        print(f"wrote {plan.destination}")


def users_or_fraction(value: str) -> int | float:
    """argparse type of --lend-population: a number of users (3) or a fraction of them (0.25); whether the split has
    that many population users is checked with the audit's settings."""
    allowed = "a number of users (an integer of at least 0) or a fraction in [0, 1)"
    for kind in (int, float):
        try:
            number = kind(value)
        except ValueError:
            continue
        if (number >= 0) if kind is int else (0 <= number < 1):
            return number
        raise argparse.ArgumentTypeError(f"expected {allowed}, got {value}")
    raise argparse.ArgumentTypeError(f"expected {allowed}, got {value!r}")


def integer_from(minimum: int, meaning: str):
    """argparse type of an integer option of at least `minimum`: --k 0 or --max-tokens -5 fails with one line naming
    the option, the value and what is allowed (`meaning`), before anything is loaded."""
    def check(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {meaning}, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected {meaning}, got {number}")
        return number
    return check


def number_in(low: float, high: float | None, low_open: bool = False):
    """argparse type of a number option in [low, high] (or (low, ...) when `low_open`; `high` None: no bound)."""
    allowed = (f"a number above {low:g}" if low_open else f"a number of at least {low:g}") if high is None else (
        f"a number in {'(' if low_open else '['}{low:g}, {high:g}]")

    def check(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {value!r}") from None
        if not (number > low if low_open else number >= low) or high is not None and not number <= high:
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {value}")
        return number
    return check


positive_int = integer_from(1, "a positive integer")
limit_or_zero = integer_from(0, "an integer of at least 0 (0: no limit)")
count_or_off = integer_from(0, "an integer of at least 0 (0: the attack is off)")


def add_train_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The arguments of `ppmlm train`, which train.py takes as well."""
    parser.add_argument("--config-dir", type=Path, metavar="DIR",
                        help="your own recipe folder, holding config.yaml and recipe/*.yaml "
                             "(default: the packaged recipes; ./recipes is read only when named here)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. recipe=ppmlm train.epochs=2 +new.key=1")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppmlm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    synth = commands.add_parser("synth", help="write a synthetic corpus (clinical: the embedded default; legal)")
    synth.add_argument("--users", type=positive_int, default=200, help="number of patients, or cases for legal (default 200)")
    synth.add_argument("--domain", choices=SYNTHETIC_DOMAINS, default="clinical",
                       help="clinical notes of patients (default) or legal documents of cases (docs/legal.md)")
    synth.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    synth.add_argument("--seed", type=integer_from(0, "an integer of at least 0 (negative seeds are reserved for the public "
                                                      "warm start's and the DP tuning corpus's synthetic users)"), default=0)
    synth.set_defaults(run=_synth)

    blacklist = commands.add_parser("blacklist", help="find direct and indirect identifiers in a corpus")
    blacklist.add_argument("--data", help="JSONL, CSV, Parquet file or saved datasets directory")
    blacklist.add_argument("--out", type=Path, required=True, help="directory for the blacklist artifact")
    blacklist.add_argument("--k", type=positive_int, default=2,
                           help="a term used by fewer than k users is an indirect identifier")
    blacklist.add_argument("--ngram", type=positive_int, default=1, help="largest n-gram considered as an indirect identifier")
    blacklist.add_argument("--ner", default="default",
                           help="default | none | spacy:NAME_OR_PATH | detector:DIR | presidio[:THRESHOLD] "
                           "(ppmlm[presidio]); several joined by '+' are their union (default+presidio)")
    blacklist.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE,
                           help="balanced: protect identifiers, keep common words; high-recall: protect more (docs/ner.md)")
    blacklist.add_argument("--spans-from", help="corpus column holding identifier spans to protect as well")
    blacklist.add_argument("--gold-field", default="phi", help="column of gold spans to measure coverage against, if present")
    blacklist.add_argument("--text-column", default="text")
    blacklist.add_argument("--user-column", default="user_id")
    blacklist.add_argument("--doc-id-column", default="doc_id")
    blacklist.add_argument("--casefold", action="store_true", help="fold case in terms (for uncased models)")
    blacklist.add_argument("--n-process", type=positive_int, default=None,
                           help="worker processes for the shards, or workers of a local Dask cluster (default: 2 for "
                                "1,000 notes or more when 2 cores are available, else 1)")
    blacklist.add_argument("--shard-size", type=positive_int,
                           help="documents per shard (default 250); memory follows a shard, not the corpus")
    blacklist.add_argument("--engine", default="local",
                           help="local: this machine's processes; dask: a Dask cluster (pip install 'ppmlm[distributed]')")
    blacklist.add_argument("--scheduler", help="with --engine dask: a scheduler address (tcp://HOST:8786), or local "
                                               "to start a cluster of --n-process workers on this machine")
    blacklist.add_argument("--work-dir", type=Path,
                           help="where shard results are kept until the artifact is saved; a killed build run again "
                                "resumes from them (default: .OUT.shards beside --out)")
    blacklist.add_argument("--from", dest="from_dir", help="re-threshold a saved blacklist at a new --k, without reading text")
    blacklist.set_defaults(run=_blacklist)

    detector = commands.add_parser("detector", help="a detector trained on your annotated notes: train it, evaluate it")
    detector_commands = detector.add_subparsers(dest="detector_command", required=True)
    detector_train = add_detector_arguments(detector_commands.add_parser(
        "train", help="fine-tune a token classifier on the annotated spans (also under accelerate launch -m ppmlm)"))
    detector_train.add_argument("--out", type=Path, required=True,
                                help="directory of the detector (new, empty or a detector; sensitive: never share it)")
    detector_train.set_defaults(run=_detector_train)
    detector_evaluate = add_detector_arguments(detector_commands.add_parser(
        "evaluate", help="K folds by user: the rules, the detector and both, measured on users each detector never saw"))
    detector_evaluate.add_argument("--folds", type=integer_from(2, "an integer of at least 2"), default=2)
    detector_evaluate.add_argument("--k", type=positive_int, default=2,
                                   help="the blacklists' k (a term of fewer users is an indirect identifier)")
    detector_evaluate.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE, help="the rules' profile")
    detector_evaluate.add_argument("--json", type=Path, help="also write the figures to this new file")
    detector_evaluate.set_defaults(run=_detector_evaluate)

    train = add_train_arguments(commands.add_parser("train", help="train with a recipe (same as python train.py)"))
    train.set_defaults(run=_train)

    audit = commands.add_parser("audit", help="audit a checkpoint: privacy score, utility, membership-inference attacks, report")
    audit.add_argument("--model", type=Path, required=True, help="checkpoint directory (e.g. runs/ppmlm/checkpoints/epoch-3)")
    audit.add_argument("--data", help="the corpus the run was trained on (JSONL, CSV, Parquet or saved dataset; "
                                       "default: the run's own)")
    audit.add_argument("--blacklist", type=Path, help="the training blacklist directory (default: the run's own)")
    audit.add_argument("--out", type=Path, required=True, help="audit directory (epoch-N.json, scores files, report.html)")
    audit.add_argument("--reference", help="likelihood-ratio reference: population | base | none | a checkpoint directory "
                                           "(default: the run's audit.reference, else none)")
    audit.add_argument("--split", type=Path, help="split.json of the run (default: the run's own, else recomputed)")
    audit.add_argument("--epoch", type=positive_int, help="epoch number to file the results under (default: from epoch-N)")
    audit.add_argument("--max-users", type=limit_or_zero,
                       help="audited users of each side, at most (0: every non-member and as many members)")
    audit.add_argument("--max-chunks", type=limit_or_zero, help="audited chunks per user (0: all)")
    audit.add_argument("--max-tokens", type=limit_or_zero, help="tokens of the chunks audited per user (0: every chunk; "
                                                                "default: the run's audit.max_tokens_per_user, else 320)")
    audit.add_argument("--lend-population", type=users_or_fraction, metavar="N|FRACTION",
                       help="population users audited as non-members too: a number, or a fraction in [0, 1) (default: "
                            "the run's audit.lend_population, else 0); a population reference leaves them out")
    audit.add_argument("--maskings", type=positive_int, help="random maskings per chunk (K)")
    audit.add_argument("--mask-each-word", action="store_true", help="mask each word alone instead (slow, strongest)")
    audit.add_argument("--max-length", type=positive_int, help="tokens per chunk (default: the run's train.max_length, else 512)")
    audit.add_argument("--batch-size", type=positive_int, help="sequences per forward pass")
    audit.add_argument("--seed", type=integer_from(0, "an integer of at least 0"),
                       help="seed of the audited users, chunks, maskings and bootstrap resamples")
    audit.add_argument("--identifiers-from", metavar="COLUMN|DIR",
                       help="independent identifiers to check leaks against: a corpus column of gold spans (e.g. phi) or "
                            "another blacklist directory (default: the run's audit.identifiers_from, else phi when present)")
    audit.add_argument("--bootstrap-resamples", type=positive_int, help="bootstrap resamples of the users for the intervals")
    audit.add_argument("--rmia-population", type=count_or_off, metavar="N",
                       help="population chunks of the reference-calibrated attack (RMIA), at most (0: the attack is off)")
    audit.add_argument("--rmia-a", type=number_in(0, 1),
                       help="RMIA's offline correction a in [0, 1] (default: the run's, else 1)")
    audit.add_argument("--rmia-gamma", type=number_in(0, None, low_open=True),
                       help="RMIA's threshold gamma on the ratio of ratios (default: the run's)")
    audit.add_argument("--neighbours", type=count_or_off, metavar="N",
                       help="neighbours per chunk of the neighbourhood attack (0: off)")
    audit.add_argument("--privacy-probe", choices=("all", "sampled"),
                       help="all: the privacy scores probe every identifier occurrence of every member chunk, and of "
                            "the audited non-members' as the baseline (the default: a run's audit.privacy_probe final or all "
                            "probes in ppmlm audit); sampled: read them from the random maskings of the audited chunks only "
                            "(faster, an estimate)")
    audit.add_argument("--text-column")
    audit.add_argument("--user-column")
    audit.add_argument("--doc-id-column")
    audit.set_defaults(run=_audit)

    push = commands.add_parser("push", help="share an audited checkpoint with its model card, if its audit meets the policy")
    push.add_argument("run_dir", type=Path, help="training run directory (config.yaml, checkpoints/, audit/)")
    push.add_argument("--repo-id", required=True, help="Hugging Face repository ORG/NAME (also names the model in the card)")
    push.add_argument("--epoch", type=positive_int, help="checkpoint epoch to share (default: the last complete one)")
    push.add_argument("--local-dir", type=Path, help="write the export into this new or empty folder instead of uploading")
    push.add_argument("--private", action="store_true", help="create the repository private")
    push.add_argument("--dry-run", action="store_true", help="list the files and the policy verdict; write nothing")
    push.add_argument("--force", action="store_true", help="share even if the audit breaks the policy (the card says so)")
    push.add_argument("--min-privacy-score", help="minimum privacy score, overall, direct and indirect (none: not checked; "
                                                  "default: the run's share.min_privacy_score)")
    push.add_argument("--max-tpr", action="append", metavar="[ATTACK=]VALUE",
                      help="maximum TPR at 1%% FPR of an attack (loss, likelihood_ratio, identifier_count, identifier_share), "
                           "of all without ATTACK=; none: not checked; repeatable (default: share.max_tpr_at_1pct_fpr)")
    push.set_defaults(run=_push)
    return parser


def parse_train_arguments(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Overrides before and after --config-dir alike: argparse stops a `nargs="*"` positional at the first
    option, and would call the overrides after it unrecognized."""
    args, rest = parser.parse_known_args(argv)
    options = [arg for arg in rest if arg.startswith("-")]
    if options or getattr(args, "overrides", None) is None and rest:
        parser.error(f"unrecognized arguments: {' '.join(options or rest)}")
    if rest:
        args.overrides = [*args.overrides, *rest]
    return args


def main(argv=None) -> int:
    args = parse_train_arguments(build_parser(), argv)
    if args.command != "push":  # the one command that talks to the Hub
        local_models_only()
    try:
        with terminated_as_exception():  # `kill` cleans up as Ctrl-C does
            args.run(args)
    except PPMLMError as error:
        print(f"ppmlm {args.command}: error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as stop:
        hint = "; the same command resumes from the last complete checkpoint" if args.command == "train" else ""
        how, code = ("terminated", 128 + signal.SIGTERM) if isinstance(stop, Terminated) else ("interrupted", 130)
        # on a line of its own: a progress bar cut short leaves its line open
        print(f"\nppmlm {args.command}: {how}{hint}", file=sys.stderr)
        return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
