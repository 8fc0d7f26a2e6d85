"""A scripted stand-in for ``avhb.score.judges.Judges`` (a test double: it
lives in tests/ and ships in no wheel).

``ScriptedJudges(script)`` answers ``await ask(role, fields)`` from
``script``: either a dict ``role -> callable(fields) -> value`` or a
dict ``role -> list`` of values handed out in order.  A value that is a
``FakeVerdict`` is returned as is; ``None`` or ``UNPARSED`` become a failed
verdict (``ok`` False); anything else an ok verdict with that value.
Every call is logged in ``calls`` as ``(role, fields)``, and the media parts
it carried (``ask(role, fields, media=[...])``) in ``media`` at the same
position; the option texts a multiple-choice metric passes
(``option_texts=``) in ``option_texts``.  A script callable taking two
arguments is called as ``fn(fields, media)``.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

UNPARSED = object()


@dataclass
class FakeVerdict:
    value: Any
    ok: bool = True
    raw: str | None = None
    per_judge: list = field(default_factory=list)


class ScriptedJudges:
    def __init__(self, script: dict[str, Callable[[dict[str, str]], Any] | list[Any]]):
        self.script = {k: (list(v) if isinstance(v, list) else v) for k, v in script.items()}
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.media: list[list[Any]] = []
        self.option_texts: list[dict[str, str] | None] = []

    async def ask(self, role: str, fields: dict[str, str], media: Sequence[Any] = (),
                  option_texts: dict[str, str] | None = None) -> FakeVerdict:
        self.calls.append((role, dict(fields)))
        self.media.append(list(media))
        self.option_texts.append(dict(option_texts) if option_texts else None)
        if role not in self.script:
            raise KeyError(f"no script for judge role {role!r}")
        entry = self.script[role]
        if isinstance(entry, list):
            value = entry.pop(0)
        else:
            takes_media = len(inspect.signature(entry).parameters) >= 2
            value = entry(fields, list(media)) if takes_media else entry(fields)
        if isinstance(value, FakeVerdict):
            return value
        if value is None or value is UNPARSED:
            return FakeVerdict(None, ok=False, raw="(unparsable)")
        return FakeVerdict(value, ok=True, raw=str(value))

    def count(self, role: str | None = None) -> int:
        return sum(1 for r, _ in self.calls if role is None or r == role)


class TableJudges:
    """Judges that answer from a table keyed by (role, the response field):
    a missing entry is an unparsed verdict; every ask is kept in ``calls``."""

    def __init__(self, table: dict[tuple[str, Any], Any]):
        self.table, self.calls = table, []

    async def ask(self, role: str, fields: dict[str, Any], option_texts: Any = None):
        from avhb import Verdict

        self.calls.append((role, dict(fields)))
        value = self.table.get((role, fields["response"]))
        return Verdict(value, value is not None, f"raw {value}", [value])
