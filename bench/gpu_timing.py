"""Timing shared by the bench scripts (they run on the GPU machine)."""
import statistics


def median_ms(fn, reps=30, warmup=5):
    """The median GPU time of `fn` in milliseconds: `warmup` calls, then
    `reps` calls each between two CUDA events, synchronized after each."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
