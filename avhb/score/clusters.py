"""What a task's samples cluster by (YAML ``cluster_key``, lmms-eval's key),
and where a metric's per-sample score is (``score_key``).

``cluster_key`` is one of:

* a template over the sample (``"{{ video }}@{{ start }}"``): the rendered
  text is the cluster;
* a field name (dotted names reach inside: ``meta.video``): the value of
  that key in the metric's per-sample dict when the metric scores a sample
  with a dict holding it (lmms-eval's convention: a ``process_results``
  hook returns ``{"metric": {"score": 1, "videoID": ...}}``), else the
  sample's field of that name.

With ``repeats > 1`` a sample's repeats are always one cluster at least
(they share the document, so a declared key keeps them together; without
one the sample id is the cluster).  Without a key and with one repeat the
samples are independent: no clustered standard error is reported.

A metric's per-sample score is its value in ``record.scores``: a number
(a bool is 0/1), or a dict's ``score_key`` entry (default ``score``, as
lmms-eval reads it).

Records are reduced before a task's summary (``avhb.run.stream.slim``):
:attr:`ClusterKey.fields` names the sample fields the key reads, which the
run keeps with the breakdown fields (a template keeps every field it
names: name a short one where you can).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Hashable

from avhb.errors import SampleError, UserError
from avhb.score.metric import SampleRecord
from avhb.score.stats import as_float
from avhb.taskdef.templates import check_template, is_template, lookup, render

DEFAULT_SCORE_KEY = "score"
MISSING: Any = object()  # a record whose cluster the key does not find


@dataclass(frozen=True)
class ClusterKey:
    spec: str | None = None  # the YAML cluster_key
    score_key: str = DEFAULT_SCORE_KEY
    by_sample: bool = False  # repeats > 1: a sample's repeats cluster together
    # the spec read once: a template, or a plain top-level field (read with dict.get), or a dotted one
    _template: bool = field(default=False, init=False, repr=False, compare=False)
    _plain: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        spec = self.spec
        object.__setattr__(self, "_template", spec is not None and is_template(spec))
        object.__setattr__(self, "_plain", spec is not None and not self._template and "." not in spec)

    @classmethod
    def of(cls, config: Any, repeats: int | None = 1, where: str = "task") -> "ClusterKey":
        """The key a task config (a mapping, or a ``TaskConfig``: anything
        with ``get``) declares (``cluster_key``, ``score_key``),
        for a run of ``repeats`` repeats.  A key that is not a string, or a
        template that does not parse, is a UserError naming ``where``."""
        spec = config.get("cluster_key")
        score_key = config.get("score_key") or DEFAULT_SCORE_KEY
        for name, value in (("cluster_key", spec), ("score_key", score_key)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise UserError(f"{where}: {name} must be a field name or a template, not {value!r}")
        if isinstance(spec, str) and is_template(spec):
            problem = check_template(spec)
            if problem:
                raise UserError(f"{where}: cluster_key: {problem}")
        return cls(spec, str(score_key), (repeats or 1) > 1)

    @property
    def active(self) -> bool:
        """Whether the samples cluster at all (a key, or repeats)."""
        return self.spec is not None or self.by_sample

    @property
    def describe(self) -> str:
        if self.spec is not None:
            return f"cluster_key {self.spec!r}"
        return "sample (its repeats)" if self.by_sample else "none"

    @property
    def fields(self) -> tuple[str, ...]:
        """The top-level sample fields the key reads."""
        if self.spec is None:
            return ()
        if is_template(self.spec):
            from jinja2 import meta

            from avhb.taskdef.templates import environment

            return tuple(sorted(meta.find_undeclared_variables(environment().parse(self.spec))))
        return (self.spec.split(".")[0],)

    def of_record(self, record: SampleRecord, metric: str) -> Hashable:
        """The cluster of ``record`` for ``metric`` (:data:`MISSING` when the
        key finds none; None when the samples do not cluster)."""
        return self.of_line(record.id, record.doc, record.scores.get(metric))

    def of_line(self, sample_id: Any, doc: Mapping[str, Any], value: Any) -> Hashable:
        """The cluster of a sample from its id, document and the metric's
        per-sample value (a samples-file line is read the same way)."""
        spec = self.spec
        if spec is None:
            return ("sample", str(sample_id)) if self.by_sample else None
        if self._template:
            try:
                return render(spec, doc, sample=str(sample_id), where="cluster_key")
            except SampleError:
                return MISSING
        if value is not None and value.__class__ not in NUMBER_TYPES and isinstance(value, Mapping) and spec in value:
            return _hashable(value[spec])
        if self._plain:
            found = doc.get(spec, MISSING)
            return found if found is MISSING or found.__class__ in _SCALARS else _hashable(found)
        try:
            return _hashable(lookup(doc, spec))
        except SampleError:
            return MISSING

    def score(self, value: Any) -> float | None:
        """A per-sample score as a number: the value itself, or a dict's
        ``score_key`` entry."""
        kind = value.__class__
        if kind is float:
            return value if value == value else None  # NaN is no score
        if kind is int or kind is bool:
            return float(value)
        if value is not None and isinstance(value, Mapping):
            return as_float(value.get(self.score_key))
        return as_float(value)


NUMBER_TYPES = frozenset({float, int, bool})
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _hashable(value: Any) -> Hashable:
    if isinstance(value, (list, dict)):
        import json

        return json.dumps(value, sort_keys=True, default=str)
    return value
