"""THE call session of a run folder: its journal, its judges and the
model's caller, set up together and closed together.  The evaluator, a
reopened run (:class:`avhb.run.reopen.ReopenedRun`, for pack commands) and
pack commands that ask judges outside a run (MMLongCite's ``build
--mode distract``) all open one, so every call they make goes through the
same journal-backed call path (:mod:`avhb.call.caller`) and is closed the
same way.

    session = CallSession(run_dir / "journal", judge_bindings)
    try:
        session.judges.prepare(roles)
        model = session.model_caller(backend, label="openai:gpt-4.1")
        ...
    finally:
        await session.aclose()
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from avhb.call.caller import Caller, SpendLimit
from avhb.model.backend import Backend, BackendSpec, create_backend
from avhb.runfolder.journal import MODEL_CALLS, Journal
from avhb.score.judges import Judges


class CallSession:
    """A journal (``journal_dir``), the judges of ``judges`` (role ->
    backend specs, as ``--judge`` gives them) and, once asked for, the
    model's caller (module docstring)."""

    def __init__(self, journal_dir: Path, judges: dict[str, list[BackendSpec]] | None = None,
                 backend_factory: Callable[[BackendSpec], Backend] = create_backend, *,
                 replay_identities: dict[str, Any] | None = None):
        self.journal = Journal(Path(journal_dir))
        self.judges = Judges(judges or {}, self.journal, backend_factory, replay_identities=replay_identities)
        self.model: Caller | None = None

    def model_caller(self, backend: Backend | None = None, *, identity: dict[str, Any] | None = None,
                     label: str = "") -> Caller:
        """The caller of the model under test (journal kind ``responses``):
        with ``backend``, or replaying the recorded ``identity`` (no backend)."""
        self.model = Caller(self.journal, MODEL_CALLS, backend, identity=identity, label=label)
        return self.model

    def limit_spend(self, max_cost: float) -> SpendLimit:
        """``--max-cost``: one limit shared by the model's and every judge's
        caller (call it once the judges are prepared)."""
        callers = [self.model] if self.model is not None else []
        limit = SpendLimit(max_cost, [c.usage for c in callers] + [self.judges.usage])
        for caller in callers:
            caller.spend = limit
        self.judges.spend = limit
        for caller in self.judges.callers():
            caller.spend = limit
        return limit

    async def aclose(self) -> None:
        """Close the journal (its last lines synced), then the judges' and
        the model's backends, even when one of them fails."""
        try:
            self.journal.close()
        finally:
            try:
                await self.judges.close()
            finally:
                if self.model is not None:
                    await self.model.aclose()
