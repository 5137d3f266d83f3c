"""How many file downloads reach one host at a time: counted in this process, or across every
process of the site in Redis.

Decision owned here: the politeness limit (``per_host`` downloads at once against one host)
holds for the whole site where the site has a Redis to count in. A harvest fanned out over
worker processes would otherwise open ``per_host`` downloads in each of them. A slot is a
lease in a sorted set (member: a random token, score: when the lease ends, by Redis' own
clock): a process that dies holding one frees it when its lease ends.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from .download_errors import normalized_host


class HostSlots(Protocol):
    """Lets at most a number of downloads at a time reach one host."""

    def hold(self, host: str) -> AbstractContextManager[None]:
        """Waits for a free slot of `host`, holds it while the block runs."""
        ...


_PROCESS_SLOTS: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_PROCESS_SLOTS_LOCK = threading.Lock()


class ProcessHostSlots:
    """Slots counted in this process (shared by every fetcher of it)."""

    def __init__(self, per_host: int) -> None:
        self.per_host = max(1, per_host)

    @contextmanager
    def hold(self, host: str) -> Iterator[None]:
        key = (normalized_host(host), self.per_host)
        with _PROCESS_SLOTS_LOCK:
            slots = _PROCESS_SLOTS.get(key)
            if slots is None:
                slots = _PROCESS_SLOTS[key] = threading.BoundedSemaphore(self.per_host)
        with slots:
            yield


# Atomic: drop the ended leases, then take one if fewer than the limit are held.
_TAKE_SLOT = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
    redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
    return 1
end
return 0
"""


class RedisHostSlots:
    """Slots counted in Redis, for every process that counts in the same Redis.

    `client` is a redis-py client (``register_script``, ``zrem``); `lease` bounds how long a
    slot is held (a download's deadline and a margin); `poll` is the wait between tries.
    """

    def __init__(
        self,
        client: Any,
        per_host: int,
        *,
        lease: float,
        poll: float = 0.05,
        prefix: str = "oai-harvester:file-slots:",
    ) -> None:
        self.client = client
        self.per_host = max(1, per_host)
        self.lease = lease
        self.poll = poll
        self.prefix = prefix
        self._take = client.register_script(_TAKE_SLOT)

    @contextmanager
    def hold(self, host: str) -> Iterator[None]:
        key = self.prefix + normalized_host(host)
        token = uuid.uuid4().hex
        while not self._take(keys=[key], args=[self.per_host, self.lease, token]):
            time.sleep(self.poll)
        try:
            yield
        finally:
            self.client.zrem(key, token)
