"""Atomic orbax checkpoints of a fit (device state + host loop state) and resume.

Layout: ``OUT/checkpoints/<step>/{state, host}``; orbax writes each step into a
temporary folder and renames it when complete, so a killed run leaves either the
previous checkpoint or the new one, never half of one. The newest two are kept.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax

from helmholtz_pinn.config import Config
from helmholtz_pinn.errors import CheckpointError
from helmholtz_pinn.loop import HostState
from helmholtz_pinn.train import TrainState

# fields that may differ between the run that saved and the run that resumes
RESUMABLE_CHANGES = ("steps", "checkpoint_every")


class Checkpointer:
    """Saves every ``every`` blocks (as ``fit``'s ``on_block``) and restores the newest."""

    def __init__(self, directory: str | Path, config: Config, every: int):
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self.directory = Path(directory).absolute()
        self.config = config
        self.every = every
        self.manager = ocp.CheckpointManager(
            self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=2)
        )

    def __call__(self, state: TrainState, host: HostState) -> None:
        """Save every ``every`` blocks and after the last block."""
        done = len(host.history)
        last = -(-self.config.steps // self.config.sync_interval)
        if done % self.every == 0 or done >= last:
            self.save(state, host)

    def save(self, state: TrainState, host: HostState) -> None:
        step = int(host.history[-1]["step"]) if host.history else 0
        if step in self.manager.all_steps():
            return
        meta = {"host": host.to_json(), "config": dataclasses.asdict(self.config)}
        self.manager.save(
            step,
            args=self._ocp.args.Composite(
                state=self._ocp.args.StandardSave(state), host=self._ocp.args.JsonSave(meta)
            ),
        )
        self.manager.wait_until_finished()

    def restore(self, like: TrainState) -> tuple[TrainState, HostState] | None:
        """The newest checkpoint shaped like ``like``, or None if there is none."""
        step = self.manager.latest_step()
        if step is None:
            return None
        abstract = jax.tree.map(self._ocp.utils.to_shape_dtype_struct, like)
        try:
            got = self.manager.restore(
                step,
                args=self._ocp.args.Composite(
                    state=self._ocp.args.StandardRestore(abstract),
                    host=self._ocp.args.JsonRestore(),
                ),
            )
        except (ValueError, KeyError, OSError) as err:
            raise CheckpointError(
                f"checkpoint {self.directory / str(step)} cannot be restored ({err}); "
                "remove the folder to start afresh"
            ) from None
        self._check_config(got.host["config"])
        return got.state, HostState.from_json(got.host["host"])

    def _check_config(self, saved: dict) -> None:
        now = dataclasses.asdict(self.config)
        diff = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k) != now[k])
        if diff:
            detail = ", ".join(f"{k}: saved {saved.get(k)!r}, now {now[k]!r}" for k in diff)
            raise CheckpointError(
                f"cannot resume from {self.directory}: settings differ ({detail}); "
                "use the same settings or a new --out folder"
            )

    def close(self) -> None:
        self.manager.close()
