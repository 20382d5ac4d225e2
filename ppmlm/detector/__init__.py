"""A detector trained on a team's own annotations: a token classifier fine-tuned on the spans annotated in a sample
of its notes (`ppmlm detector train`), measured by folds of users before it is trusted (`ppmlm detector evaluate`),
and run beside the rules as the NER backend `default+detector:DIR` (ppmlm/identifiers/ner/tagger.py, union.py).

A stage above `identifiers`: it reads annotations, builds blacklists to measure itself and writes the directory the
`detector:` backend reads; nothing in `identifiers` imports it.
"""
