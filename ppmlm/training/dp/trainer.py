"""The DP-SGD step the training loop drives: Opacus's per-sample clipping and noise over Poisson batches,
with the model fixes, the sampler and the ledger of the package's other modules."""
from __future__ import annotations

import math
import warnings

import torch
from opacus.distributed import DifferentiallyPrivateDistributedDataParallel as DPDDP
from opacus.grad_sample import GradSampleModule, GradSampleModuleFastGradientClipping
from opacus.optimizers import get_optimizer_class
from opacus.utils.batch_memory_manager import BatchMemoryManager
from opacus.utils.fast_gradient_clipping_utils import DPTensorFastGradientClipping
from opacus.validators import ModuleValidator
from torch.utils.data import DataLoader

from ppmlm.errors import PPMLMError
from ppmlm.features import FEATURE_COLUMNS
from ppmlm.training.dp.accounting import GROUP_BOUND, PrivacyLedger, calibrate_noise, chunks_per_user, group_bound
from ppmlm.training.dp.config import NORM_ONLY_MODES
from ppmlm.training.dp.model import (
    PerSampleMaskedLMLoss,
    embeddings_tied_and_trained,
    hf_layout,
    train_only,
    unshare_head_bias,
)
from ppmlm.training.dp.sampling import (
    CollateOrNone,
    PoissonChunkSampler,
    PoissonUserSampler,
    cap_chunks_per_user,
    chunks_by_user,
    physical_batches,
    stream_seed,
)
from ppmlm.training.optimizer import adamw


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

    def __init__(self, train, seed: int, model, features, collator, accelerator):
        """`train`: the run's TrainConfig (its DP-SGD settings in `train.dp`, a DPConfig)."""
        dp = train.dp
        self.train, self.seed, self.dp, self.accelerator = train, seed, dp, accelerator
        world, rank = accelerator.num_processes, accelerator.process_index

        self.unit = dp.unit
        if self.unit == "user":  # the unit of privacy is a user: Poisson sampling of users, their chunks drawn per step
            self.users = dict(chunks_per_user(features["user_id"]), max_chunks_per_step=dp.max_chunks_per_user)
            units = self.users["users"]
        else:
            chunks_before = chunks_per_user(features["user_id"])
            features = cap_chunks_per_user(features, dp.max_chunks_per_user, seed)
            self.users = dict(chunks_per_user(features["user_id"]), cap=dp.max_chunks_per_user,
                              max_before_cap=chunks_before["max"])
            units = len(features)
        self.num_chunks = len(features)
        self.sample_rate = min(1.0, train.batch_size / units)
        self.expected_batch = self.sample_rate * units
        self.steps_per_epoch = math.ceil(units / train.batch_size)
        self.noise_multiplier = calibrate_noise(dp, self.sample_rate, train.epochs * self.steps_per_epoch)
        self.physical_batch_size = dp.physical_batch_size or train.batch_size
        secure = secure_generator() if dp.secure_mode else None

        if dp.freeze_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        train_only(model, dp.parameters)
        if dp.grad_sample_mode == "ghost" and embeddings_tied_and_trained(model):
            raise PPMLMError("train.dp.grad_sample_mode=ghost: Opacus's ghost clipping cannot handle word embeddings "
                             "shared with the output projection (tied) while they are trained; set "
                             "train.dp.freeze_embeddings=true, use a model with untied embeddings "
                             "(tie_word_embeddings=false), or grad_sample_mode=fast (which accepts them) or hooks")
        unshare_head_bias(model)
        ModuleValidator.validate(model.train(), strict=True)
        # the embeddings' inputs are token ids: their backward hook firing on outputs only is expected
        warnings.filterwarnings("ignore",
                                message="Full backward hook is firing when gradients are computed with respect to module outputs")
        self.objective = PerSampleMaskedLMLoss(model).to(accelerator.device)
        wrapped = DPDDP(self.objective) if world > 1 else self.objective  # DPDDP: rank 0's weights everywhere
        self.norm_only = dp.grad_sample_mode in NORM_ONLY_MODES
        if self.norm_only:
            self.module = GradSampleModuleFastGradientClipping(wrapped, max_grad_norm=dp.max_grad_norm,
                                                               use_ghost_clipping=dp.grad_sample_mode == "ghost",
                                                               loss_reduction="mean")
        else:
            self.module = GradSampleModule(wrapped, loss_reduction="mean")
        self.module.forbid_grad_accumulation()  # each chunk's gradient is clipped once per step
        inner = adamw(self.objective, train, accelerator.device)
        # fast gradient clipping clips as ghost clipping does (norms, then a reweighted second backward pass)
        optimizer_class = get_optimizer_class(clipping="flat", distributed=world > 1,
                                              grad_sample_mode="ghost" if self.norm_only else dp.grad_sample_mode)
        self.noise_generator = secure or torch.Generator(device=accelerator.device)
        self.optimizer = optimizer_class(
            inner, noise_multiplier=self.noise_multiplier, max_grad_norm=dp.max_grad_norm,
            # Opacus's convention under several processes: each rank divides by its share of the batch
            expected_batch_size=self.expected_batch / world, loss_reduction="mean",
            generator=self.noise_generator, secure_mode=dp.secure_mode,
        )
        self.ledger = PrivacyLedger(self.noise_multiplier, self.sample_rate)
        self.optimizer.attach_step_hook(self.ledger)

        table = features.select_columns(list(FEATURE_COLUMNS))
        if self.unit == "user":
            self.sampler = PoissonUserSampler(list(chunks_by_user(features["user_id"]).values()), self.sample_rate,
                                              self.steps_per_epoch, dp.max_chunks_per_user, seed, rank, world,
                                              generator=secure)
            self.table, self.collator = table, collator
        else:
            self.sampler = PoissonChunkSampler(self.num_chunks, self.sample_rate, self.steps_per_epoch, seed,
                                               rank, world, generator=secure)
            self.loader = DataLoader(table, batch_sampler=self.sampler, collate_fn=CollateOrNone(collator),
                                     num_workers=train.num_workers)
        self.checkpointed = (self.objective, self.optimizer, self.ledger)
        self.precision = "no"  # Opacus's per-chunk gradients and norms, whatever accelerate was launched with
        accelerator.print(self.summary())
        if accelerator.mixed_precision != "no":
            accelerator.print(f"DP-SGD runs in full precision: mixed_precision={accelerator.mixed_precision} is not used")

    def summary(self) -> str:
        dp = self.dp
        origin = ("set by train.dp.noise_multiplier" if dp.noise_multiplier is not None else
                  f"calibrated by {dp.accountant} for epsilon={dp.target_epsilon}")
        final = self.ledger_after(self.train.epochs * self.steps_per_epoch)
        if self.unit == "user":
            drawn = dp.max_chunks_per_user or "all"
            sampled = (f"expected {self.expected_batch:.3g} of {self.users['users']} users per step, each with {drawn} "
                       f"of their chunks (up to {self.users['max']}, mean {self.users['mean']:.2f})")
            unit = "the unit is a user: each user's summed gradient is clipped to C"
        else:
            sampled = f"expected {self.expected_batch:.3g} of {self.num_chunks} chunks per step"
            unit = f"the unit is a chunk: up to {self.users['max']} chunks per user (mean {self.users['mean']:.2f})"
        return (f"DP-SGD: sigma={self.noise_multiplier:.4f} ({origin}), C={dp.max_grad_norm}, q={self.sample_rate:.4g} "
                f"({sampled}, physical batches of {self.physical_batch_size} chunks), {self.steps_per_epoch} steps per "
                f"epoch, {dp.grad_sample_mode}; epsilon after training at delta={dp.delta}: rdp {final['rdp']:.3f}, "
                f"prv {final['prv']:.3f}; {unit}")

    def ledger_after(self, steps: int) -> dict:
        """The epsilon that `steps` steps of this run spend, without touching the run's ledger."""
        ledger = PrivacyLedger(self.noise_multiplier, self.sample_rate)
        for accountant in ledger.accountants.values():
            accountant.history = [(self.noise_multiplier, self.sample_rate, steps)]
        return ledger.epsilon(self.dp.delta)

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)
        if not self.dp.secure_mode:
            self.noise_generator.manual_seed(stream_seed(self.seed, epoch, "noise", self.accelerator.process_index))

    def steps(self):
        if self.unit == "user":
            yield from self.user_steps()
            return
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

    def user_steps(self):
        """One logical batch of sampled users per step; their chunks go through the model `physical_batch_size` at
        a time (masked when drawn, like the chunk-level loader), and an empty draw steps with noise alone."""
        for users in self.sampler:
            if not users:
                stats = self.physical_step(None)
            else:
                stats = self.user_step([(self.collator(self.table.select(chunks).to_list()), slots)
                                        for chunks, slots in physical_batches(users, self.physical_batch_size)])
            loss, masked, tokens, chunks = stats.tolist()
            yield loss, int(masked), int(tokens), int(chunks)

    def user_step(self, physical: list[tuple[dict, list[int]]]) -> torch.Tensor:
        """One logical batch of users, given as physical batches of (collated chunks, user slot of each chunk):
        the per-chunk gradients are summed per user, each user's sum is clipped to C by the optimizer, and after
        the last batch the noise is added and the step taken. A user split over two batches is carried as one
        partial sum, so memory holds at most one physical batch of per-chunk gradients plus that sum."""
        totals, carried = _zeros(), None
        for index, (batch, slots) in enumerate(physical):
            batch = {k: v.to(self.accelerator.device) for k, v in batch.items()}
            per_sample = self.module(batch["input_ids"], batch["attention_mask"], batch["labels"])
            per_sample.mean().backward()
            local = torch.tensor(slots, device=self.accelerator.device) - slots[0]
            unfinished = index + 1 < len(physical) and physical[index + 1][1][0] == slots[-1]
            sums = []
            for p in self.optimizer.params:
                per_user = p.grad_sample.new_zeros((int(local[-1]) + 1, *p.shape)).index_add_(0, local, p.grad_sample)
                if carried is not None:
                    per_user[0] += carried.pop(0)
                sums.append(per_user)
            carried = [per_user[-1] for per_user in sums] if unfinished else None
            for p, per_user in zip(self.optimizer.params, sums):
                p.grad_sample = per_user[:-1] if unfinished else per_user
            if len(sums[0]) > int(unfinished):  # at least one user finished in this batch: clip and accumulate
                self.optimizer.signal_skip_step(do_skip=index + 1 < len(physical))
                self.optimizer.step()
            self.optimizer.zero_grad()
            totals += torch.tensor([per_sample.detach().sum().item(), (batch["labels"] != -100).sum().item(),
                                    batch["attention_mask"].sum().item(), len(per_sample)], dtype=torch.float64)
        return totals

    def physical_step(self, batch) -> torch.Tensor:
        """Backward on one physical batch, then the optimizer (which clips, and at a logical batch's end adds
        noise and steps). Returns loss sum, masked tokens, tokens and chunks."""
        if batch is None:
            self._zero_gradients()
            stats = _zeros()
        else:
            batch = {k: v.to(self.accelerator.device) for k, v in batch.items()}
            per_sample = self.module(batch["input_ids"], batch["attention_mask"], batch["labels"])
            if self.norm_only:
                DPTensorFastGradientClipping(self.module, self.optimizer, per_sample, "mean").backward()
            else:
                per_sample.mean().backward()
            stats = torch.tensor([per_sample.detach().sum().item(), (batch["labels"] != -100).sum().item(),
                                  batch["attention_mask"].sum().item(), len(per_sample)], dtype=torch.float64)
        self.optimizer.step()
        self.optimizer.zero_grad()
        return stats

    def _zero_gradients(self) -> None:
        """What a backward pass over no chunk leaves: an empty per-sample gradient (hooks) or a zero sum (ghost, fast)."""
        for p in self.optimizer.params:
            if self.norm_only:
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
        for name in ("module", "objective", "optimizer", "loader", "table", "checkpointed"):
            self.__dict__.pop(name, None)

    def epoch_report(self) -> dict:
        """ε spent so far by both accountants, the settings behind it, and its unit: for unit=user the ε of a
        user (patient) itself; for unit=chunk, what the chunk's ε means for the user with most chunks."""
        epsilon = self.ledger.epsilon(self.dp.delta)
        group = self.users["max"]
        if self.unit == "user":
            unit = {"unit": "user", "users": self.users["users"], "chunks_per_user": self.users}
        else:
            unit = {"unit": "chunk", "chunks_per_user": self.users,
                    "group": {"chunks": group, "bound": GROUP_BOUND,
                              **{name: group_bound(eps, self.dp.delta, group) for name, eps in epsilon.items()}}}
        return {
            "epsilon": epsilon,
            "privacy": {
                "delta": self.dp.delta, "accountant": self.dp.accountant, "target_epsilon": self.dp.target_epsilon
                if self.dp.noise_multiplier is None else None, "noise_multiplier": self.noise_multiplier,
                "max_grad_norm": self.dp.max_grad_norm, "sample_rate": self.sample_rate,
                "expected_batch_size": self.expected_batch, "chunks": self.num_chunks, "steps": self.ledger.steps,
                "grad_sample_mode": self.dp.grad_sample_mode, "secure_mode": bool(self.dp.secure_mode), **unit,
            },
        }


def _zeros() -> torch.Tensor:
    return torch.zeros(4, dtype=torch.float64)
