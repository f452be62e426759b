"""cuDNN and cuBLAS kernels recorded by name: a convolution and a linear layer run, then a fault.

The fault (indexSelect device assert, 710) is launched right after the library kernels, so the report's history
(launches before the culprit on its stream, up to 8) holds the cuDNN convolution's and cuBLAS GEMM's kernels:
few kernels run in between (no bias on the convolution, one reduction).
"""
import sys

import torch

BATCH, CLASSES = 16, 10  # images, output classes


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    conv = torch.nn.Conv2d(3, 64, 3, padding=1, bias=False).to(dev)
    fc = torch.nn.Linear(64, 256).to(dev)
    images = torch.randn(BATCH, 3, 32, 32, device=dev)
    keep = torch.tensor([0, 3, 5, BATCH], device=dev)  # the last id should have been BATCH - 1

    with torch.no_grad():
        pooled = conv(images).mean(dim=(2, 3))  # cuDNN
        features = fc(pooled)  # cuBLAS
        picked = features.index_select(0, keep)  # CULPRIT-LAUNCH
        torch.cuda.synchronize()  # CULPRIT-SURFACE
    print("picked %.4f" % picked.sum().item())
    return 0


if __name__ == "__main__":
    sys.exit(main())
