"""Synthetic third-party task plugins for the start-up benchmark.

``n`` counts task files: a pack of 2,000 writes 2,000 task YAML files
(plus, per folder, its include bases, hook modules and one group file).
``realistic`` packs look like the lm-eval/lmms-eval task folders a pack
author keeps: per folder of 100 task files, a two-level include chain
(``_defaults.yaml`` <- ``_base.yaml``), a hook module of ~40 functions and a
metrics module, 96 single-task files that include the base and name a
``process_docs`` hook, four families of 10 tasks each declared once with
``expand`` (so a folder defines 136 tasks), and a group over the folder.
``plain`` packs are one self-contained file per task (no include, no hook).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PER_FOLDER = 100  # task files per folder
FAMILIES, FAMILY_SIZE = 4, 10  # of those, expanded family files and the tasks each defines
LANGS = ["ar", "bn", "de", "en", "es", "fr", "hi", "ja", "ko", "zh"]

_DEFAULTS = """\
# Shared generation and media defaults of every task in this folder.
output_type: generate_until
generation_kwargs:
  max_tokens: 256
  temperature: 0.0
  top_p: 1.0
media:
  video: "{{video}}"
  frames: 16
  max_side: 448
  audio_in_video: true
  budget: clamp
metadata:
  version: 2
"""

_BASE = """\
include: _defaults.yaml
dataset_path: bench/{folder}
sample_data: sample
doc_id: id
data_loader: !function hooks.load
doc_to_text: !function hooks.doc_to_text
doc_to_target: answer
system_prompt: "You are a careful assistant. Answer with the letter of the option only."
filter_list:
  - filter: strip
metric_list:
  - metric: exact_match
  - function: metrics.judged_score
    name: judged
    fields: {{question: doc.question, reference: target, response: extracted}}
judges:
  scorer:
    default: litellm:gemini/gemini-2.5-flash
    prompt: "Question: {{{{question}}}}\\nReference: {{{{reference}}}}\\nResponse: {{{{response}}}}\\nScore 0, 1 or 2."
    parser: score_0_2
    retries: 2
"""

_SINGLE = """\
include: _base.yaml
task: bench_{folder}_t{j:03d}
tag: [bench_{folder}, subset_{k}]
description: "Synthetic task {j} of folder {folder}: multiple-choice video QA, subset {k}"
dataset_kwargs:
  data_files: subset_{k}.jsonl
  split: test
process_docs: !function hooks.process_{k}
breakdown: [category]
"""

_FAMILY_HEAD = """\
# One task per language, declared once.
include: _base.yaml
task: bench_{folder}_f{f}_${{lang}}
tag: [bench_{folder}, family_{f}]
description: "Family {f} of folder {folder}, language ${{lang}}"
expand:
"""

_FAMILY_TAIL = """\
dataset_kwargs:
  language: ${lang}
  data_files: "family_${lang}.jsonl"
report: {family: "bench_f", label: "${lang}", axis: language}
"""


def _hooks_source() -> str:
    parts = ['"""Hooks of a synthetic task folder (read by AST at index time; never imported there)."""\n',
             "from __future__ import annotations\n\nimport json\nimport re\nfrom pathlib import Path\n\n",
             "_SPACES = re.compile(r'\\s+')\nLETTERS = 'ABCDEFGH'\n\n\n",
             "def load(task, root):\n    path = Path(root) / 'sample' / 'test.jsonl'\n"
             "    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]\n\n\n",
             "def doc_to_text(doc):\n    options = '\\n'.join(f'{LETTERS[i]}. {o}' for i, o in enumerate(doc['options']))\n"
             "    return f\"{doc['question']}\\n{options}\\nAnswer:\"\n\n\n"]
    for k in range(10):
        parts.append(f"def process_{k}(docs):\n    \"\"\"Keep subset {k}, normalise whitespace.\"\"\"\n"
                     f"    out = []\n    for d in docs:\n        if d.get('subset', {k}) != {k}:\n            continue\n"
                     "        d = dict(d, question=_SPACES.sub(' ', d['question']).strip())\n        out.append(d)\n"
                     "    return out\n\n\n")
    for k in range(28):
        parts.append(f"def helper_{k}(value, scale={k + 1}):\n    if isinstance(value, str):\n"
                     "        return value.strip().lower()\n    return [v * scale for v in value]\n\n\n")
    return "".join(parts)


_METRICS = '''"""Metric hooks of a synthetic task folder."""
from __future__ import annotations


def judged_score(record, ctx):
    verdict = ctx.judges.ask("scorer", {"question": record.doc["question"], "reference": record.target,
                                        "response": record.response or ""})
    return {"judged": None if not verdict.ok else verdict.value / 2}


class Agreement:
    name = "agreement"

    def score(self, record, ctx):
        return {self.name: float(record.response == record.target)}
'''


def write_realistic_folder(folder_dir: Path, folder: str, n: int = PER_FOLDER, hints: bool = True) -> list[str]:
    """One realistic task folder with ``n`` task files (n <= PER_FOLDER; the
    four family files only when n >= 50); returns the task names.
    ``hints=False`` leaves out the report hint (a key older cores do not know)."""
    tail = _FAMILY_TAIL if hints else "".join(ln for ln in _FAMILY_TAIL.splitlines(True) if not ln.startswith("report:"))
    folder_dir.mkdir(parents=True, exist_ok=True)
    (folder_dir / "__init__.py").write_text("")
    (folder_dir / "_defaults.yaml").write_text(_DEFAULTS)
    (folder_dir / "_base.yaml").write_text(_BASE.format(folder=folder))
    (folder_dir / "hooks.py").write_text(_hooks_source())
    (folder_dir / "metrics.py").write_text(_METRICS)
    names = []
    families = FAMILIES if n >= 50 else 0
    for j in range(n - families):
        (folder_dir / f"task_{j:03d}.yaml").write_text(_SINGLE.format(folder=folder, j=j, k=j % 10))
        names.append(f"bench_{folder}_t{j:03d}")
    body = "".join(f"  - {{lang: {lang}}}\n" for lang in LANGS[:FAMILY_SIZE])
    for f in range(families):
        (folder_dir / f"family_{f}.yaml").write_text(_FAMILY_HEAD.format(folder=folder, f=f) + body + tail)
        names += [f"bench_{folder}_f{f}_{lang}" for lang in LANGS[:FAMILY_SIZE]]
    members = "\n".join(f"  - {name}" for name in names)
    (folder_dir / "group.yaml").write_text(f"group: bench_{folder}\ntask:\n{members}\naggregate_metric_list:\n"
                                           "  - metric: exact_match\n    weight_by_size: true\n")
    return names


def write_plain_task(folder_dir: Path, i: int) -> None:
    folder_dir.mkdir(parents=True, exist_ok=True)
    (folder_dir / f"task{i:05d}.yaml").write_text(
        f"task: bench_{i:05d}\ntag: {folder_dir.name}\ndataset_path: bench/data\n"
        f"doc_to_text: \"{{{{question}}}} ({i})\"\ndoc_to_target: answer\n"
        "metric_list:\n  - metric: exact_match\nmetadata:\n  version: 1\n")


@dataclass
class Pack:
    root: Path  # put it on PYTHONPATH
    task_files: int  # task YAML files written (include bases and group files not counted)
    tasks: int  # tasks they define
    tasks_dir: Path


def make_plugin(root: Path, n: int, kind: str = "realistic", name: str = "bench", hints: bool = True) -> Pack:
    """A third-party plugin ``name`` with ``n`` task files, installed as a
    distribution folder."""
    pkg = root / f"{name}_tasks"
    (pkg / "tasks").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks" / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(
        "from avhb.hookspecs import hookimpl\n\n@hookimpl\n"
        f"def avhb_task_packages():\n    return ['{name}_tasks.tasks']\n")
    tasks = n
    if kind == "realistic":
        tasks = 0
        for start in range(0, n, PER_FOLDER):
            folder = f"f{start // PER_FOLDER:04d}"
            tasks += len(write_realistic_folder(pkg / "tasks" / folder, folder, min(PER_FOLDER, n - start),
                                                hints=hints))
    else:
        for i in range(n):
            folder = pkg / "tasks" / f"family{i // 100:03d}"
            if not folder.exists():
                folder.mkdir(parents=True)
                (folder / "__init__.py").touch()
            write_plain_task(folder, i)
    dist = root / f"{name}_tasks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-tasks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[avhb]\n{name} = {name}_tasks.plugin\n")
    return Pack(root, n, tasks, pkg / "tasks")
