"""The dashboard's numbered event log (:mod:`reasonix.web.hub`): ids, resuming after an id, two
followers, a follower that fell behind the ring, events from another thread; and the store's
``last_event`` the sessions list reads the route from."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

from reasonix.events import GateDecided, NoticeEvent
from reasonix.store import SessionStore
from reasonix.web.hub import EventLog


async def take(log: EventLog, last: int, n: int) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    async with contextlib.aclosing(log.follow(last, idle=0.05)) as events:
        async for item in events:
            if item is not None:
                out.append(item)
            if len(out) == n:
                break
    return out


def notice(i: int) -> NoticeEvent:
    return NoticeEvent("controller", "n", f"event {i}")


async def test_history_then_live_events_are_numbered_in_order() -> None:
    log = EventLog([{"kind": "turn_mark", "text": "earlier"}])
    log.bind(asyncio.get_running_loop())
    for i in range(3):
        log.emit(notice(i))
    got = await take(log, 0, 4)
    assert [n for n, _ in got] == [1, 2, 3, 4]
    assert got[0][1]["text"] == "earlier"
    assert [d["message"] for _, d in got[1:]] == ["event 0", "event 1", "event 2"]
    assert await take(log, 2, 2) == got[2:]
    assert log.since(4) == []


async def test_two_followers_see_the_same_live_events() -> None:
    log = EventLog()
    log.bind(asyncio.get_running_loop())
    a = asyncio.create_task(take(log, 0, 5))
    b = asyncio.create_task(take(log, 0, 5))
    for _ in range(2400):
        if log.watchers == 2:
            break
        await asyncio.sleep(0.01)
    assert log.watchers == 2
    for i in range(5):
        log.emit(notice(i))
    assert await a == await b
    assert [n for n, _ in await a] == [1, 2, 3, 4, 5]
    await asyncio.sleep(0)
    assert log.watchers == 0


async def test_a_follower_behind_the_ring_gets_a_resync_from_the_store() -> None:
    stored = [{"kind": "notice", "message": "from the store"}]
    log = EventLog(capacity=3, stored=lambda: stored)
    log.bind(asyncio.get_running_loop())
    for i in range(5):
        log.emit(notice(i))
    assert log.since(1) is None  # ids 2 and 3 fell out of the ring
    assert [n for n, _ in log.since(2) or []] == [3, 4, 5]
    (first,) = await take(log, 0, 1)
    assert first == (5, {"kind": "resync", "events": stored})
    log.emit(notice(5))
    assert await take(log, 5, 1) == [(6, notice(5).to_dict())]


async def test_events_from_another_thread_are_handed_to_the_loop() -> None:
    log = EventLog()
    log.bind(asyncio.get_running_loop())
    follower = asyncio.create_task(take(log, 0, 2))
    for _ in range(2400):
        if log.watchers == 1:
            break
        await asyncio.sleep(0.01)
    worker = threading.Thread(target=lambda: [log.emit(notice(i)) for i in range(2)])
    worker.start()
    worker.join()
    got = await asyncio.wait_for(follower, 30)
    assert [d["message"] for _, d in got] == ["event 0", "event 1"]


async def test_idle_calls_back_and_yields_a_keep_alive() -> None:
    log = EventLog()
    log.bind(asyncio.get_running_loop())
    calls = 0

    def poll() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            log.append({"kind": "notice", "message": "written elsewhere"})

    seen: list[Any] = []
    async with contextlib.aclosing(log.follow(0, idle=0.01, on_idle=poll)) as events:
        async for item in events:
            seen.append(item)
            if item is not None:
                break
    assert seen[0] is None  # a keep-alive before anything happened
    assert seen[-1] == (1, {"kind": "notice", "message": "written elsewhere"})


def test_store_last_event_of_a_kind(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s.db") as store:
        sid = store.create_session(tmp_path)
        assert store.last_event(sid, "gate_decided") is None
        store.record_event(sid, GateDecided("controller", "executor_only", "simple"))
        store.record_event(sid, notice(1))
        store.record_event(sid, GateDecided("controller", "plan_and_execute", "explicit_flag"))
        last = store.last_event(sid, "gate_decided")
        assert last is not None and last["route"] == "plan_and_execute"
