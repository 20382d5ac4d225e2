"""Top-1 accuracy of predicting masked whole words, as a local `evaluate` module.

A word split into several subwords counts as right only when every subword's most likely token is the
original one: predicting "hyper" for "hypertension" is not knowing the word.
"""
import datasets
import evaluate

_DESCRIPTION = """Share of masked words whose predicted token ids (argmax per subword) all equal the
original token ids."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of list of int): the predicted token ids of each masked word.
    references (list of list of int): the original token ids of each masked word.
Returns:
    masked_word_accuracy (float), words (int)
"""


class MaskedWordAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Sequence(datasets.Value("int64")),
                "references": datasets.Sequence(datasets.Value("int64")),
            }),
        )

    def _compute(self, predictions, references):
        if not references:
            raise ValueError("no masked words to score")
        for predicted, original in zip(predictions, references):
            if len(predicted) != len(original):
                raise ValueError(f"a word has {len(original)} subwords but {len(predicted)} predictions")
        correct = sum(list(p) == list(r) for p, r in zip(predictions, references))
        return {"masked_word_accuracy": correct / len(references), "words": len(references)}
