"""Judges: roles a task declares, bound to any backend.

A task's YAML ``judges`` block names its roles (``scorer``, ``entailment``,
``answer_matcher``...) with a prompt template, a strict reply parser and a
default judge.  ``--judge ROLE=BACKEND:NAME[,k=v]`` (repeatable; several for
one role form a panel; ``*=SPEC`` binds every role) rebinds them.  Calls go
through the run's journal (so re-scoring makes no calls), the backend's
concurrency limit and its retries.  A reply that never parses is counted,
never guessed.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backend import Backend, BackendSpec, parse_backend_spec
from .errors import UserError
from .journal import Journal
from .judge_parsers import FORMAT_HINTS, PARSERS, answer_space
from .messages import Message, Request, TextPart
from .templates import render


@dataclass
class Verdict:
    value: Any
    ok: bool
    raw: str | None = None
    per_judge: list[Any] = field(default_factory=list)


@dataclass
class JudgeRole:
    name: str
    prompt: str
    parser: str = "yes_no"
    parser_options: dict[str, Any] = field(default_factory=dict)
    system: str | None = None
    retries: int = 2
    combine: str = "mean"
    defaults: list[str] = field(default_factory=list)
    generation: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.0, "max_tokens": 256})

    @classmethod
    def from_config(cls, name: str, cfg: dict[str, Any], pack_dir: Path) -> "JudgeRole":
        prompt = cfg.get("prompt")
        if cfg.get("prompt_file"):
            path = pack_dir / cfg["prompt_file"]
            if not path.is_file():
                raise UserError(f"judge role {name!r}: prompt_file {path} not found")
            prompt = path.read_text(encoding="utf-8")
        if not prompt:
            raise UserError(f"judge role {name!r} needs a prompt or prompt_file")
        default = cfg.get("default") or []
        gen = {"temperature": 0.0, "max_tokens": 256, **(cfg.get("generation_kwargs") or {})}
        return cls(name, prompt, cfg.get("parser", "yes_no"), dict(cfg.get("parser_options") or {}), cfg.get("system"),
                   int(cfg.get("retries", 2)), cfg.get("combine", "mean"), [default] if isinstance(default, str) else list(default), gen)


def parse_judge_bindings(items: list[str]) -> dict[str, list[BackendSpec]]:
    """``["scorer=openai:gpt-4.1,base_url=...", "scorer=local"]`` -> panel per role."""
    out: dict[str, list[BackendSpec]] = {}
    for item in items or []:
        role, sep, spec = item.partition("=")
        if not sep or not role or not spec:
            raise UserError(f"--judge {item!r}: expected ROLE=BACKEND:NAME[,k=v...]")
        out.setdefault(role.strip(), []).append(parse_backend_spec(spec.strip()))
    return out


@dataclass
class JudgeUsage:
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class Judges:
    """The run-wide judge pool: backends by label, shared journal and usage."""

    def __init__(self, bindings: dict[str, list[BackendSpec]], journal: Journal | None, backend_factory):
        self.bindings = bindings
        self.journal = journal
        self.backend_factory = backend_factory
        self.usage = JudgeUsage()
        self._backends: dict[str, Backend] = {}
        self._limits: dict[str, asyncio.Semaphore] = {}

    def panel(self, role: JudgeRole) -> list[BackendSpec]:
        if role.name in self.bindings:
            return self.bindings[role.name]
        if "*" in self.bindings:
            return self.bindings["*"]
        if role.defaults:
            return [parse_backend_spec(d) for d in role.defaults]
        raise UserError(f"judge role {role.name!r} has no judge: bind one with --judge {role.name}=BACKEND:NAME")

    def backend(self, spec: BackendSpec) -> tuple[Backend, asyncio.Semaphore]:
        """One backend instance (and its concurrency limit) per judge spec."""
        label = json.dumps([spec.kind, spec.name, sorted(spec.args.items())], default=str)
        if label not in self._backends:
            self._backends[label] = self.backend_factory(spec)
            self._limits[label] = asyncio.Semaphore(max(1, getattr(self._backends[label], "concurrency", 1)))
        return self._backends[label], self._limits[label]

    def for_task(self, task: str, roles: dict[str, JudgeRole]) -> "TaskJudges":
        return TaskJudges(self, task, roles)

    def describe(self, roles: dict[str, JudgeRole]) -> dict[str, list[str]]:
        return {name: [s.label for s in self.panel(role)] for name, role in roles.items()}

    async def close(self) -> None:
        for b in self._backends.values():
            await b.aclose()


class TaskJudges:
    """``await judges.ask(role, fields)`` for one task's metrics."""

    def __init__(self, pool: Judges, task: str, roles: dict[str, JudgeRole]):
        self.pool = pool
        self.task = task
        self.roles = roles
        self.failures: Counter[str] = Counter()

    async def ask(self, role: str, fields: dict[str, Any]) -> Verdict:
        if role not in self.roles:
            raise UserError(f"task {self.task!r} uses judge role {role!r} but its YAML does not declare it under 'judges'")
        spec = self.roles[role]
        members = self.pool.panel(spec)
        results = await asyncio.gather(*(self._ask_one(spec, m, fields) for m in members))
        values = [v for v, _ in results]
        raws = [r for _, r in results]
        ok_values = [v for v in values if v is not None]
        if not ok_values:
            self.failures[role] += 1
            return Verdict(None, False, raws[0] if raws else None, values)
        value = _combine(ok_values, spec.combine)
        if value is None:  # a tie under majority: no verdict, counted
            self.failures[role] += 1
            return Verdict(None, False, raws[0], values)
        return Verdict(value, True, raws[0] if len(raws) == 1 else json.dumps(raws, ensure_ascii=False), values)

    async def _ask_one(self, role: JudgeRole, spec: BackendSpec, fields: dict[str, Any]) -> tuple[Any, str | None]:
        backend, limit = self.pool.backend(spec)
        prompt = render(role.prompt, fields)
        messages = ([Message("system", [TextPart(role.system)])] if role.system else []) + [Message("user", [TextPart(prompt)])]
        parser = PARSERS[role.parser]
        raw = None
        for attempt in range(role.retries + 1):
            request = Request(messages=list(messages), generation=dict(role.generation),
                              choices=answer_space(role.parser, role.parser_options))
            request.fields = dict(fields, role=role.name)  # structured inputs for non-LLM judges
            key = _judge_key(backend, request, attempt)
            cached = self.pool.journal.get("judges", key)
            if cached is not None:
                self.pool.usage.cached += 1
                raw, error = cached.get("reply"), cached.get("error")
            else:
                async with limit:
                    response = await backend.generate(request)
                raw, error = response.text, response.error
                usage = self.pool.usage
                usage.calls += 1
                usage.prompt_tokens += response.usage.get("prompt_tokens", 0)
                usage.completion_tokens += response.usage.get("completion_tokens", 0)
                usage.cost += response.cost
                if error is None:  # transport errors are not cached: a re-run retries them
                    self.pool.journal.put("judges", key, {"task": self.task, "role": role.name, "judge": spec.label,
                                                          "reply": raw, "error": None})
            if error is not None:
                return None, f"error: {error}"
            value = parser(raw or "", role.parser_options)
            if value is not None:
                return value, raw
            messages = messages + [Message("assistant", [TextPart(raw or "")]),
                                   Message("user", [TextPart("Your reply could not be parsed. " + FORMAT_HINTS[role.parser])])]
        return None, raw


def _combine(values: list[Any], how: str) -> Any:
    if how == "mean" and all(isinstance(v, (int, float)) for v in values):
        return statistics.fmean(values)
    counts = Counter(values).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def _judge_key(backend: Backend, request: Request, attempt: int) -> str:
    payload = {
        "judge": backend.identity,
        "messages": [[m.role, m.text] for m in request.messages],
        "generation": request.generation,
        "choices": request.choices,
        "fields": request.fields,
        "attempt": attempt,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
