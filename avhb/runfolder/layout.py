"""Where each file of a run folder lives: the names, and the rule that
names a task's samples file.  Nothing outside :mod:`avhb.runfolder` spells
a run folder's file names or builds their paths.

    RUN/run.json                   the manifest (avhb.runfolder.manifest)
    RUN/results.json               the results (avhb.runfolder.results)
    RUN/report.html                the report (written by avhb.report.html)
    RUN/pooled.json                ``avhb score --pool``'s numbers
    RUN/samples/<task>.jsonl       one line per sample (avhb.runfolder.samples);
                                   ``/`` of a plugin's namespace spelled ``__``
    RUN/journal/<kind>.jsonl       the journal (avhb.runfolder.journal)
    RUN/previous/<stamp>/          an earlier run's results, kept (avhb.runfolder.previous)
    RUN/.lock                      the writer's lock (avhb.runfolder.lock)
"""
from __future__ import annotations

from pathlib import Path

RUN_FILE = "run.json"
RESULTS_FILE = "results.json"
REPORT_FILE = "report.html"
POOLED_FILE = "pooled.json"
SAMPLES_DIR = "samples"
JOURNAL_DIR = "journal"
PREVIOUS_DIR = "previous"
SAMPLES_SUFFIX = ".jsonl"


def run_file(root: Path | str) -> Path:
    return Path(root) / RUN_FILE


def results_file(root: Path | str) -> Path:
    return Path(root) / RESULTS_FILE


def report_file(root: Path | str) -> Path:
    return Path(root) / REPORT_FILE


def pooled_file(root: Path | str) -> Path:
    return Path(root) / POOLED_FILE


def journal_dir(root: Path | str) -> Path:
    return Path(root) / JOURNAL_DIR


def previous_dir(root: Path | str) -> Path:
    return Path(root) / PREVIOUS_DIR


def samples_dir(root: Path | str) -> Path:
    return Path(root) / SAMPLES_DIR


def samples_file_name(task: str) -> str:
    """``<task>.jsonl``, ``/`` of a plugin's namespace spelled ``__``
    (``mypack/shapes`` -> ``mypack__shapes.jsonl``)."""
    return f"{task.replace('/', '__')}{SAMPLES_SUFFIX}"


def samples_path(root: Path | str, task: str) -> Path:
    """``RUN/samples/<task>.jsonl`` (:func:`samples_file_name`)."""
    return samples_dir(root) / samples_file_name(task)


def samples_files(root: Path | str) -> list[Path]:
    """What ``samples/`` holds under a samples file's name, by name (none
    when there is no ``samples/``); an entry that is not a file is listed
    too, for its reader to say it cannot be read."""
    folder = samples_dir(root)
    return sorted(folder.glob(f"*{SAMPLES_SUFFIX}")) if folder.is_dir() else []


def task_of_samples_file(path: Path, known: list[str]) -> str:
    """The task a samples file holds: the one of ``known`` whose file name
    it has, else the file's stem (a task the folder does not describe)."""
    for name in known:
        if samples_file_name(name) == path.name:
            return name
    return path.stem
