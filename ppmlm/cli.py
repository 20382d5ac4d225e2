"""The `ppmlm` command. Each subcommand is a thin layer over the Python API documented in the README."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppmlm.errors import PPMLMError


def _synth(args) -> None:
    from ppmlm.corpus.synth import generate_corpus, write_jsonl

    records = generate_corpus(args.users, seed=args.seed)
    write_jsonl(records, args.out)
    print(f"wrote {len(records)} notes of {args.users} synthetic patients to {args.out}")


def _blacklist(args) -> None:
    from ppmlm.corpus.loading import load_corpus
    from ppmlm.identifiers.blacklist import Blacklist, build_blacklist

    if args.from_dir:
        blacklist = Blacklist.load(args.from_dir).with_k(args.k)
    else:
        if not args.data:
            raise PPMLMError("give --data PATH (or --from DIR to re-threshold a saved blacklist)")
        corpus = load_corpus(args.data, args.text_column, args.user_column, args.doc_id_column)
        blacklist = build_blacklist(
            corpus, k=args.k, n=args.ngram, ner=args.ner, spans_from=args.spans_from,
            gold_field=args.gold_field, casefold=args.casefold, n_process=args.n_process,
        )
    blacklist.save(args.out)
    print(blacklist.summary())
    print(f"wrote {args.out} (sensitive: it lists identifiers; never share it)")


def _train(args) -> None:
    from ppmlm.training.cli import train_from_overrides

    train_from_overrides(args.overrides)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ppmlm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    synth = commands.add_parser("synth", help="write the synthetic clinical corpus (the embedded default)")
    synth.add_argument("--users", type=int, default=200, help="number of patients (default 200)")
    synth.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(run=_synth)

    blacklist = commands.add_parser("blacklist", help="find direct and indirect identifiers in a corpus")
    blacklist.add_argument("--data", help="JSONL, CSV, Parquet file or saved datasets directory")
    blacklist.add_argument("--out", type=Path, required=True, help="directory for the blacklist artifact")
    blacklist.add_argument("--k", type=int, default=2, help="a term used by fewer than k users is an indirect identifier")
    blacklist.add_argument("--ngram", type=int, default=1, help="largest n-gram considered as an indirect identifier")
    blacklist.add_argument("--ner", default="default", help="default | none | spacy:NAME_OR_PATH")
    blacklist.add_argument("--spans-from", help="corpus column holding identifier spans to protect as well")
    blacklist.add_argument("--gold-field", default="phi", help="column of gold spans to measure coverage against, if present")
    blacklist.add_argument("--text-column", default="text")
    blacklist.add_argument("--user-column", default="user_id")
    blacklist.add_argument("--doc-id-column", default="doc_id")
    blacklist.add_argument("--casefold", action="store_true", help="fold case in terms (for uncased models)")
    blacklist.add_argument("--n-process", type=int, default=1, help="processes for NER")
    blacklist.add_argument("--from", dest="from_dir", help="re-threshold a saved blacklist at a new --k, without reading text")
    blacklist.set_defaults(run=_blacklist)

    train = commands.add_parser("train", help="train with a recipe (same as python train.py)")
    train.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. recipe=ppmlm train.epochs=2")
    train.set_defaults(run=_train)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except PPMLMError as error:
        print(f"ppmlm {args.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
