"""True-positive rate at fixed false-positive rates, as a local `evaluate` module.

Low FPRs are what matter for membership inference: an attack that is right about a few people with
almost no false accusations is a real privacy breach even when its AUC is near 0.5.
"""
import datasets
import evaluate

from ppmlm.audit.roc import roc_curve, tpr_at_fpr

_DESCRIPTION = """For each requested level t, the highest true-positive rate among thresholds whose
false-positive rate is at most t (no interpolation between thresholds)."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of float): membership scores, higher meaning "more likely a member".
    references (list of int): 1 for a member, 0 for a non-member.
    levels (list of float): FPR levels, default [0.001, 0.01, 0.1].
Returns:
    tpr_at_fpr (dict): level (as written by str(float)) -> TPR
"""


class TprAtFpr(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references, levels=(0.001, 0.01, 0.1)):
        fpr, tpr, _ = roc_curve(predictions, references)
        return {"tpr_at_fpr": {str(float(level)): tpr_at_fpr(fpr, tpr, level) for level in levels}}
