"""The spot-resume state recorded as soon as a checkpoint appears, not only when the next step begins.

smdebug records its state (:mod:`debugger.storage.state_store`) as a step begins, when the checkpoint files changed
since the last step. A script checkpoints at an epoch's end and then prepares the next epoch (a data loader's
workers, a reload): an instance reclaimed in between leaves a checkpoint no state describes, and the restarted job,
resuming from that checkpoint, numbers its steps from the state before it (measured on examples/mlp: the last epoch
redone as steps 52-77 instead of 78-103, the trial's last 26 steps missing). This thread looks at the checkpoint
directory between steps and records the state the next step's begin would have recorded, once the files have been the
same at two looks in a row (a checkpoint being written, or written to a temporary name and not yet renamed, is not
one the script could resume from); both hold the hook's state lock, so the state is recorded once, with the steps
seen when the checkpoint appeared. What remains: an instance reclaimed within two looks of the checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

LOGGER = logging.getLogger("debugger.hook")
#: How often the checkpoint directory is looked at: an os.walk of a few files, well under a millisecond.
POLL_SECONDS = 0.05


class CheckpointWatch:
    """Calls ``record`` (which records a state when the checkpoint files changed) every ``poll_seconds`` until
    :meth:`stop`."""

    def __init__(self, record: Callable[[], None], poll_seconds: float = POLL_SECONDS):
        self._record = record
        self._poll = poll_seconds
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="debugger-checkpoint-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stopped.wait(self._poll):
            try:
                self._record()
            except Exception as error:  # noqa: BLE001 - the state is also recorded as the next step begins
                LOGGER.warning("the checkpoint state could not be recorded between steps: %s", error)
