"""Process plumbing a run needs around it, nothing about evaluation: the
event loop a run's calls share (``event_loop``), the garbage collector's pace
while a run holds many objects (``gc_pace``), and SIGINT/SIGTERM turned into
a clean stop (``interrupt``)."""
