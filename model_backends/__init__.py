"""The built-in model backends: this folder (``model_backends/``) installs as
the package ``avhb.model_backends``, so ``model_backends/local.py`` is
``avhb.model_backends.local``.

``setup.py`` maps the folder into the ``avhb`` package (the editable install's
finder uses the same mapping), so the wheel puts no generic top-level name
such as ``model_backends`` on ``sys.path``, where it would clash with a
user's own folder or another distribution's.  ``plugin.py`` registers the
backends by kind (the ``backends`` plugin) and the model presets; nothing
there imports a backend.

mypy checks the folder under these names (``scripts/typecheck.py``).
"""
