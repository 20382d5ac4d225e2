"""The NER pipelines (one folder each), installed as the package data of `ppmlm.ner_models`."""
