"""Keeping a stage's lease while it waits on the model (DESIGN §4, "Locking and recovery").

A lease is short (``NOVELSITE_LEASE_SECONDS``, a minute by default) so that a dead worker's stage
is taken over soon; a live worker keeps it by renewing it from a small thread every third of the
lease while the stage works. Each renewal is one conditional UPDATE on the thread's own connection
(``claims.lease_renew``): no lock is held between renewals, and none while the model answers.
When a renewal finds the lease gone (another worker took the stage over, the run was cancelled),
the heartbeat stops and the stage must not write its results: ``LeaseHeartbeat.check`` raises
``LeaseLost``. A renewal that fails on a database error is only logged: the next one tries again,
and if the lease expires meanwhile the completion's own lease check decides.
"""
from __future__ import annotations

import logging
import threading

from django.db import DatabaseError, connection, connections

from pipeline.errors import LeaseLost
from pipeline.runtime.claims import Claim, lease_renew, lease_seconds

log = logging.getLogger(__name__)


def heartbeat_interval() -> float:
    """Three renewals per lease: a lease survives one renewal lost to a slow database."""
    return max(lease_seconds() / 3, 0.2)


class LeaseHeartbeat:
    """Renews ``claim``'s lease every ``heartbeat_interval()`` seconds between ``start`` and
    ``stop`` (or as a context manager)."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.renewals = 0
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def start(self) -> LeaseHeartbeat:
        # Inside a caller's transaction (an eager stage in a test or a request) the run's rows are
        # not visible to another connection, and the caller cannot lose the stage to a worker: no beat.
        if connection.in_atomic_block:
            return self
        self._thread = threading.Thread(target=self._beat, name=f"lease-heartbeat-run{self.claim.run_id}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def check(self) -> None:
        """Raise ``LeaseLost`` if a renewal found that the lease is no longer this stage's."""
        if self.lost:
            raise LeaseLost(f"the lease of {self.claim.stage} was lost while the stage worked")

    def __enter__(self) -> LeaseHeartbeat:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(heartbeat_interval()):
                if not self._renew():
                    self._lost.set()
                    log.warning("run %s: lease of %s lost (taken over or cancelled); its result will be dropped",
                                self.claim.run_id, self.claim.stage)
                    return
        finally:
            connections.close_all()  # this thread's own connection, never the stage's

    def _renew(self) -> bool:
        try:
            renewed = lease_renew(claim=self.claim)
        except DatabaseError as exc:  # a restart or a cut connection: try again at the next beat
            log.warning("run %s: lease renewal of %s failed: %s", self.claim.run_id, self.claim.stage, exc)
            connection.close()
            return True
        self.renewals += 1
        return renewed
