"""ROC AUC of a membership-inference score, as a local `evaluate` module (never fetched from the Hub)."""
import datasets
import evaluate

from ppmlm.audit.roc import auc, roc_curve

_DESCRIPTION = """Area under the ROC curve of a membership score: the chance that a random member scores
higher than a random non-member (ties count one half). 0.5 is a blind guess, 1.0 a perfect attack."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of float): membership scores, higher meaning "more likely a member".
    references (list of int): 1 for a member, 0 for a non-member.
Returns:
    roc_auc (float)
"""


class RocAuc(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references):
        fpr, tpr, _ = roc_curve(predictions, references)
        return {"roc_auc": auc(fpr, tpr)}
