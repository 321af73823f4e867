"""Where a sweep's points run: threads of this process, or a Dask cluster.

Threads, not processes, locally: the core releases the GIL for the whole
simulation, and a point's Python work (building the scenario, reading the
summary) is about a millisecond against tens to hundreds of milliseconds of
simulation. Measured on the 2-core development machine (100 points of the
thesis scenario, 0.1 s simulated each; ``irqlab bench --sweep``): see the
README's "Studies" section for the figures.

Both executors call ``on_record`` in the calling thread for every finished
point, in completion order, and on ``KeyboardInterrupt`` (Ctrl-C, SIGTERM)
stop what is running, still report what finished, then re-raise.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
import threading
from typing import Any, Callable, Optional, Sequence

from irqlab.study.point import failed_record, run_point

OnRecord = Callable[[dict[str, Any]], None]


class ExecutorError(ValueError):
    """A bad executor choice or an unreachable cluster; one sentence."""


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ThreadExecutor:
    """``jobs`` threads of this process."""

    name = "threads"

    def __init__(self, jobs: Optional[int] = None) -> None:
        self.jobs = jobs or default_jobs()

    def describe(self) -> str:
        return f"{self.jobs} thread{'s' if self.jobs != 1 else ''}"

    def run(self, tasks: Sequence[dict[str, Any]], on_record: OnRecord) -> None:
        cancel = threading.Event()
        reported: set[int] = set()
        ex = cf.ThreadPoolExecutor(self.jobs, thread_name_prefix="irqlab-sweep")
        futures: list[cf.Future[dict[str, Any]]] = []
        try:
            futures = [ex.submit(run_point, t, cancel) for t in tasks]
            for fut in cf.as_completed(futures):
                reported.add(id(fut))
                on_record(fut.result())
        except BaseException:
            # Stop the rest: queued points never start, running ones stop at
            # their next check; points that finish meanwhile are kept.
            cancel.set()
            for fut in futures:
                fut.cancel()
            ex.shutdown(wait=True)
            for fut in futures:
                if id(fut) not in reported and fut.done() and not fut.cancelled() and fut.exception() is None:
                    on_record(fut.result())
            raise
        finally:
            ex.shutdown(wait=True)


class DaskExecutor:
    """The workers of an existing Dask distributed cluster (``dask scheduler``
    and ``dask worker`` processes, or a ``LocalCluster``)."""

    name = "dask"

    def __init__(self, scheduler: str, connect_timeout_s: float = 30.0) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ExecutorError(
                "--executor dask needs dask.distributed, which is not installed; "
                "install it with: pip install 'irqlab[cluster]'"
            ) from None
        from distributed.comm import get_address_host_port

        try:
            # Checked before a Client exists: one that fails on a malformed
            # address leaves a traceback and a minute's wait at exit.
            _, port = get_address_host_port(scheduler)
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is not from 1 to 65535")
        except ValueError as e:  # no port, an unknown scheme
            raise ExecutorError(
                f"--scheduler {scheduler!r} is not a Dask scheduler address ({e}); give e.g. tcp://10.0.0.1:8786"
            ) from None
        from irqlab.study.dask_connect import ConnectError, connect, discard

        self.scheduler = scheduler
        self.connect_timeout_s = connect_timeout_s
        try:
            # Every wait until the cluster is known to work is bounded by
            # --connect-timeout (irqlab.study.dask_connect).
            self.client = connect(scheduler, connect_timeout_s)
        except ConnectError as e:
            raise ExecutorError(str(e)) from None
        try:
            self._check_workers()
        except BaseException:
            discard(self.client, connect_timeout_s)
            raise

    def _check_workers(self) -> None:
        """Every worker must run this irqlab: results from another version
        would silently mix with these."""
        from irqlab.provenance import version
        from irqlab.study.dask_connect import ConnectError, bounded

        try:
            versions = bounded(self.client, self.connect_timeout_s, "the cluster's workers", self.scheduler,
                               self.client._run, _worker_version)
        except ConnectError as e:
            raise ExecutorError(str(e)) from None
        except Exception as e:  # a worker without irqlab cannot unpickle the function
            raise ExecutorError(
                f"--scheduler {self.scheduler}: a worker cannot run irqlab ({type(e).__name__}: {' '.join(str(e).split())}); "
                "install the same irqlab on every worker"
            ) from None
        if not versions:
            raise ExecutorError(f"--scheduler {self.scheduler}: the cluster has no workers")
        others = {w: v for w, v in versions.items() if v != version()}
        if others:
            worker, theirs = next(iter(others.items()))
            raise ExecutorError(
                f"--scheduler {self.scheduler}: worker {worker} runs irqlab {theirs}, this is {version()}; "
                "install the same irqlab on every worker"
            )
        self.workers = len(versions)

    def describe(self) -> str:
        return f"Dask cluster at {self.scheduler} ({self.workers} worker{'s' if self.workers != 1 else ''})"

    def run(self, tasks: Sequence[dict[str, Any]], on_record: OnRecord) -> None:
        from distributed import as_completed

        # pure=False: a point is a simulation to run, not a value to cache
        # across sweeps; keys name the point for the dashboard.
        by_key = {task_key(t): t for t in tasks}
        futures = [self.client.submit(run_point, t, key=k, pure=False) for k, t in by_key.items()]
        reported: set[str] = set()
        try:
            # The loop of this client: it is not the default one (set_as_default=False).
            for fut in as_completed(futures, loop=self.client.loop):
                try:
                    record = fut.result()
                except Exception as e:
                    # The point's worker died (KilledWorker), or the cluster
                    # lost or cancelled it: that point failed, not the sweep.
                    record = failed_record(by_key[fut.key], f"{type(e).__name__}: {e}")
                reported.add(fut.key)
                on_record(record)
        except BaseException:
            self.client.cancel([f for f in futures if not f.done()])
            for fut in futures:
                if fut.key not in reported and fut.status == "finished":
                    on_record(fut.result())
            raise

    def close(self) -> None:
        """Close the client within --connect-timeout (a scheduler gone
        mid-sweep must not hold the exit), quietly."""
        from irqlab.study.dask_connect import discard

        discard(self.client, self.connect_timeout_s)


def task_key(task: dict[str, Any]) -> str:
    """The Dask key of a point: its position for the dashboard, and a digest
    of everything it runs. The cluster hands the result of a key it holds to
    whoever submits that key again, so two sweeps sharing a cluster must
    never share a key for different work (the same point at another duration,
    say)."""
    digest = hashlib.blake2b(json.dumps(task, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()
    return f"irqlab-point-{task['point']}-{task['replicate']}-{digest}"


def _worker_version() -> str:
    from irqlab.provenance import version

    return version()
