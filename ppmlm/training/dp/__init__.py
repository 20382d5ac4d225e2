"""DP-SGD for masked language models with Opacus, one module per concern:

- `model`: what Opacus needs from a Hugging Face masked LM (one row per sequence in every layer: the head's
  shared bias, explicit per-sequence position ids, a per-sample masked-LM loss);
- `sampling`: Poisson sampling of training chunks or of users (`train.dp.unit`), on one process or several,
  the per-user cap, and the packing of a step's users into physical batches;
- `accounting`: RDP and PRV accountants fed the same steps, the noise calibration, and what a chunk-level
  guarantee means for a user (under unit=user the accountants count users: no group bound is needed);
- `trainer`: the private trainer step that the training loop drives (`PrivateTrainer`).

The README's DP-SGD section says what each choice guarantees; the modules say why they are built so.
"""
