"""What a re-run of a command keeps: which settings change the model's calls
and which only how they are made (``setting_kinds``: the one-configuration
rule), when a finished task is kept whole, not run again (``finished``: the
digest of its inputs), and the decision made once per run over the folder's
run.json (``decide``).  Within a task that runs again, a sample already
answered costs nothing: its calls are journal hits in the one call path
(:meth:`avhb.call.caller.Caller.call`)."""
