"""A work queue with client-go's semantics: a key is handled by one worker at a time; adding a
key while it is being handled marks it for exactly one follow-up, however many adds arrive;
add_after schedules a key (resync, retry backoff), one pending schedule per key: a new one
replaces the old, and handing the key out drops it (the run that follows sets the next)."""
import heapq
import itertools
import threading
import time
from collections import deque


class WorkQueue:
    def __init__(self):
        self._cond = threading.Condition()
        self._queue = deque()
        self._dirty = set()
        self._processing = set()
        self._delayed = []
        self._waiting = {}  # key -> the sequence number of its one live entry in _delayed
        self._seq = itertools.count()
        self._shutdown = False

    def add(self, key):
        with self._cond:
            self._add(key)

    def _add(self, key):
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key, delay):
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            seq = next(self._seq)
            self._waiting[key] = seq
            heapq.heappush(self._delayed, (time.monotonic() + delay, seq, key))
            self._cond.notify_all()

    def forget(self, key):
        """Drop the scheduled add of `key` (its object is gone)."""
        with self._cond:
            self._waiting.pop(key, None)

    def scheduled(self, key):
        """Seconds until `key`'s scheduled add, or None."""
        with self._cond:
            seq = self._waiting.get(key)
            for when, entry_seq, _key in self._delayed:
                if entry_seq == seq:
                    return max(0.0, when - time.monotonic())
            return None

    def _due(self, now):
        while self._delayed and self._delayed[0][0] <= now:
            _when, seq, key = heapq.heappop(self._delayed)
            if self._waiting.get(key) == seq:  # else replaced or forgotten
                del self._waiting[key]
                self._add(key)

    def get(self, timeout=None):
        """The next key to handle, or None on shutdown or timeout. Call done(key) afterwards."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                self._due(now)
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._waiting.pop(key, None)
                    self._processing.add(key)
                    return key
                if self._shutdown:
                    return None
                waits = [d - now for d in ([deadline] if deadline else []) + ([self._delayed[0][0]] if self._delayed else [])]
                if deadline is not None and now >= deadline:
                    return None
                self._cond.wait(min(waits) if waits else None)

    def done(self, key):
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def depth(self):
        with self._cond:
            return len(self._queue)

    def shutdown(self):
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
