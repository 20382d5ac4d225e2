"""Best membership advantage max(TPR - FPR), as a local `evaluate` module.

Yeom et al.'s membership advantage (Jagannatha et al. call it the empirical privacy leakage) at the
attacker's best threshold; it is also the largest gap between the members' and non-members' score
distributions (Kolmogorov-Smirnov statistic).
"""
import datasets
import evaluate

from ppmlm.audit.roc import advantage, roc_curve

_DESCRIPTION = """max over thresholds of TPR - FPR: 0 for a blind guess, 1 for a perfect attack."""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of float): membership scores, higher meaning "more likely a member".
    references (list of int): 1 for a member, 0 for a non-member.
Returns:
    advantage (float)
"""


class Advantage(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("float64"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references):
        fpr, tpr, _ = roc_curve(predictions, references)
        return {"advantage": advantage(fpr, tpr)}
