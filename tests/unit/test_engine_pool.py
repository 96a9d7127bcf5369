"""The engine's worker pool (Engine._pool): every item runs, results come back in the items'
order, and the first failure in that order is raised once all have run."""
import threading
import time

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Engine


def pool(items, func, concurrency=8):
    return Engine(None, concurrency=concurrency)._pool(func, items)


def test_results_come_back_in_the_items_order_whatever_finishes_first():
    assert pool(range(50), lambda i: (time.sleep(0.002 * (i % 5)), i * i)[1]) == [i * i for i in range(50)]


def test_at_most_concurrency_items_run_at_once_and_every_item_runs():
    running, most, ran, lock = [0], [0], [], threading.Lock()

    def work(item):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1
            ran.append(item)

    pool(range(40), work, concurrency=4)
    assert sorted(ran) == list(range(40)) and 1 < most[0] <= 4


def test_the_first_failure_in_order_is_raised_after_every_item_ran():
    ran = []

    def work(item):
        ran.append(item)
        if item in (3, 7):
            raise ValueError("item %d" % item)
        return item

    with pytest.raises(ValueError, match="item 3"):
        pool(range(10), work)
    assert sorted(ran) == list(range(10))


@pytest.mark.parametrize("items, concurrency", [([], 8), ([5], 8), ([1, 2, 3], 1)])
def test_one_item_or_one_worker_runs_in_the_callers_thread(items, concurrency):
    caller = threading.current_thread()
    assert pool(items, lambda i: (threading.current_thread() is caller, i), concurrency) == [(True, i) for i in items]
