"""avhb's version, the one place it is written: ``avhb.__version__`` is this
string, and pyproject.toml's ``[tool.setuptools.dynamic]`` reads it for the
package's metadata (wheel and editable install alike)."""
__version__ = "0.1.0"
