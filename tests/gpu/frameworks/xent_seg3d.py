"""3D segmentation step whose label volume holds one voxel labelled C (the number of classes).

cross_entropy over (N, C, D, H, W) logits runs log_softmax, then nll_loss2d's forward kernel on the flattened
volume; that kernel's device assert fires on the bad voxel (710). The host learns it at loss.item().
"""
import sys

import torch
import torch.nn.functional as F

N, C, D, H, W = 2, 5, 8, 16, 16  # batch, classes, depth, height, width


def make_batch(device):
    g = torch.Generator().manual_seed(0)
    volume = torch.randn(N, 1, D, H, W, generator=g)
    labels = torch.randint(0, C, (N, D, H, W), generator=g)
    labels[1, 4, 7, 9] = C  # the annotation tool wrote "ignore" as C instead of -100
    return volume.to(device), labels.to(device)


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    head = torch.nn.Sequential(torch.nn.Conv3d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv3d(8, C, 1))
    head = head.to(dev)
    volume, labels = make_batch(dev)
    logits = head(volume)
    loss = F.cross_entropy(logits, labels)  # CULPRIT-LAUNCH
    print("loss %.4f" % loss.item())  # CULPRIT-SURFACE
    return 0


if __name__ == "__main__":
    sys.exit(main())
