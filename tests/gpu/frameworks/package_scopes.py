"""The culprit package in a torch program (the package from this checkout's python/ folder).

A warm-up forward pass runs under culprit.paused() and ends with a device synchronize (without one, culprit
cannot rule out the launches it did not record); the loss is computed under
culprit.blocking(kernels="*nll*"), so only nll_loss's kernel is serialized: its device assert (a label equal
to the number of classes) is reported by the launch itself, and torch raises at that line instead of at
loss.item(). The script prints what the package says inside and after the scopes and, on the error,
culprit.last_report_path(); the checker compares those lines with the report culprit wrote. Without culprit
the scopes do nothing (the package says so once) and the error surfaces at loss.item().
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import culprit  # noqa: E402

N, C, L = 4, 6, 32  # batch, classes, sequence length


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print("loaded %s" % culprit.loaded())
    model = torch.nn.Sequential(torch.nn.Conv1d(8, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv1d(16, C, 1)).to(dev)
    x = torch.randn(N, 8, L, device=dev)
    labels = torch.randint(0, C, (N, L), device=dev)
    labels[2, 17] = C  # one label past the last class
    with culprit.paused():
        print("mode while paused %s" % culprit.mode())
        model(x).sum()
        torch.cuda.synchronize()  # the unrecorded launches are known complete: the verdict can be exact
    try:
        with culprit.blocking(kernels="*nll*"):
            print("mode in scope %s" % culprit.mode())
            logits = model(x)
            loss = F.cross_entropy(logits, labels)  # CULPRIT-LAUNCH
            print("loss %.4f" % loss.item())
    except Exception:
        print("mode after the exception %s" % culprit.mode())
        print("last report %s" % culprit.last_report_path())
        sys.stdout.flush()
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
