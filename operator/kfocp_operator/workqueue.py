"""A work queue with client-go's semantics: a key is handled by one worker at a time; adding a
key while it is being handled marks it for exactly one follow-up, however many adds arrive;
add_after schedules a key (resync, retry backoff)."""
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
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._seq), key))
            self._cond.notify_all()

    def forget(self, key):
        """Drop scheduled adds of `key` (its object is gone)."""
        with self._cond:
            self._delayed = [entry for entry in self._delayed if entry[2] != key]
            heapq.heapify(self._delayed)

    def get(self, timeout=None):
        """The next key to handle, or None on shutdown or timeout. Call done(key) afterwards."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    self._add(heapq.heappop(self._delayed)[2])
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
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
