"""How texts go through a model: batches of similar lengths (:func:`length_batches`), and those
batches run side by side on the CPU's threads, each on one (:func:`map_batches`)."""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence


def length_batches(lengths: Sequence[int], *, max_texts: int, max_tokens: int) -> list[list[int]]:
    """Indices of texts in batches for a padded forward pass: longest first, each batch at most
    ``max_texts`` texts and ``max_tokens`` padded tokens (its longest text times its size; a text
    longer than ``max_tokens`` goes alone).

    Texts of similar lengths share a batch, so little padding goes through the model, and the
    budget keeps a batch's activations small: below glibc's mmap threshold (32 MB), freed
    activations are reused instead of mapped and faulted in again at every batch (MiniLM over
    the LTU captions: 1.1 M page faults at 8,192 tokens a batch, 0.4 M at 4,096).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, start = [], 0
    while start < len(order):
        size = max(1, min(max_texts, max_tokens // max(1, lengths[order[start]])))
        batches.append(order[start:start + size])
        start += size
    return batches


def map_batches(fn: Callable[[Any], Any], batches: Sequence[Any], *, device: Any = "cpu") -> Iterator[Any]:
    """``fn(batch)`` of each batch, in order, under ``torch.inference_mode``.

    On the CPU, with torch given ``n > 1`` threads (``torch.get_num_threads()``), ``n`` batches run
    at once, each in a thread of its own whose operators run on that one thread; at most ``2n``
    results wait to be taken, so memory stays bounded by a few batches. A small encoder's
    operators are too short to split well between threads: all-MiniLM-L6-v2 over 1,600 captions
    took 14.6 s on one thread, 8.1 s on two spinning threads, 11.0 s on two whose idle threads sleep
    and 7.4 s as two batches at once on a quiet machine (docs/performance.md, "Embedding metrics").
    Each operator runs as on one thread, so a row is one thread's, bit for bit (tested). On a GPU,
    or with one thread, the batches run one after the other in this thread.
    """
    import torch

    def run(batch: Any) -> Any:
        with torch.inference_mode():
            return fn(batch)

    threads = torch.get_num_threads()
    if threads <= 1 or len(batches) <= 1 or torch.device(device).type != "cpu":
        yield from map(run, batches)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="musiceval-batch", initializer=torch.set_num_threads,
                            initargs=(1,)) as pool:
        try:
            waiting: deque = deque()
            for batch in batches:
                waiting.append(pool.submit(run, batch))
                if len(waiting) >= 2 * threads:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        finally:
            for future in waiting:
                future.cancel()
            torch.set_num_threads(threads)  # a worker's setting reaches libraries' global thread counts
