"""How the Ray engine spreads a batch over worker processes (:func:`host_plan`): every task it
allows at once has a thread in some host, the hosts fit in the cluster's CPUs, and a host
holds several tasks rather than one process starting per task."""

from __future__ import annotations

import pytest

from reasonix.batch.engines import host_plan, task_cpus


@pytest.mark.parametrize("cpus", [0.5, 1.0, 2.0, 3.0, 8.0, 64.0])
@pytest.mark.parametrize("concurrency", [1, 2, 3, 4, 7, 8, 100])
def test_hosts_hold_every_task_and_fit_in_the_cluster(cpus: float, concurrency: int) -> None:
    plan = host_plan(cpus, concurrency)
    assert plan.hosts * plan.per_host >= concurrency
    assert 1 <= plan.hosts <= concurrency
    assert plan.hosts * plan.cpus <= max(cpus, 0.0001 * plan.hosts) + 1e-9
    # No host asks for more than the shares of a CPU its tasks would have asked one by one.
    assert plan.cpus <= plan.per_host * task_cpus(cpus, concurrency) + 1e-9
    # Threads per host: as few as hold every task (the engine gives each task to the host
    # running the fewest, so no host sits idle while another runs two more).
    assert plan.hosts * (plan.per_host - 1) < concurrency


def test_two_cpus_at_eight_run_in_two_processes_of_four() -> None:
    plan = host_plan(2.0, 8)
    assert (plan.hosts, plan.per_host, plan.cpus) == (2, 4, 1.0)
