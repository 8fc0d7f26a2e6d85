"""The run folder, the one owner of its files: ``run.json`` (``manifest``),
``results.json`` (``results``), ``samples/<task>.jsonl`` and the atomic
writes and temp-file clean-up (``folder``), ``journal/`` (``journal``, its
key index ``hash_index``) and the ``.lock`` of the process writing it
(``lock``).  Everything else reads and writes a run folder through these."""
