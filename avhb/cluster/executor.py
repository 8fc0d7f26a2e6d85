"""Where a run's backends run: ``--executor local`` (default: in this
process) or ``--executor ray[:ADDRESS][,workers=N]`` (a Ray cluster; see
:mod:`avhb.cluster.ray_pool`).

The executor only changes where each backend's calls happen.  The run
folder, the journal, the request keys and the samples stay on the process
that runs ``avhb`` (the driver), so a run can be resumed with either
executor, and its results do not depend on which one made it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from avhb.errors import UserError
from avhb.model.backend import Backend, BackendSpec, create_backend, parse_kv

KINDS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorSpec:
    kind: str = "local"
    address: str | None = None  # ray: "auto", "HOST:PORT", "ray://HOST:10001"; None: RAY_ADDRESS or a new local cluster
    workers: int | None = None  # ray: actors per backend (default: see avhb.cluster.ray_pool)

    @property
    def label(self) -> str:
        return self.kind + (f":{self.address}" if self.address else "")

    def backend_factory(self) -> Callable[[BackendSpec], Backend]:
        """What builds each backend of the run (the model's and every judge's)."""
        if self.kind == "local":
            return create_backend
        from avhb.requirements import check_requirements

        check_requirements(f"--executor {self.label}", (("ray", "ray"),))
        from avhb.cluster.ray_pool import RayPool, connect

        cluster = connect(self)

        def make(spec: BackendSpec) -> Any:
            return RayPool(spec, cluster)

        return make


def parse_executor(text: str | None) -> ExecutorSpec | None:
    """``local``, ``ray``, ``ray:127.0.0.1:6379``, ``ray:auto,workers=4``."""
    if not text:
        return None
    head, _, inline = text.partition(",")
    kind, _, address = head.strip().partition(":")
    if kind not in KINDS:
        raise UserError(f"--executor {text!r}: unknown executor {kind!r} (choose from {', '.join(KINDS)})")
    args = parse_kv(inline)
    unknown = sorted(set(args) - {"workers"})
    if unknown:
        raise UserError(f"--executor {text!r}: unknown option(s) {', '.join(unknown)} (known: workers)")
    workers = args.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UserError(f"--executor {text!r}: workers={workers!r} must be a positive integer")
    if kind == "local":
        if address or workers:
            raise UserError(f"--executor {text!r}: the local executor takes no address or workers")
        return None
    return ExecutorSpec(kind, address.strip() or None, workers)

