"""A multiprocessing pool's worker meets nll_loss's device assert; the pool re-raises its exception in the
parent, which prints it as "REMOTE <type>: <text>" and exits 3 (the worker's stderr is not what a user of a pool
reads). Exit 77 without a CUDA device."""
import multiprocessing as mp
import sys


def work(_):
    import torch
    logits = torch.randn(8, 5, device="cuda")
    labels = torch.tensor([0, 1, 2, 3, 4, 5, 1, 2], device="cuda")  # 5: no such class
    loss = torch.nn.functional.nll_loss(torch.log_softmax(logits, 1), labels)  # CULPRIT-LAUNCH
    return loss.item()


if __name__ == "__main__":
    import torch
    if not torch.cuda.is_available():
        sys.exit(77)
    with mp.get_context("spawn").Pool(1) as pool:
        try:
            pool.map(work, [0])
        except Exception as e:  # the worker's exception, re-raised here
            print("REMOTE %s: %s" % (type(e).__name__, e), flush=True)
            sys.exit(3)
    sys.exit(0)
