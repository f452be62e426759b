"""A Hugging Face GPT-2 (built from GPT2Config, no weights) fed a token id past its vocabulary in training.

The data pipeline added a special token after the model was built, so one input id equals the vocabulary size.
The token embedding (index_select on wte) asserts (710) in the forward; many kernels follow, in the forward and
on the autograd engine's thread in backward, before anything waits. Where the error surfaces changes from run to
run: at a launch, inside cuBLAS on the autograd thread (torch then raises CUBLAS_STATUS_INTERNAL_ERROR, and the
driver call that failed may be one culprit does not wrap), or only at exit. culprit must write a report every
time.
"""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB, POSITIONS, WIDTH, LAYERS, HEADS = 1000, 64, 128, 2, 4  # model shape
BATCH, LENGTH, STEPS, BAD_STEP = 4, 32, 3, 2  # sequences per batch, tokens each, steps, the step with the bad id


def main():
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.manual_seed(0)
    dev = torch.device("cuda")
    config = GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS)
    model = GPT2LMHeadModel(config).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(5)
    for step in range(STEPS):
        ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g)
        labels = ids.clone()
        if step == BAD_STEP:
            ids[1, 20] = VOCAB  # the new special token: the embedding has no row for it
        ids, labels = ids.to(dev), labels.to(dev)
        out = model(input_ids=ids, labels=labels)  # CULPRIT-LAUNCH
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        print("step %d loss %.4f" % (step, out.loss.item()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
