"""avhb's version, in a module every layer may import (``avhb.__version__``
is this string; pyproject.toml states it for the wheel)."""
__version__ = "0.1.0"
