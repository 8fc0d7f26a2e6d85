"""What a re-run of a command keeps: which settings change the model's calls
and which only how they are made (``setting_kinds``: the one-configuration
rule), when a finished task is kept whole (``finished``: the digest of its
inputs), and the decision made once per run over the folder's run.json
(``decide``)."""
