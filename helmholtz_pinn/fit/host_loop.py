"""The host loop: blocks on the device, schedules and roll-backs between them.

``run`` runs the plan's Adam steps as compiled blocks of ``sync_interval`` steps and reads
each block's losses once ("deferred loss"); every step trains. Between blocks, per member:
a non-finite or exploding loss rolls back to the last good state with that member's rate
halved; after the PDE warm-up a reduce-on-plateau schedule sets the rate and stops a
member that no longer improves. The loop is the same for every layout: it sees a state
(with a leading member axis when ``members`` > 0) and a compiled block. A first SIGINT
(Ctrl-C) lets the current block finish and raises
:class:`~helmholtz_pinn.errors.Interrupted` with the last good state (a second one
interrupts at once); SIGTERM does the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import threading
import time
from collections.abc import Callable

import numpy as np

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import DivergenceError, Interrupted
from helmholtz_pinn.fit.plan import Plan
from helmholtz_pinn.pinn.train import LOSS_NAMES, TrainState, set_learning_rate

EXPLODE_FACTOR = 1e4  # a block whose mean loss exceeds this times the best so far diverged


@dataclasses.dataclass
class Plateau:
    """Reduce-on-plateau on the block-mean loss (host side, between blocks).

    ``stopped`` becomes True when the loss stalls for ``plateau_patience`` blocks with the
    rate already at ``min_lr`` (early stop).
    """

    lr: float
    best: float = math.inf
    wait: int = 0
    stopped: bool = False

    def update(self, loss: float, cfg: Config) -> float:
        if loss < self.best * 0.99:
            self.best, self.wait = loss, 0
        else:
            self.wait += 1
            if self.wait >= cfg.plateau_patience:
                self.stopped = self.lr <= cfg.min_lr
                self.lr, self.wait = max(self.lr * cfg.plateau_factor, cfg.min_lr), 0
        return self.lr


@dataclasses.dataclass
class HostState:
    """What the host loop carries between blocks (saved with checkpoints)."""

    plateaus: list[Plateau]
    retries: list[int]
    history: list[dict]
    elapsed_s: float = 0.0

    @classmethod
    def new(cls, cfg: Config, members: int) -> HostState:
        return cls([Plateau(cfg.learning_rate) for _ in range(members)], [0] * members, [])

    def rates(self) -> np.ndarray:
        """Current rate per member; 0 for stopped members (Adam then leaves them fixed)."""
        return np.array([0.0 if p.stopped else p.lr for p in self.plateaus])

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> HostState:
        return cls(
            [Plateau(**p) for p in d["plateaus"]],
            list(d["retries"]),
            list(d["history"]),
            float(d.get("elapsed_s", 0.0)),
        )


def run(
    state: TrainState,
    problem,
    block: Callable,
    plan: Plan,
    *,
    members: int = 0,
    host: HostState | None = None,
    callback: Callable[[dict], bool | None] | None = None,
    on_block: Callable[[TrainState, HostState], None] | None = None,
    progress: bool | str = True,
) -> tuple[TrainState, list[dict]]:
    """Run ``plan.steps / sync_interval`` calls of ``block(state, problem)`` (the plan's
    Adam steps, :class:`helmholtz_pinn.fit.plan.Plan`; the schedule's settings are its
    ``config``'s); read the losses once per block.

    ``members``: 0 for one fit, else the leading member axis of ``state`` (records then
    hold one value per member). A diverged member rolls every member back to the last
    good state (the others recompute the same block bit for bit) with its rate halved,
    at most ``max_retries`` times, else :class:`DivergenceError`. ``callback(record)``
    may return True to stop; ``on_block(state, host)`` sees each good block
    (checkpoints); ``host`` resumes a loop. SIGINT or SIGTERM: :class:`Interrupted` after
    the block that is running, carrying the last good (state, host) and the signal's name.
    ``progress``: show a progress bar; a string also labels it.
    """
    batched, cfg = members > 0, plan.config
    n_blocks = plan.steps // cfg.sync_interval
    host = host or HostState.new(cfg, max(members, 1))
    bar = _progress_bar(n_blocks * cfg.sync_interval, progress)
    bar.update(len(host.history) * cfg.sync_interval)
    t0 = time.perf_counter() - host.elapsed_s
    good = state = _with_rates(state, host, batched)
    with _stop_signals() as received:
        while len(host.history) < n_blocks and not all(p.stopped for p in host.plateaus):
            if received:
                bar.close()
                step = int(np.asarray(good.step).max())
                total = n_blocks * cfg.sync_interval
                raise Interrupted(
                    f"interrupted ({received[0]}) at step {step} of {total}",
                    good,
                    host,
                    signal_name=received[0],
                )
            new, losses = block(state, problem)
            losses = np.asarray(losses).reshape(max(members, 1), cfg.sync_interval, 3)
            mean = losses.mean(axis=1)  # the block's one host read
            bad = _diverged(losses, mean, host)
            if bad.any():
                step = int(np.asarray(good.step).max())
                _roll_back(host, np.flatnonzero(bad), step, mean, bar, cfg.max_retries)
                state = _with_rates(good, host, batched)
                continue
            record = _accept(new, host, cfg, mean, losses[:, -1], batched, t0)
            good = state = _with_rates(new, host, batched)
            _show(bar, cfg, mean, host)
            if on_block is not None:
                on_block(state, host)
            if callback is not None and callback(record):
                break
    bar.close()
    return state, host.history


def _diverged(losses: np.ndarray, mean: np.ndarray, host: HostState) -> np.ndarray:
    """Per member: a non-finite loss in the block, or a block mean above
    ``EXPLODE_FACTOR`` times the best so far."""
    best = np.array([p.best for p in host.plateaus])
    return ~np.isfinite(losses).all(axis=(1, 2)) | (mean[:, 0] > EXPLODE_FACTOR * best)


def _accept(new, host: HostState, cfg: Config, mean, last, batched: bool, t0: float) -> dict:
    """Update the plateau schedules (after the PDE warm-up) and append the block's record."""
    step = int(np.asarray(new.step).max())
    if step > cfg.pde_warmup:
        for p, loss in zip(host.plateaus, mean[:, 0], strict=True):
            if not p.stopped:
                p.update(float(loss), cfg)
    host.elapsed_s = time.perf_counter() - t0
    record = _record(step, host, mean, last, batched)
    host.history.append(record)
    return record


def _show(bar, cfg: Config, mean: np.ndarray, host: HostState) -> None:
    bar.update(cfg.sync_interval)
    bar.set_postfix(
        loss=f"{mean[:, 0].max():.3e}",
        pde=f"{mean[:, 2].max():.2e}",
        lr=f"{host.plateaus[0].lr:.1e}",
    )


STOP_SIGNALS = ("SIGINT", "SIGTERM")


@contextlib.contextmanager
def _stop_signals():
    """A list that receives the name of the first SIGINT (Ctrl-C) or SIGTERM (what Slurm,
    Kubernetes and ``timeout`` send) inside the loop; the loop then stops after its
    current block. A second signal acts at once (KeyboardInterrupt for SIGINT, the
    default action for SIGTERM). Outside the main thread (where Python delivers signals)
    the list stays empty."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    numbers = [getattr(signal, name) for name in STOP_SIGNALS]
    previous = {n: signal.getsignal(n) for n in numbers}

    def once(signum, frame):
        received.append(signal.Signals(signum).name)
        for n in numbers:
            signal.signal(n, signal.default_int_handler if n == signal.SIGINT else signal.SIG_DFL)

    for n in numbers:
        signal.signal(n, once)
    try:
        yield received
    finally:
        for n, handler in previous.items():
            signal.signal(n, handler if handler is not None else signal.SIG_DFL)


def _with_rates(state: TrainState, host: HostState, batched: bool) -> TrainState:
    rates = host.rates()
    return set_learning_rate(state, rates if batched else rates[0])


def _roll_back(
    host: HostState, bad: np.ndarray, step: int, mean: np.ndarray, bar, max_retries: int
) -> None:
    """Halve the rate of diverged members, or raise once one has used its retries."""
    for i in bad:
        if host.retries[i] >= max_retries:
            bar.close()
            who = "" if len(host.plateaus) == 1 else f" (member {i})"
            raise DivergenceError(
                f"loss diverged at step {step}{who} ({mean[i, 0]:.3g}) after "
                f"{host.retries[i]} roll-backs; try a smaller learning_rate= than "
                f"{host.plateaus[i].lr:.2g}"
            )
        host.retries[i] += 1
        host.plateaus[i].lr *= 0.5


def _record(step: int, host: HostState, mean, last, batched: bool) -> dict:
    def value(column):
        return [float(v) for v in column] if batched else float(column[0])

    rates = host.rates()
    return {
        "step": step,
        "time_s": host.elapsed_s,
        "lr": [float(r) for r in rates] if batched else float(rates[0]),
        **{n: value(mean[:, k]) for k, n in enumerate(LOSS_NAMES)},
        **{f"last_{n}": value(last[:, k]) for k, n in enumerate(LOSS_NAMES)},
        "retries": list(host.retries) if batched else host.retries[0],  # a copy per record
    }


def member_record(record: dict, rows: int | slice) -> dict:
    """A batched history record restricted to member(s) ``rows`` (scalars unchanged)."""

    def pick(v):
        if not isinstance(v, list):
            return v
        return v[rows] if isinstance(rows, int) else list(v[rows])

    return {k: pick(v) for k, v in record.items()}


def _progress_bar(total: int, enabled: bool | str):
    """A tqdm bar: a notebook widget where ipywidgets is installed, else text redrawn at
    most every few seconds (a notebook without widgets shows each redraw as a line);
    ``enabled`` a string: the bar's label."""
    from tqdm import tqdm

    if not enabled:
        return tqdm(total=total, disable=True)
    try:
        import ipywidgets  # noqa: F401  (tqdm.auto needs it for a notebook widget)
        from tqdm.auto import tqdm
    except ImportError:
        pass
    label = enabled if isinstance(enabled, str) else None
    return tqdm(total=total, desc=label, unit="step", dynamic_ncols=True, mininterval=3.0)
