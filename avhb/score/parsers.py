"""Deprecated name of :mod:`avhb.score.judge_replies`, where judge replies are
parsed: importing ``avhb.score.parsers`` gives that module, so code written
against the old name keeps working.  New code imports ``judge_replies``."""
import sys

from avhb.score import judge_replies

sys.modules[__name__] = judge_replies
