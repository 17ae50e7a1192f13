"""Where the tasks run: ``local`` (in this process within a concurrency bound, each task on an
event loop of its own in a thread) or
``ray`` (on Ray worker processes, one per CPU, each running several tasks at once in threads, on
a local Ray instance or an existing cluster).

Both engines share a :class:`Ledger`: the batch's budget. A task starts only while the budget
has money left, and its own session budget is what is left at its start, so running tasks
together cannot overspend by more than what the tasks already running may spend. At most
``concurrency`` tasks run at once, and each has at most one model request in flight, so the
batch never has more than ``concurrency`` requests open against the provider's concurrency
limit (DeepSeek: 2,500 for flash, 500 for pro per account).

A task whose Ray worker died (killed, out of memory, node lost) is retried by Ray
(``max_retries``), and so are the other tasks that worker was running; after the last retry it
becomes a row with ``error_class: worker_died``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from reasonix.batch.runner import RunSettings, baselines_dir, preload, run_task
from reasonix.batch.tasks import BatchTask
from reasonix.batch.workspace import prepare_baselines
from reasonix.errors import ConfigError

__all__ = ["ENGINES", "Batch", "Engine", "Ledger", "LocalEngine", "RayEngine"]

OnRow = Callable[[dict[str, Any]], None]
OnStart = Callable[[BatchTask], None]
T = TypeVar("T")


@dataclass
class Ledger:
    """The batch's shared budget (``max_cost`` USD, None for none) and what was left unstarted."""

    max_cost: float | None = None
    spent: float = 0.0
    not_started: list[str] = field(default_factory=list)

    def left(self) -> float | None:
        return None if self.max_cost is None else self.max_cost - self.spent

    def exhausted(self) -> bool:
        left = self.left()
        return left is not None and left <= 0

    def spend(self, row: Mapping[str, Any]) -> None:
        self.spent += float((row.get("cost_usd") or {}).get("total", 0.0))


@dataclass(frozen=True)
class Batch:
    """One run of an engine: the tasks to run, what they share, the budget, how many at once,
    and where each task's start and row are reported."""

    tasks: Sequence[BatchTask]
    settings: RunSettings
    ledger: Ledger
    concurrency: int
    on_row: OnRow
    on_start: OnStart


class Engine:
    """What every engine is called with (the one signature): :meth:`run` hands the batch to
    the engine's own ``_run``."""

    name = ""

    async def run(
        self,
        tasks: Sequence[BatchTask],
        settings: RunSettings,
        ledger: Ledger,
        concurrency: int,
        on_row: OnRow,
        on_start: OnStart,
    ) -> None:
        """Run ``tasks``, at most ``concurrency`` at once, while ``ledger`` has money left:
        ``on_start`` as each starts, ``on_row`` with each one's row as it ends."""
        await self._run(Batch(tasks, settings, ledger, concurrency, on_row, on_start))

    async def _run(self, batch: Batch) -> None:
        raise NotImplementedError


class _OwnLoop:
    """One task's coroutine run on an event loop of its own, in the thread that calls
    :meth:`run`; :meth:`cancel` (from any thread) cancels it there, before or after it began."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._job: asyncio.Task[Any] | None = None

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        with asyncio.Runner() as runner:
            return runner.run(self._body(make))

    async def _body(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        with self._lock:
            if self._cancelled:
                raise asyncio.CancelledError
            self._loop, self._job = asyncio.get_running_loop(), asyncio.current_task()
        return await make()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._loop is not None and self._job is not None:
                self._loop.call_soon_threadsafe(self._job.cancel)


class LocalEngine(Engine):
    """Tasks in this process, at most ``concurrency`` at a time, each in a thread with an event
    loop of its own: what a task does without awaiting (loading its config, opening its store,
    git and snapshots, its subprocesses' start) then holds up only that task, not every task
    of the batch as on one shared loop (0.6x linear at 8 against a latency-bound model)."""

    name = "local"

    async def _run(self, batch: Batch) -> None:
        settings, ledger, concurrency = batch.settings, batch.ledger, batch.concurrency
        bound = asyncio.Semaphore(concurrency)
        loop = asyncio.get_running_loop()
        pool = ThreadPoolExecutor(max_workers=max(concurrency, 1), thread_name_prefix="batch")

        async def one(task: BatchTask) -> None:
            async with bound:
                if ledger.exhausted():
                    ledger.not_started.append(task.id)
                    return
                batch.on_start(task)
                left = ledger.left()
                own = _OwnLoop()
                ran = loop.run_in_executor(pool, own.run, lambda: run_task(task, settings, left))
                try:
                    row = await asyncio.shield(ran)
                except asyncio.CancelledError:
                    # The batch was stopped: the task stops too (its session closes), then
                    # the batch goes on stopping.
                    own.cancel()
                    with contextlib.suppress(BaseException):
                        await ran
                    raise
                ledger.spend(row)
                batch.on_row(row)

        try:
            # run_task reports every failure in its row, so one task cannot cancel the others.
            await asyncio.gather(*(one(task) for task in batch.tasks))
        finally:
            pool.shutdown(wait=False)


#: The API keys a Ray worker holds for its tasks (once: a worker runs many tasks).
_HELD_KEYS: dict[str, str] = {}

#: Variables of a Ray engine's ``env`` that are not keys: a worker puts them in its environment.
PLAIN_VARS = ("REASONIX_CONFIG_DIR", "REASONIX_DATA_DIR")


def _ray_task(
    task: dict[str, Any],
    settings: dict[str, Any],
    budget: float | None,
    key_vars: Sequence[str] = (),
) -> Any:
    """What a Ray worker runs: one task, in a fresh event loop of its own. Keys found in the
    worker's environment (``key_vars``: a cluster whose workers were started with them) leave
    it first (as the command line's own start-up does), so no command the task runs inherits
    or reads them there (``/proc/<worker>/environ``); the task's session gets them from
    memory. An environment the caller put in ``settings`` (a driver that started Ray itself,
    as the bench does) is the task's environment, with the held keys added; without one it is
    the worker's own."""
    import os

    from reasonix.app.launch import take_keys
    from reasonix.batch.runner import RunSettings, run_task

    _HELD_KEYS.update(take_keys(names=key_vars))
    given = settings.get("environ")
    environ = {**(os.environ if given is None else given), **_HELD_KEYS}
    run = RunSettings(**{**settings, "environ": environ})
    return asyncio.run(run_task(BatchTask.from_dict(task), run, budget))


def task_cpus(cpus: float, concurrency: int) -> float:
    """The CPU share each Ray task asks for: ``concurrency`` tasks fit in ``cpus`` CPUs, never
    more than one CPU each (Ray accepts shares down to 1/10,000)."""
    return max(0.0001, min(1.0, round(cpus / max(concurrency, 1), 4)))


@dataclass(frozen=True)
class HostPlan:
    """How a batch's tasks are spread over Ray worker processes: ``hosts`` processes (one per
    CPU of the cluster, never more than ``concurrency``), each running up to ``per_host``
    tasks at once in threads and asking for ``cpus`` CPUs."""

    hosts: int
    per_host: int
    cpus: float


def host_plan(cpus: float, concurrency: int) -> HostPlan:
    """The :class:`HostPlan` for ``concurrency`` tasks at once on a cluster of ``cpus`` CPUs:
    a task waits on the model nearly all the time, so a process per CPU holds several of them
    (the shares of a CPU each task has, :func:`task_cpus`, added up), rather than a process per
    task that starts and imports everything while the batch waits."""
    concurrency = max(concurrency, 1)
    hosts = max(1, min(concurrency, int(cpus)))
    per_host = -(-concurrency // hosts)
    share = min(per_host * task_cpus(cpus, concurrency), cpus / hosts)
    return HostPlan(hosts, per_host, max(0.0001, int(share * 10_000) / 10_000))


class _Host:
    """A Ray worker process that runs batch tasks (an actor, several method calls at once, each
    in a thread of its own: :func:`_ray_task`'s event loop). It is handed the engine's ``env``
    as an argument, not through a runtime environment (a worker of the job's runtime
    environment would be a new process, started after Ray's own were; these take the workers
    Ray started with the instance): the keys it holds in memory, the other variables
    (:data:`PLAIN_VARS`) go into its environment. Then it loads the task machinery, while the
    batch prepares its copies."""

    def __init__(self, env: Mapping[str, str]) -> None:
        import os

        from reasonix.app.launch import take_keys

        keys = {k: v for k, v in env.items() if k not in PLAIN_VARS}
        _HELD_KEYS.update(take_keys(names=keys))
        _HELD_KEYS.update(keys)
        os.environ.update({k: v for k, v in env.items() if k in PLAIN_VARS})
        preload()

    def run(self, task: dict[str, Any], settings: dict[str, Any], budget: float | None) -> Any:
        return _ray_task(task, settings, budget)

    def pid(self) -> int:
        """The worker's process id (for a driver that wants to know where its tasks ran)."""
        import os

        return os.getpid()


#: The threads of a worker process (a batch gives one no more tasks than its plan's
#: ``per_host``): more than most batches use, so the next batch of a driver can reuse it.
HOST_THREADS = 8


class HostPool:
    """The worker processes a driver's batches ran on, kept between its batches while it keeps
    its Ray instance (the bench, a harness calling the engine): a later batch then does not
    wait for processes to start and load reasonix again (3-5 s on a loaded 2-core machine,
    a third of a 16-task batch at 8). They end with ``ray.shutdown`` or the driver;
    :meth:`release` frees them (and the CPUs they hold) sooner. ``reasonix batch`` starts and
    stops its own Ray instance, so it keeps nothing."""

    def __init__(self) -> None:
        self._kept: list[tuple[tuple[Any, ...], Any]] = []

    def take(self, ray: Any, shape: tuple[Any, ...], count: int) -> list[Any]:
        """Up to ``count`` kept workers of ``shape``. Where they are enough, the other workers
        of ``shape`` stay kept (a narrower batch leaves them for a wider one after it);
        otherwise every other worker is ended (the batch starts its own, and their CPUs would
        stand in its way), as are workers of another shape."""
        same = [handle for kept, handle in self._kept if kept == shape]
        fits, spare = same[:count], same[count:]
        if len(fits) < count:
            spare = []
        for _, handle in self._kept:
            if not any(handle is kept for kept in (*fits, *spare)):
                with contextlib.suppress(Exception):
                    ray.kill(handle)
        self._kept = [(shape, handle) for handle in spare]
        return fits

    def keep(self, shape: tuple[Any, ...], hosts: Sequence[Any]) -> None:
        self._kept.extend((shape, host) for host in hosts)

    def release(self) -> None:
        """End every kept worker."""
        if self._kept:
            import ray

            self.take(ray, (), 0)


#: The one pool of this process.
HOSTS = HostPool()


#: The Ray exceptions that say a task's worker process died (its actor, or its node).
_DIED = ("WorkerCrashedError", "NodeDiedError", "RayActorError", "ActorDiedError")


class RayEngine(Engine):
    """The batch's tasks on Ray worker processes (:class:`_Host` actors, one per CPU, each
    running several tasks at once: :func:`host_plan`). ``address`` is an existing cluster
    (``auto`` or ``ray://host:port``); None starts a local instance with ``num_cpus`` CPUs for
    this batch. ``env`` (the API-key variables and :data:`PLAIN_VARS`) is handed to each worker
    when it starts (:class:`_Host`). A worker that dies is started again and the tasks it was
    running run again, each at most ``max_retries`` times. On a Ray instance the caller
    started, the workers are kept for its next batch (:class:`HostPool`). After a run,
    ``started_in`` is how long this engine's own Ray start took (seconds; None where the
    caller's Ray was running already)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        env: Mapping[str, str] | None = None,
        max_retries: int = 2,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.env = dict(env or {})
        self.max_retries = max_retries
        self.started_in: float | None = None

    async def _run(self, batch: Batch) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the ray engine needs Ray: pip install 'reasonix[ray]' (or use --engine local)"
            ) from None
        # The tasks' shared clones are made while Ray starts (11-24 s on a loaded machine) and
        # while its workers load the task machinery.
        local = [t.repo for t in batch.tasks if not t.is_url]
        preparing = asyncio.ensure_future(
            asyncio.to_thread(prepare_baselines, local, baselines_dir(batch.settings))
        )
        started_here = not ray.is_initialized()
        if started_here:
            await self._start_ray(ray)
        hosts: list[Any] = []
        shape: tuple[Any, ...] = ()
        try:
            resources: dict[str, float] = await asyncio.to_thread(ray.cluster_resources)
            plan = host_plan(float(resources.get("CPU", 1.0)), batch.concurrency)
            count = min(plan.hosts, max(len(batch.tasks), 1))
            shape = self._shape(ray, plan)
            if not started_here:  # a driver's earlier batch may have left its workers
                hosts = HOSTS.take(ray, shape, count)
            hosts += self._start_hosts(ray, shape, count - len(hosts))
            await preparing
            await self._dispatch(ray, hosts, batch)
        finally:
            if started_here:
                for host in hosts:
                    with contextlib.suppress(Exception):
                        ray.kill(host)
                await asyncio.to_thread(ray.shutdown)
            else:
                HOSTS.keep(shape, hosts)

    async def _start_ray(self, ray: Any) -> None:
        """A local instance (or a connection to ``address``) for this batch. No runtime
        environment: the job's workers are then the ones Ray starts with the instance, one per
        CPU, and a host takes one of them as soon as Ray is up (with one, Ray started new
        workers after the instance was up, while the batch waited: 5.7 s against 1.0 s for two
        hosts on a loaded 2-core machine). No dashboard, no worker logs sent to the driver."""
        import time

        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if self.address:
            options["address"] = self.address
        elif self.num_cpus:
            options["num_cpus"] = self.num_cpus
        began = time.monotonic()
        await asyncio.to_thread(ray.init, **options)
        self.started_in = time.monotonic() - began

    def _shape(self, ray: Any, plan: HostPlan) -> tuple[Any, ...]:
        """What a kept worker must match to serve a batch: the same Ray instance, CPUs asked,
        threads enough, the same variables (a digest of them) and retries."""
        import hashlib

        context = ray.get_runtime_context()
        threads = max(plan.per_host, HOST_THREADS)
        env = hashlib.sha256(repr(sorted(self.env.items())).encode()).hexdigest()
        return (context.get_node_id(), context.get_job_id(), plan.cpus, threads, env)

    def _start_hosts(self, ray: Any, shape: tuple[Any, ...], count: int) -> list[Any]:
        *_, cpus, threads, _env = shape
        actor = ray.remote(
            num_cpus=cpus,
            max_concurrency=threads,
            # A dead worker is started again; every task it ran runs again, max_retries times.
            max_restarts=-1,
            max_task_retries=self.max_retries,
        )(_Host)
        return [actor.remote(self.env) for _ in range(count)]

    async def _dispatch(self, ray: Any, hosts: list[Any], batch: Batch) -> None:
        settings, ledger = batch.settings, batch.ledger
        plain = dataclasses.asdict(settings)
        queue = list(batch.tasks)
        pending: dict[Any, tuple[BatchTask, int]] = {}
        load = [0] * len(hosts)
        while queue or pending:
            while queue and len(pending) < batch.concurrency:
                if ledger.exhausted():
                    ledger.not_started.extend(t.id for t in queue)
                    queue.clear()
                    break
                task = queue.pop(0)
                batch.on_start(task)
                at = load.index(min(load))  # the host running the fewest tasks
                load[at] += 1
                ref = (
                    hosts[at]
                    .run.options(name=f"reasonix-batch:{task.id}")
                    .remote(task.to_dict(), plain, ledger.left())
                )
                pending[ref] = (task, at)
            if not pending:
                break
            done, _ = await asyncio.to_thread(ray.wait, list(pending), num_returns=1)
            for ref in done:
                task, at = pending.pop(ref)
                load[at] -= 1
                row = await asyncio.to_thread(self._collect, ray, ref, task, settings)
                ledger.spend(row)
                batch.on_row(row)

    @staticmethod
    def _collect(ray: Any, ref: Any, task: BatchTask, settings: RunSettings) -> dict[str, Any]:
        try:
            row: dict[str, Any] = ray.get(ref)
        except Exception as exc:  # the worker died on every attempt, or Ray itself failed
            from reasonix.batch.runner import base_row

            row = base_row(task, settings)
            row["error_class"] = "worker_died" if type(exc).__name__ in _DIED else "ray_error"
            row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        return row


ENGINES = ("local", "ray")
