"""``reasonix batch``: many headless tasks at once, on one machine or a Ray cluster.

A batch is a JSONL file of tasks (:mod:`reasonix.batch.tasks`). Each task runs as one headless
turn through the session façade, in an isolated copy of its repository
(:mod:`reasonix.batch.workspace`), with its own session store, event trajectory and diff under
``OUT/<id>/`` (:mod:`reasonix.batch.runner`). Rows go to ``OUT/results.jsonl`` as tasks finish,
one fsynced line each, so a killed batch loses no finished row and a second run with the same
``OUT`` skips what is done (:mod:`reasonix.batch.results`). Two engines schedule the tasks
(:mod:`reasonix.batch.engines`): ``local`` (asyncio within a concurrency bound) and ``ray``
(``ray.remote`` tasks; Ray is the optional extra ``reasonix[ray]``, imported only there).

Nothing here imports Ray, and the command imports this package only when it runs.
"""

from __future__ import annotations

__all__: list[str] = []
