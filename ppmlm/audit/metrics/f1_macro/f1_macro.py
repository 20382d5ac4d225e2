"""Macro-averaged F1 of a classifier, as a local `evaluate` module (never fetched from the Hub).

The downstream measure of the paper: each class weighs the same, so a classifier that only learns the
frequent classes scores low even when its accuracy looks good.
"""
import datasets
import evaluate
from sklearn.metrics import f1_score

_DESCRIPTION = """Unweighted mean over classes of F1 = 2 precision recall / (precision + recall); classes are
those present in the predictions or the references, and a class never predicted has F1 0."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of int): predicted class ids.
    references (list of int): true class ids.
Returns:
    macro_f1 (float)
"""


class F1Macro(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references):
        return {"macro_f1": float(f1_score(references, predictions, average="macro", zero_division=0))}
