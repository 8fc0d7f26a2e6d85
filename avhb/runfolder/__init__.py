"""The run folder, the one owner of its files: where each lives
(``layout``), ``run.json`` (``manifest``), ``results.json`` (``results``;
both read through ``json_file``), ``samples/<task>.jsonl`` read back with
its one bad-line policy (``samples``), the atomic writes and temp-file
clean-up (``folder``), ``previous/`` (``previous``), ``journal/``
(``journal``, its key index ``hash_index``) and the ``.lock`` of the
process writing it (``lock``).  Everything else reads and writes a run
folder through these."""
