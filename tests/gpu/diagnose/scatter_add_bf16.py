"""Mixture-of-experts combine step under bf16 autocast: token outputs are summed into their expert's slot with
scatter_add_, and one routing index equals the number of experts (the router's top-k returned a padded slot).

The scatter kernel's device assert ("index out of bounds") fires (710); the error surfaces at the synchronize.
"""
import sys

import torch

TOKENS, EXPERTS, HIDDEN = 256, 8, 64


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    proj = torch.nn.Linear(HIDDEN, HIDDEN).to(dev)
    x = torch.randn(TOKENS, HIDDEN, device=dev)
    route = torch.randint(0, EXPERTS, (TOKENS,), device=dev)
    route[100] = EXPERTS  # the padded slot
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = proj(x)
        combined = torch.zeros(EXPERTS, HIDDEN, device=dev, dtype=h.dtype)
        combined.scatter_add_(0, route.unsqueeze(1).expand(-1, HIDDEN), h)  # CULPRIT-LAUNCH
    torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("combined %.3f" % combined.float().sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
