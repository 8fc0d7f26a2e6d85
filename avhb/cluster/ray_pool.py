"""Backends on a Ray cluster: ``--executor ray[:ADDRESS][,workers=N]``.

Every backend of the run (the model's, each judge's) becomes a
:class:`RayPool`: a :class:`~avhb.model.backend.Backend` whose calls run on
Ray actors.  The caller on the driver (:mod:`avhb.call.caller`) is
unchanged: it computes each request's key, finds finished calls in the
journal, decodes media, and journals every answer as it comes back.  So:

* **one backend instance per actor.**  Each actor (``_Worker``) builds its
  own backend from the spec (a vLLM engine on the GPUs Ray gave it, an API
  client...) and answers ``generate(request)``.  An actor asks for what its
  backend declares in :meth:`Backend.resources` (vLLM: ``num_gpus = TP x
  PP``); without ``workers=N``, a pool has as many actors as the cluster
  has room for (GPU backends: cluster GPUs // GPUs per engine; others: one
  per alive node; a vLLM ``data_parallel_size=N``: N).  The driver also builds one instance of the backend, for
  its identity, capabilities and checks only: it never calls it
  (constructing a backend loads no engine and opens no connection).
* **scheduling.**  A request goes to the live actor with the fewest
  requests in flight; the pool's concurrency is the sum of its actors'
  (each actor takes up to its backend's ``concurrency``).
* **a worker that dies** (SIGKILL, OOM, a lost node: ``RayActorError``)
  has the requests it held re-sent to the other actors: the calls it had
  finished are already in the driver's journal and are kept, the duplicated
  calls are at most what it had in flight.  A request re-sent
  ``MAX_RESENDS`` times (a request that kills every worker it reaches)
  fails its sample with that message instead (a re-run retries it).  Ray
  restarts a dead actor (``max_restarts``); it rejoins the pool when it
  answers a ping.  With no live actor for ``REVIVE_WAIT_S`` the run stops
  (a ``UserError``; re-running the command resumes it).
* **the driver is the single truth.**  Actors write nothing; a killed
  driver resumes with the same command (with or without Ray).  A local
  cluster the driver started dies with it, SIGKILL included
  (:mod:`avhb.cluster.ray_reaper`).
* **progress.**  Every ``REPORT_S`` seconds and at the end the pool prints
  one line with each worker's calls and calls per second.

Workers run the same installation as the driver (avhb, its plugins, the
backend's packages) and read API keys from their own environment (a key
never travels through Ray).
"""
from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from avhb.errors import UserError
from avhb.model.backend import Backend, BackendSpec, create_backend
from avhb.model.messages import Request, Response
from avhb.model.resilience import Failure

MAX_RESENDS = 3  # a request re-sent this many times after worker deaths fails its sample
MAX_RESTARTS = 3  # Ray restarts a dead actor this many times
REVIVE_WAIT_S = 120.0  # with every worker down, how long to wait for one to come back
REPORT_S = 10.0


@dataclass
class Cluster:
    """The connection to the Ray cluster (one per process), and what the
    run's pools have reserved on it.  Every pool's actors live for the whole
    run, so pools that together ask for more CPUs or GPUs than the cluster
    has would wait for each other forever (a judge pool behind the model's):
    :meth:`reserve` refuses that up front."""

    address: str | None
    workers: int | None  # actors per pool, when given
    nodes: int
    gpus: float
    cpus: float = float("inf")
    held: list[tuple[str, int, float, float]] = field(default_factory=list)  # (label, actors, cpus, gpus)

    def _free(self) -> tuple[float, float]:
        return (self.cpus - sum(h[2] for h in self.held), self.gpus - sum(h[3] for h in self.held))

    def default_workers(self, resources: dict[str, float], replicas: int = 1) -> int:
        per = float(resources.get("num_gpus") or 0)
        count = self.workers or (replicas if replicas > 1 else None)
        if count:
            if per > 0 and count * per > self.gpus:
                raise UserError(f"--executor ray: {count} workers x {per:g} GPUs each, but the cluster has "
                                f"{self.gpus:g} GPUs")
            return count
        free_cpus, free_gpus = self._free()
        if per > 0:
            count = int(free_gpus // per)
            if count < 1:
                raise UserError(f"--executor ray: one backend instance needs {per:g} GPUs, the cluster has "
                                f"{self.gpus:g}{self._held_text()}")
            return count
        cpu = float(resources.get("num_cpus") or 0)
        room = int(free_cpus // cpu) if cpu > 0 and free_cpus != float("inf") else self.nodes
        return max(1, min(self.nodes, room))

    def reserve(self, label: str, count: int, resources: dict[str, float]) -> None:
        """Hold ``count`` actors' resources for ``label``'s pool, or refuse
        (``UserError``) when the cluster cannot place them beside the pools
        already held."""
        cpu = count * float(resources.get("num_cpus") or 0)
        gpu = count * float(resources.get("num_gpus") or 0)
        free_cpus, free_gpus = self._free()
        short = [f"{need:g} {kind} (free: {free:g} of {total:g})"
                 for need, free, total, kind in ((cpu, free_cpus, self.cpus, "CPUs"), (gpu, free_gpus, self.gpus, "GPUs"))
                 if need > free + 1e-9]
        if short:
            raise UserError(f"--executor ray: {label} on {count} workers needs {' and '.join(short)}"
                            f"{self._held_text()}; every backend's workers live for the whole run, so lower "
                            "workers=N or add nodes")
        self.held.append((label, count, cpu, gpu))

    def _held_text(self) -> str:
        if not self.held:
            return ""
        return " (held by the run's other backends: " + ", ".join(
            f"{label} {n} workers" for label, n, _, _ in self.held) + ")"


_cluster: Cluster | None = None


def connect(executor: Any) -> Cluster:
    """Join (or, with no address and no ``RAY_ADDRESS``, start) a cluster."""
    global _cluster
    if _cluster is not None:
        return _cluster
    import ray

    address = executor.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:  # a cluster of our own: it goes when this process goes, however (avhb.cluster.ray_reaper)
        from avhb.cluster.ray_reaper import start

        start()
    try:
        # no address: a new local cluster, as documented -- Ray's own default would join whatever
        # /tmp/ray/ray_current_cluster names, a stale head left by an earlier `ray start` included
        # Ray annotates logging_level as int; it takes a level's name too (its own default is "info")
        ray.init(address=address or "local", include_dashboard=False, ignore_reinit_error=True, logging_level="warning",  # type: ignore[arg-type, unused-ignore]
                 namespace="avhb")
    except ConnectionError as exc:
        raise UserError(f"--executor {executor.label}: cannot reach the Ray cluster: {exc}") from None
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    resources = ray.cluster_resources()
    _cluster = Cluster(address, executor.workers, len(nodes), float(resources.get("GPU", 0)),
                       float(resources.get("CPU", 0)))
    print(f"avhb: ray cluster {address or 'started locally'}: {len(nodes)} nodes, "
          f"{resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs", file=sys.stderr)
    return _cluster


class _Worker:
    """One Ray actor holding one backend instance."""

    def __init__(self, spec: BackendSpec):
        self.backend = create_backend(spec)

    def info(self) -> dict[str, Any]:
        import socket

        import ray

        node = ray.get_runtime_context().get_node_id()
        return {"pid": os.getpid(), "host": f"{socket.gethostname()} (node {node[:8]})"}

    async def generate(self, request: Request) -> Response:
        return await self.backend.generate(request)  # one attempt; a failure reaches the caller, which retries

    async def aclose(self) -> None:
        await self.backend.aclose()


@dataclass
class _Slot:
    index: int
    handle: Any
    alive: bool = True
    in_flight: int = 0
    done: int = 0
    deaths: int = 0
    pid: int | None = None
    host: str = ""
    started: float = field(default_factory=time.monotonic)


class RayPool(Backend):
    """See the module docstring."""

    def __init__(self, spec: BackendSpec, cluster: Cluster):
        super().__init__(spec)
        import ray

        self.local = create_backend(spec)  # identity, capabilities, checks; never called
        self.capabilities = self.local.capabilities
        self.retry_policy = self.local.retry_policy  # the caller retries the workers' attempts as the backend's
        self.requires = self.local.requires
        resources = dict(self.local.resources())
        count = cluster.default_workers(resources, int(getattr(self.local, "replicas", 1) or 1))
        cluster.reserve(spec.label, count, {"num_cpus": resources.get("num_cpus", 1), **resources})
        per = max(1, int(getattr(self.local, "concurrency", 1) or 1))
        self.concurrency = per * count
        options = {"num_cpus": resources.get("num_cpus", 1), "num_gpus": resources.get("num_gpus", 0),
                   "max_restarts": MAX_RESTARTS, "max_task_retries": 0, "max_concurrency": max(per, 2),
                   "scheduling_strategy": "SPREAD"}
        actor = ray.remote(_Worker).options(**options)
        self.slots = [_Slot(i, actor.remote(spec)) for i in range(count)]
        self.notes = list(getattr(self.local, "notes", []) or []) + [
            f"ray: {spec.label} on {count} workers ({per} requests each)"]
        self.resent = 0
        self._changed: asyncio.Event | None = None
        self._revivals: set[asyncio.Task] = set()
        self._started = False
        self._reporter: asyncio.Task | None = None

    # -- what the driver's caller reads ---------------------------------------
    @property
    def identity(self) -> dict[str, Any]:
        return self.local.identity  # the same keys as a one-process run: resumable either way

    def describe(self) -> dict[str, Any]:
        return {**self.local.describe(), "executor": {"kind": "ray", "workers": len(self.slots)}}

    def check_media(self, media: Any, task: str) -> None:
        self.local.check_media(media, task)

    def classify(self, exc: BaseException) -> Failure:
        return self.local.classify(exc)

    def resources(self) -> dict[str, float]:
        return self.local.resources()

    # -- calls -----------------------------------------------------------------
    async def _start(self) -> None:
        self._started = True
        self._changed = asyncio.Event()
        for slot in self.slots:
            await self._introduce(slot)
        self._reporter = asyncio.ensure_future(self._report_every())

    async def _introduce(self, slot: _Slot) -> None:
        import ray

        try:
            info = await slot.handle.info.remote()
        except ray.exceptions.RayActorError as exc:
            raise UserError(f"ray worker {slot.index} for {self.spec.label} did not start: "
                            f"{_first_line(exc)}") from None
        slot.pid, slot.host = info["pid"], info["host"]
        print(f"avhb: ray worker {slot.index} for {self.spec.label}: pid {slot.pid} on {slot.host}", file=sys.stderr)

    async def generate(self, request: Request) -> Response:
        import ray

        if not self._started:
            await self._start()
        for _ in range(MAX_RESENDS + 1):
            slot = await self._pick()
            slot.in_flight += 1
            try:
                response = await slot.handle.generate.remote(request)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                self._down(slot, exc)
                self.resent += 1
                continue
            except ray.exceptions.RayTaskError as exc:  # the worker's backend raised: the caller classifies it
                cause = getattr(exc, "cause", None)
                if isinstance(cause, Exception):
                    raise cause from None
                return Response(text="", error=f"ray worker {slot.index}: {_first_line(exc)}")
            finally:
                slot.in_flight -= 1
            slot.done += 1
            return response
        return Response(text="", error=f"ray: the worker holding this request died {MAX_RESENDS + 1} times")

    async def _pick(self) -> _Slot:
        deadline = time.monotonic() + REVIVE_WAIT_S
        assert self._changed is not None
        while True:
            live = [s for s in self.slots if s.alive]
            if live:
                return min(live, key=lambda s: (s.in_flight, s.index))
            left = deadline - time.monotonic()
            if left <= 0:
                raise UserError(f"every ray worker for {self.spec.label} died and none came back in "
                                f"{REVIVE_WAIT_S:.0f} s; finished calls are in the journal: re-run the command")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=left)
            except asyncio.TimeoutError:
                pass

    def _down(self, slot: _Slot, exc: BaseException) -> None:
        if not slot.alive:
            return
        slot.alive = False
        slot.deaths += 1
        print(f"avhb: ray worker {slot.index} for {self.spec.label} (pid {slot.pid}) died: {_first_line(exc)}; "
              f"{slot.in_flight} requests in flight are re-sent to the others", file=sys.stderr)
        task = asyncio.ensure_future(self._revive(slot))
        self._revivals.add(task)
        task.add_done_callback(self._revivals.discard)

    async def _revive(self, slot: _Slot) -> None:
        """Wait for Ray's restart of the actor; it rejoins when it answers."""
        import ray

        deadline = time.monotonic() + REVIVE_WAIT_S
        while time.monotonic() < deadline:
            try:
                info = await asyncio.wait_for(slot.handle.info.remote(), timeout=10)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError, asyncio.TimeoutError):
                await asyncio.sleep(1.0)
                continue
            slot.pid, slot.host, slot.alive = info["pid"], info["host"], True
            print(f"avhb: ray worker {slot.index} for {self.spec.label} is back: pid {slot.pid} on {slot.host}",
                  file=sys.stderr)
            if self._changed is not None:
                self._changed.set()
            return

    # -- progress --------------------------------------------------------------
    def throughput_line(self) -> str:
        now = time.monotonic()
        parts = []
        for s in self.slots:
            rate = s.done / max(now - s.started, 1e-9)
            state = "" if s.alive else " down"
            parts.append(f"w{s.index}{state} {s.done} calls {rate:.1f}/s")
        tail = f"; {self.resent} re-sent" if self.resent else ""
        return f"[ray {self.spec.label}] " + " | ".join(parts) + tail

    async def _report_every(self) -> None:
        while True:
            await asyncio.sleep(REPORT_S)
            if any(s.in_flight for s in self.slots):
                print(self.throughput_line(), file=sys.stderr)

    async def aclose(self) -> None:
        import ray

        if self._reporter is not None:
            self._reporter.cancel()
        for task in list(self._revivals):
            task.cancel()
        if self._started:
            print(self.throughput_line(), file=sys.stderr)
        for slot in self.slots:
            try:
                if slot.alive and self._started:
                    await asyncio.wait_for(slot.handle.aclose.remote(), timeout=10)
            except Exception:  # a worker already gone has nothing to close
                pass
            ray.kill(slot.handle, no_restart=True)
        await self.local.aclose()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
