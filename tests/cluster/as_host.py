"""``python tests/cluster/as_host.py HOST ARG...``: ``avhb ARG...`` as if this
machine were named HOST (``socket.gethostname``, which the run-folder lock
reads): a second machine of a cluster, for the preemption tests."""
import socket
import sys

if __name__ == "__main__":
    host = sys.argv[1]
    socket.gethostname = lambda: host
    from avhb.cli import main

    sys.exit(main(sys.argv[2:]))
