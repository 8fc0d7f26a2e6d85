"""The differential test over lmms-eval 0.7.3's own task folders, as its
wheel ships them (tests/compat/test_real_lmms_eval.py):

* :mod:`.repos`: a few synthetic rows per dataset, in the file layout of the
  Hub repo the task's ``dataset_path`` names (parquet with image and audio
  structs, JSON, zip and tar archives of videos), one function a dataset;
* :mod:`.tasks`: the task folders compared, their modality, and what avhb
  still gets wrong on each (``EXPECTED_TO_FAIL_UNTIL_FIXED``);
* :mod:`.reply`: the scripted model's reply rule (an option letter, a yes/no
  or a word, chosen by a hash of the prompt);
* :mod:`.harness`: both tools run against one local Hub and one logging
  model server, their requests and metrics compared task by task;
  ``python -m tests.compat.real_lmms.harness`` prints the table.
"""
