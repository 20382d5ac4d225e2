"""DP-SGD for masked language models with Opacus: everything private training needs, in one place.

What Opacus needs from a Hugging Face masked LM, and why:

- One row per sequence in every module. Opacus computes a gradient per row of each layer's input, so
  every layer must see the batch as (sequences, ...). Three things in a stock BERT/RoBERTa break that:
  1. the prediction head owns a `bias` that is the same Parameter as `decoder.bias`: Opacus sees a
     parameter on an unsupported module and fails; the shared attribute is removed for training and put
     back for `save_pretrained` (`hf_layout`);
  2. BERT takes its position ids and token type ids from buffers of batch size 1 (Opacus issue 841): the
     per-sample gradient of the position embeddings comes out with one row; we pass explicit per-sequence
     ids (`per_sample_ids`);
  3. `MaskedLMLoss` projects only the masked positions, flattened over the batch (`hidden[target]`), so
     the head's rows are tokens of several sequences. `PerSampleMaskedLMLoss` gathers each sequence's
     masked positions into a (sequences, most masked per sequence, hidden) tensor instead: per-sample
     correct, and still skips the ~85% of positions that carry no label.
- Poisson sampling over training chunks (`PoissonChunkSampler`), split into physical batches by Opacus's
  `BatchMemoryManager`. An empty logical batch still takes a step: zero gradient plus noise, counted by the
  accountant, as DP-SGD's analysis assumes (Opacus's own loader does the same).
- Several processes: each rank samples its share of the chunks with the same rate, so the union is one
  Poisson batch; Opacus's `DistributedDPOptimizer` adds the noise on rank 0 only, divides each rank's sum
  by the expected batch / world size, then averages, so the noise on the averaged gradient has standard
  deviation sigma * C / expected logical batch, as in one process (tested).
- Accounting by RDP and PRV at once (`PrivacyLedger`), checkpointed with the run, so a resumed run keeps
  its history. The unit of privacy is a training chunk; `chunks_per_user` and `group_bound` say what that
  means for a user.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import warnings
from collections import Counter

import torch
import torch.nn.functional as F
from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from opacus.grad_sample import GradSampleModule, GradSampleModuleFastGradientClipping
from opacus.optimizers import get_optimizer_class
from opacus.utils.batch_memory_manager import BatchMemoryManager
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
from opacus.validators import ModuleValidator
from torch.utils.data import DataLoader, Sampler

from ppmlm.errors import PPMLMError
from ppmlm.features import FEATURE_COLUMNS
from ppmlm.training.checks import ACCOUNTANT_NAMES, check_dp_config
from ppmlm.training.loop import parameter_groups
from ppmlm.training.objective import MaskedLMLoss

ACCOUNTANTS = dict(zip(ACCOUNTANT_NAMES, (RDPAccountant, PRVAccountant)))
GROUP_BOUND = "group privacy of (eps, delta)-DP for g chunks: eps_g = g*eps, delta_g = g*exp((g-1)*eps)*delta (loose)"


# --- the model: Opacus-compatible layout and per-sample objective -------------------------------------

def prediction_head(model):
    """The vocabulary head whose `bias` is shared with `decoder.bias` (BERT `cls.predictions`, RoBERTa `lm_head`)."""
    head = getattr(getattr(model, "cls", None), "predictions", None) or getattr(model, "lm_head", None)
    if head is None or not isinstance(getattr(head, "decoder", None), torch.nn.Linear):
        raise PPMLMError(
            f"DP-SGD supports BERT- and RoBERTa-family masked LMs (a `cls.predictions` or `lm_head` head with a "
            f"`decoder`); {type(model).__name__} has neither"
        )
    return head


def unshare_head_bias(model) -> None:
    """Drops the head's alias of `decoder.bias`, so that the bias belongs to the decoder only (Opacus).

    A model with untied weights (tie_word_embeddings=false) holds a separate copy that its forward pass
    never reads: it is frozen instead, and saved as it is.
    """
    head = prediction_head(model)
    bias = head._parameters.get("bias")
    if bias is not None and bias is head.decoder.bias:
        del head._parameters["bias"]
    elif bias is not None:
        bias.requires_grad_(False)


@contextlib.contextmanager
def hf_layout(model):
    """The model as Hugging Face lays it out (head bias aliased again), e.g. for `save_pretrained`."""
    head = prediction_head(model)
    restore = "bias" not in head._parameters
    if restore:
        head.bias = head.decoder.bias
    try:
        yield model
    finally:
        if restore:
            del head._parameters["bias"]


def per_sample_ids(model, input_ids: torch.Tensor) -> dict:
    """Explicit position and token type ids of shape (batch, length) (Opacus issue 841).

    RoBERTa-family embeddings number positions from padding_idx + 1 and skip padding; BERT counts from 0.
    """
    embeddings = model.base_model.embeddings
    padding_idx = getattr(embeddings, "padding_idx", None)
    if padding_idx is not None and hasattr(embeddings, "create_position_ids_from_input_ids"):
        positions = embeddings.create_position_ids_from_input_ids(input_ids, padding_idx)
    else:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids).contiguous()
    ids = {"position_ids": positions}
    if getattr(embeddings, "token_type_embeddings", None) is not None:
        ids["token_type_ids"] = torch.zeros_like(input_ids)
    return ids


class PerSampleMaskedLMLoss(MaskedLMLoss):
    """`MaskedLMLoss` in which every layer sees one row per sequence (same loss, same head saving).

    Each row's masked positions are gathered, in order, to the front of a (batch, K, hidden) tensor, K the
    most masked tokens of any row; the padding slots carry the ignore label.
    """

    def forward(self, input_ids, attention_mask, labels) -> torch.Tensor:
        target = labels != -100
        count = target.sum(dim=1)
        width = max(1, int(count.max()))
        order = torch.argsort((~target).to(torch.int8), dim=1, stable=True)[:, :width]  # masked positions first
        hidden = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                       **per_sample_ids(self.model, input_ids))[0]
        picked = hidden.gather(1, order.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        logits = self.head(picked)
        token_loss = F.cross_entropy(logits.float().transpose(1, 2), labels.gather(1, order), reduction="none")
        return token_loss.sum(dim=1) / count.clamp(min=1)


def embeddings_tied_and_trained(model) -> bool:
    output = model.get_output_embeddings()
    weight = model.get_input_embeddings().weight
    return output is not None and output.weight is weight and weight.requires_grad


# --- sampling -------------------------------------------------------------------------------------------

class PoissonChunkSampler(Sampler):
    """Poisson sampling of training chunks: each chunk joins each logical batch with probability q.

    Under several processes, rank r draws only among its share of the chunks (a permutation shared by all
    ranks, split r::world): the union of the ranks' batches is one Poisson batch of the whole set. Every
    rank yields exactly `steps` batches, empty ones included, so that the ranks step together (Opacus's
    distributed sampler skips empty local batches, which would desynchronize them).
    """

    def __init__(self, num_chunks: int, sample_rate: float, steps: int, seed: int, rank: int = 0,
                 world_size: int = 1, generator: torch.Generator | None = None):
        self.num_chunks, self.sample_rate, self.steps = num_chunks, sample_rate, steps
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.secure = generator is not None  # a secure generator is never reseeded
        self.generator = generator or torch.Generator()
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if not self.secure:
            self.generator.manual_seed(stream_seed(self.seed, epoch, "poisson", self.rank))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        order = torch.randperm(self.num_chunks, generator=torch.Generator().manual_seed(stream_seed(self.seed, self.epoch, "shares")))
        share = order[self.rank :: self.world_size]
        for _ in range(self.steps):
            picked = torch.rand(len(share), generator=self.generator) < self.sample_rate
            yield share[picked].tolist()


def stream_seed(seed: int, epoch: int, stream: str, rank: int = 0) -> int:
    """An independent 63-bit seed per (run seed, epoch, purpose, rank): resuming replays the same draws."""
    digest = hashlib.blake2b(f"{seed}/{epoch}/{stream}/{rank}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class _CollateOrNone:
    """The masking collator, or None for an empty batch (the step then adds noise to a zero gradient)."""

    def __init__(self, collator):
        self.collator = collator

    def __call__(self, rows):
        return self.collator(rows) if rows else None


# --- accounting -----------------------------------------------------------------------------------------

class PrivacyLedger:
    """RDP and PRV accountants fed the same steps; checkpointed with the run (accelerate custom state)."""

    def __init__(self, noise_multiplier: float, sample_rate: float):
        self.noise_multiplier, self.sample_rate = noise_multiplier, sample_rate
        self.accountants = {name: cls() for name, cls in ACCOUNTANTS.items()}

    def __call__(self, optimizer) -> None:
        """Opacus step hook: called once per logical batch, after the noise is added."""
        for accountant in self.accountants.values():
            accountant.step(noise_multiplier=optimizer.noise_multiplier, sample_rate=self.sample_rate)

    @property
    def steps(self) -> int:
        """Noisy steps taken (Opacus's `len(accountant)` counts history entries, runs of equal steps)."""
        return sum(steps for _, _, steps in self.accountants["rdp"].history)

    def epsilon(self, delta: float) -> dict:
        return {name: float(a.get_epsilon(delta)) if a.history else 0.0 for name, a in self.accountants.items()}

    def state_dict(self) -> dict:
        return {name: a.state_dict() for name, a in self.accountants.items()}

    def load_state_dict(self, state: dict) -> None:
        for name, accountant in self.accountants.items():
            accountant.load_state_dict(state[name])
        earlier = {(sigma, q) for sigma, q, _ in self.accountants["rdp"].history} - {(self.noise_multiplier, self.sample_rate)}
        if earlier:  # e.g. resumed with more epochs: sigma was calibrated for a shorter run
            warnings.warn(f"the resumed checkpoint was trained with (sigma, q) = {sorted(earlier)}, this run uses "
                          f"({self.noise_multiplier}, {self.sample_rate}): epsilon accounts for both and may pass "
                          "target_epsilon")


def calibrate_noise(dp_cfg, sample_rate: float, steps: int) -> float:
    """sigma from the config, or the smallest Opacus finds for target_epsilon at delta after `steps` steps."""
    if dp_cfg.noise_multiplier is not None:
        return float(dp_cfg.noise_multiplier)
    with warnings.catch_warnings():  # the search visits sigmas whose best RDP order is off the grid
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        return float(get_noise_multiplier(target_epsilon=dp_cfg.target_epsilon, target_delta=dp_cfg.delta,
                                          sample_rate=sample_rate, steps=steps, accountant=dp_cfg.accountant))


def group_bound(epsilon: float, delta: float, group: int) -> dict:
    """(eps, delta)-DP per chunk read as a guarantee for `group` chunks (one user's); delta_g >= 1 is vacuous."""
    log_delta = math.log(group) + (group - 1) * epsilon + math.log(delta)
    group_delta = math.exp(log_delta) if log_delta < 0 else None
    return {"epsilon": group * epsilon, "delta": group_delta, "vacuous": group_delta is None}


def chunks_per_user(user_ids) -> dict:
    counts = Counter(user_ids)
    return {"users": len(counts), "max": max(counts.values(), default=0),
            "mean": sum(counts.values()) / max(len(counts), 1)}


def cap_chunks_per_user(features, cap: int | None, seed: int):
    """At most `cap` chunks per user, chosen at random from (seed, user): the same on every rank and rerun."""
    if cap is None:
        return features
    by_user: dict[str, list[int]] = {}
    for index, user in enumerate(features["user_id"]):
        by_user.setdefault(user, []).append(index)
    keep = []
    for user, indices in by_user.items():
        if len(indices) > cap:
            g = torch.Generator().manual_seed(stream_seed(seed, 0, f"cap/{user}"))
            indices = [indices[i] for i in torch.randperm(len(indices), generator=g)[:cap].sort().values.tolist()]
        keep.extend(indices)
    return features.select(sorted(keep))


# --- the private trainer --------------------------------------------------------------------------------

def secure_generator():
    """Opacus's secure mode: noise and sampling from /dev/urandom through torchcsprng."""
    try:
        import torchcsprng
    except ImportError as error:
        raise PPMLMError("train.dp.secure_mode=true draws the Poisson batches and the noise from a cryptographically "
                         "secure generator (torchcsprng, as Opacus does); install torchcsprng, or set "
                         "train.dp.secure_mode=false") from error
    return torchcsprng.create_random_device_generator("/dev/urandom")


class PrivateTrainer:
    """DP-SGD steps for the training loop: same interface as the loop's plain trainer.

    `steps()` yields once per logical (Poisson) batch, after the noisy optimizer step, with the loss summed
    over that rank's chunks, the masked and attended token counts, and the number of chunks.
    """

    def __init__(self, cfg, model, features, collator, accelerator):
        dp = cfg.train.dp
        check_dp_config(dp, cfg.train)
        self.cfg, self.dp, self.accelerator = cfg, dp, accelerator
        world, rank = accelerator.num_processes, accelerator.process_index

        chunks_before = chunks_per_user(features["user_id"])
        features = cap_chunks_per_user(features, dp.max_chunks_per_user, cfg.seed)
        self.users = dict(chunks_per_user(features["user_id"]), cap=dp.max_chunks_per_user,
                          max_before_cap=chunks_before["max"])
        self.num_chunks = len(features)
        self.sample_rate = min(1.0, cfg.train.batch_size / self.num_chunks)
        self.expected_batch = self.sample_rate * self.num_chunks
        self.steps_per_epoch = math.ceil(self.num_chunks / cfg.train.batch_size)
        self.noise_multiplier = calibrate_noise(dp, self.sample_rate, cfg.train.epochs * self.steps_per_epoch)
        self.physical_batch_size = dp.physical_batch_size or cfg.train.batch_size
        secure = secure_generator() if dp.secure_mode else None

        if dp.freeze_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        if dp.grad_sample_mode == "ghost" and embeddings_tied_and_trained(model):
            raise PPMLMError("train.dp.grad_sample_mode=ghost: Opacus's ghost clipping cannot handle word embeddings "
                             "shared with the output projection (tied) while they are trained; set "
                             "train.dp.freeze_embeddings=true, use a model with untied embeddings "
                             "(tie_word_embeddings=false), or grad_sample_mode=hooks")
        unshare_head_bias(model)
        ModuleValidator.validate(model.train(), strict=True)
        # the embeddings' inputs are token ids: their backward hook firing on outputs only is expected
        warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with respect to module outputs")
        self.objective = PerSampleMaskedLMLoss(model).to(accelerator.device)
        wrapped = DPDDP(self.objective) if world > 1 else self.objective  # DPDDP: rank 0's weights everywhere
        if dp.grad_sample_mode == "ghost":
            self.module = GradSampleModuleFastGradientClipping(wrapped, max_grad_norm=dp.max_grad_norm,
                                                               use_ghost_clipping=True, loss_reduction="mean")
        else:
            self.module = GradSampleModule(wrapped, loss_reduction="mean")
        self.module.forbid_grad_accumulation()  # each chunk's gradient is clipped once per step
        inner = torch.optim.AdamW(parameter_groups(self.objective, cfg.train), weight_decay=cfg.train.weight_decay)
        optimizer_class = get_optimizer_class(clipping="flat", distributed=world > 1, grad_sample_mode=dp.grad_sample_mode)
        self.noise_generator = secure or torch.Generator(device=accelerator.device)
        self.optimizer = optimizer_class(
            inner, noise_multiplier=self.noise_multiplier, max_grad_norm=dp.max_grad_norm,
            # Opacus's convention under several processes: each rank divides by its share of the batch
            expected_batch_size=self.expected_batch / world, loss_reduction="mean",
            generator=self.noise_generator, secure_mode=dp.secure_mode,
        )
        self.ledger = PrivacyLedger(self.noise_multiplier, self.sample_rate)
        self.optimizer.attach_step_hook(self.ledger)

        self.sampler = PoissonChunkSampler(self.num_chunks, self.sample_rate, self.steps_per_epoch, cfg.seed,
                                           rank, world, generator=secure)
        self.loader = DataLoader(features.select_columns(list(FEATURE_COLUMNS)), batch_sampler=self.sampler,
                                 collate_fn=_CollateOrNone(collator), num_workers=cfg.train.num_workers)
        self.checkpointed = (self.objective, self.optimizer, self.ledger)
        accelerator.print(self.summary())
        if accelerator.mixed_precision != "no":
            accelerator.print(f"DP-SGD runs in full precision: mixed_precision={accelerator.mixed_precision} is not used")

    def summary(self) -> str:
        dp = self.dp
        origin = ("set by train.dp.noise_multiplier" if dp.noise_multiplier is not None else
                  f"calibrated by {dp.accountant} for epsilon={dp.target_epsilon}")
        final = self.ledger_after(self.cfg.train.epochs * self.steps_per_epoch)
        return (f"DP-SGD: sigma={self.noise_multiplier:.4f} ({origin}), C={dp.max_grad_norm}, q={self.sample_rate:.4g} "
                f"(expected {self.expected_batch:.3g} of {self.num_chunks} chunks per step, physical batches of "
                f"{self.physical_batch_size}), {self.steps_per_epoch} steps per epoch, {dp.grad_sample_mode}; "
                f"epsilon after training at delta={dp.delta}: rdp {final['rdp']:.3f}, prv {final['prv']:.3f}; "
                f"the unit is a chunk: up to {self.users['max']} chunks per user (mean {self.users['mean']:.2f})")

    def ledger_after(self, steps: int) -> dict:
        """The epsilon that `steps` steps of this run spend, without touching the run's ledger."""
        ledger = PrivacyLedger(self.noise_multiplier, self.sample_rate)
        for accountant in ledger.accountants.values():
            accountant.history = [(self.noise_multiplier, self.sample_rate, steps)]
        return ledger.epsilon(self.dp.delta)

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)
        if not self.dp.secure_mode:
            self.noise_generator.manual_seed(stream_seed(self.cfg.seed, epoch, "noise", self.accelerator.process_index))

    def steps(self):
        with BatchMemoryManager(data_loader=self.loader, max_physical_batch_size=self.physical_batch_size,
                                optimizer=self.optimizer) as loader:
            totals = _zeros()
            for batch in loader:
                done = self.ledger.steps
                totals += self.physical_step(batch)
                if self.ledger.steps == done:  # no noisy step yet: the logical batch goes on
                    continue
                loss, masked, tokens, chunks = totals.tolist()
                yield loss, int(masked), int(tokens), int(chunks)
                totals = _zeros()

    def physical_step(self, batch) -> torch.Tensor:
        """Backward on one physical batch, then the optimizer (which clips, and at a logical batch's end adds
        noise and steps). Returns loss sum, masked tokens, tokens and chunks."""
        if batch is None:
            self._zero_gradients()
            stats = _zeros()
        else:
            batch = {k: v.to(self.accelerator.device) for k, v in batch.items()}
            per_sample = self.module(batch["input_ids"], batch["attention_mask"], batch["labels"])
            if self.dp.grad_sample_mode == "ghost":
                DPTensorFastGradientClipping(self.module, self.optimizer, per_sample, "mean").backward()
            else:
                per_sample.mean().backward()
            stats = torch.tensor([per_sample.detach().sum().item(), (batch["labels"] != -100).sum().item(),
                                  batch["attention_mask"].sum().item(), len(per_sample)], dtype=torch.float64)
        self.optimizer.step()
        self.optimizer.zero_grad()
        return stats

    def _zero_gradients(self) -> None:
        """What a backward pass over no chunk leaves: an empty per-sample gradient (hooks) or a zero sum (ghost)."""
        for p in self.optimizer.params:
            if self.dp.grad_sample_mode == "ghost":
                p.grad = torch.zeros_like(p)
            else:
                p.grad_sample = p.new_zeros((0, *p.shape))

    def save_pretrained(self, directory) -> None:
        with hf_layout(self.objective.model) as model:
            model.save_pretrained(directory)

    def close(self) -> None:
        """Takes Opacus's hooks off the model and drops the wrapped module (DPDDP under several processes), its
        optimizer and loader: before the process group ends (ppmlm.training.distributed)."""
        self.module.remove_hooks()
        del self.module, self.objective, self.optimizer, self.loader, self.checkpointed

    def epoch_report(self) -> dict:
        """ε spent so far by both accountants, the settings behind it, and what it means for a user."""
        epsilon = self.ledger.epsilon(self.dp.delta)
        group = self.users["max"]
        return {
            "epsilon": epsilon,
            "privacy": {
                "delta": self.dp.delta, "accountant": self.dp.accountant, "target_epsilon": self.dp.target_epsilon
                if self.dp.noise_multiplier is None else None, "noise_multiplier": self.noise_multiplier,
                "max_grad_norm": self.dp.max_grad_norm, "sample_rate": self.sample_rate,
                "expected_batch_size": self.expected_batch, "chunks": self.num_chunks, "steps": self.ledger.steps,
                "grad_sample_mode": self.dp.grad_sample_mode, "secure_mode": bool(self.dp.secure_mode),
                "unit": "chunk", "chunks_per_user": self.users,
                "group": {"chunks": group, "bound": GROUP_BOUND,
                          **{name: group_bound(eps, self.dp.delta, group) for name, eps in epsilon.items()}},
            },
        }


def _zeros() -> torch.Tensor:
    return torch.zeros(4, dtype=torch.float64)
