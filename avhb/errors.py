"""Errors a user can cause: reported as one line with exit code 2."""


class UserError(Exception):
    """Bad input from the user (flags, YAML, data paths). Exit code 2."""


class SampleError(Exception):
    """One sample cannot be processed (missing or corrupt media...).
    Recorded in that sample's log; the run goes on."""


class EnvironmentFailure(Exception):
    """The machine failed the run (a full disk, an unwritable folder): one
    line, exit code 1.  Finished work stays in the run folder; re-running
    the command resumes it."""


class RunStopped(Exception):
    """The run stopped early or finished over its error budget (a dead
    backend, too many failed samples): one line, exit code 1, after the
    results of what finished were written.  ``results`` is results.json's
    content."""

    def __init__(self, message: str, results: dict | None = None):
        super().__init__(message)
        self.results = results or {}


class Interrupted(Exception):
    """A stop signal (SIGTERM: a scheduler's preemption or ``scancel``;
    SIGUSR1: SLURM's warning before a time limit) ended the run early, after
    what was in flight was written and the run folder's lock released: one
    line, exit code ``128 + signum``; re-running the command resumes."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum = signum
