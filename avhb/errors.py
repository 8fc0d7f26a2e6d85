"""Errors a user can cause: reported as one line with exit code 2."""


class UserError(Exception):
    """Bad input from the user (flags, YAML, data paths). Exit code 2."""


class SampleError(Exception):
    """One sample cannot be processed (missing or corrupt media...).
    Recorded in that sample's log; the run goes on."""
