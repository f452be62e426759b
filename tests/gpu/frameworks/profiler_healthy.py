"""torch.profiler (CUPTI underneath) must work the same under culprit, which does not use CUPTI.

Profiles a few elementwise and reduction ops with CPU and CUDA activities and prints how many CUDA kernel events
it saw. The count is fixed for this op sequence, so the output compares byte for byte.
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    x = torch.randn(256, 256, device=dev)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            y = torch.tanh(x) * 2.0 + 1.0
            total = y.sum()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels = [e for e in events if not e.name.startswith(("Memcpy", "Memset"))]
    print("cuda kernel events: %d" % len(kernels))
    print("distinct kernels: %d" % len(set(e.name for e in kernels)))
    print("total %.3f" % total.item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
