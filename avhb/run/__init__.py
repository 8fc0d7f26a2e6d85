"""The engine: a run as a composition of phases (``evaluator``): the plan
before any call (``plan``, ``estimate``), a task at run time (``task``,
``task_prompts``), its samples (``records``, ``stream``, ``reduced``), the
generate and score phases (``generate_phase``, ``score_phase``) with their
drivers and call session (``driver``, ``session``), and what a run adds at
its end (``usage``, ``budget``, ``notes``, ``progress``).  A finished run
folder reopened for a pack command is ``reopen``; ``avhb prepare`` and
``avhb validate`` are ``prepare`` and ``validate``."""
