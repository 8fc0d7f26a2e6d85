"""``--executor ray``: the run's pools (the model's, each judge's) live for
the whole run, so pools that together ask for more than the cluster has
would wait for each other forever (a judge pool queued behind the model's
actors: seen as a hang before this check).  The room is counted up front
and a pool that cannot be placed is one line naming what holds the
cluster.  Plain arithmetic: no Ray needed."""
from __future__ import annotations

import pytest

from avhb.errors import UserError
from avhb.cluster.ray_pool import Cluster

CPU = {"num_cpus": 1}


def test_pools_beyond_the_cluster_are_refused_naming_the_holders():
    cluster = Cluster(None, workers=2, nodes=1, gpus=0, cpus=2)
    count = cluster.default_workers(CPU)
    assert count == 2
    cluster.reserve("openai:model", count, CPU)
    with pytest.raises(UserError, match=r"--executor ray: openai:judge on 2 workers needs 2 CPUs \(free: 0 of 2\) "
                                        r"\(held by the run's other backends: openai:model 2 workers\); .*lower "
                                        r"workers=N or add nodes"):
        cluster.reserve("openai:judge", cluster.default_workers(CPU), CPU)


def test_default_workers_fit_what_is_left():
    cluster = Cluster(None, workers=None, nodes=2, gpus=8, cpus=4)
    assert cluster.default_workers(CPU) == 2  # one per node
    cluster.reserve("model", 2, CPU)
    assert cluster.default_workers(CPU) == 2
    cluster.reserve("judge a", 2, CPU)
    assert cluster.default_workers(CPU) == 1  # no room left: one, which reserve refuses
    with pytest.raises(UserError, match="judge b on 1 workers needs 1 CPUs"):
        cluster.reserve("judge b", 1, CPU)
    # GPU engines: as many as the GPUs left hold
    gpu = {"num_cpus": 1, "num_gpus": 4}
    big = Cluster(None, workers=None, nodes=2, gpus=8, cpus=64)
    assert big.default_workers(gpu) == 2
    big.reserve("vllm:model", 2, gpu)
    with pytest.raises(UserError, match=r"one backend instance needs 4 GPUs, the cluster has 8 \(held by the "
                                        r"run's other backends: vllm:model 2 workers\)"):
        big.default_workers(gpu)
    # a cluster of unknown size (no CPU count) does not refuse CPU pools
    open_ended = Cluster(None, workers=None, nodes=3, gpus=0)
    open_ended.reserve("a", open_ended.default_workers(CPU), CPU)
    assert open_ended.default_workers(CPU) == 3
