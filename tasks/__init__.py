"""The built-in task packs: this folder (``tasks/``) installs as the package
``avhb.tasks``, so ``tasks/have/metrics.py`` is ``avhb.tasks.have.metrics``.

``setup.py`` maps the folder into the ``avhb`` package (the editable install's
finder uses the same mapping), so the wheel puts no generic top-level name
such as ``tasks`` on ``sys.path``, where it would clash with a user's own
folder or another distribution's.  One folder per benchmark (task YAML,
hooks, metrics, sample pack); ``plugin.py`` registers them all as the
``tasks`` plugin, exactly as a third-party pack registers itself.

mypy checks the folder under these names (``scripts/typecheck.py``).
"""
