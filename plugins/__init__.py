"""The built-in metrics and filters: this folder (``plugins/``) installs as
the package ``avhb.plugins``, so ``plugins/metrics/choice.py`` is
``avhb.plugins.metrics.choice``.

``setup.py`` maps the folder into the ``avhb`` package (the editable install's
finder uses the same mapping), so the wheel puts no generic top-level name
such as ``plugins`` on ``sys.path``, where it would clash with a user's own
folder or another distribution's.  ``plugin.py`` registers the metrics and
filters by name (the ``metrics`` plugin); a pack that builds on one imports
the package-level names of ``avhb.plugins.metrics``, not the modules inside.

mypy checks the folder under these names (``scripts/typecheck.py``).
"""
