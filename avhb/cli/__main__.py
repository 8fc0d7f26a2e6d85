"""``python -m avhb.cli``: the ``avhb`` command."""
import sys

from avhb.cli import main

sys.exit(main())
