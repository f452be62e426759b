"""A torchrun worker (or a plain script) whose loss gets a label past the classes: nll_loss's device assert,
met at .item(). With --record, main is wrapped in torch's @record, which writes the exception into torchrun's
error file; without it the worker writes none. Exit 77 without a CUDA device."""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        sys.exit(77)
    logits = torch.randn(8, 5, device="cuda")
    labels = torch.tensor([0, 1, 2, 3, 4, 5, 1, 2], device="cuda")  # 5: no such class
    loss = torch.nn.functional.nll_loss(torch.log_softmax(logits, 1), labels)  # CULPRIT-LAUNCH
    print("loss", loss.item())


if __name__ == "__main__":
    if "--record" in sys.argv:
        from torch.distributed.elastic.multiprocessing.errors import record
        main = record(main)
    main()
