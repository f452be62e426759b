"""A healthy training loop whose output must not change under culprit: deterministic losses, and CUDA's error
texts for the codes culprit decorates (none of them occurred, so they stay the runtime's own). Exit 77 without a
CUDA device."""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        sys.exit(77)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(256, 32, device="cuda")
    y = torch.randint(0, 5, (256,), device="cuda")
    for step in range(20):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()))
    for code in (700, 710):
        try:  # PyTorch's binding of the runtime (culprit's definition under culprit), where it takes a number
            text = torch.cuda.cudart().cudaGetErrorString(torch.cuda.cudart().cudaError(code))
        except Exception:
            text = "no binding"
        print("text %d: %s" % (code, text))


if __name__ == "__main__":
    main()
