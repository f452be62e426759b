"""Benchmark workloads for culprit, each printing one machine-readable line `metric=<name> value=<number>
unit=<unit> better=<higher|lower> workload=<name>`. `python3 bench/workloads.py NAME[,NAME...] [--seconds S]` runs
the named workloads one after the other in this process (torch is imported once). `--warmup S` runs each
workload for S seconds more before measuring (after its fixed warm-up steps), so that what a tool learns in a
run's first seconds is not in the measurement.

  resnet50     torchvision ResNet50 training, batch 32, fp32, synthetic data (images/s)
  smallop      a 64x64 tensor through 20 elementwise ops per step (steps/s)
  triton       a small Triton elementwise kernel launched back to back (launches/s)
  multistream  4 CUDA streams each running small ops, joined every step (steps/s)
  gpt2         GPT-2-style transformer training (12 layers, width 768, 1024 tokens, batch 32) built from a
               config, no weights: bf16 autocast, fused AdamW, random tokens (tokens/s); needs transformers,
               and says it is skipped (`skipped workload=gpt2 reason=...`) where that is missing
  tinygpt      the same kind of step made small enough to be launch-bound, as many real fine-tuning and
               research loops are: 6 layers, width 256, 128 tokens, batch 8, vocabulary 8192 (tokens/s)
  decode       Hugging Face generate() on a GPT-2 small built from a config: greedy, eager, 32 prompt tokens and
               128 new ones, batch 1, the most launch-bound program in common use (new tokens/s)
  first10s     the start of a program: the tinygpt steps done in the first 10 s from its first step, cold (the
               libraries' start-up inside CUDA and cuBLAS, and what a tool learns in a program's first launches,
               all fall in them) (steps); it must be the only workload of its process

Set BENCH_ANOMALY=1 to run under torch.autograd.set_detect_anomaly(True) (the seed's "sync + debug" row).

`--ab` (under culprit only) measures what recording costs inside one process: the measured time is cut into
pairs of windows, one recording and one in `culprit.paused()`, in alternating order (on-off, off-on, ...), and the
metric line also carries `ab_ratio`, `ab_min` and `ab_max`: the median and range over the pairs of the speed
while recording relative to the speed while paused. Both windows of a pair run in the same process, seconds
apart, so the machine's drift between processes does not enter; what it leaves out is the cost of culprit being
loaded at all (its wrappers still run while paused)."""
import argparse
import os
import statistics
import sys
import time


WARMUP_SECONDS = 0.0
AB_PAIRS = 0       # --ab: pairs of windows (recording, paused) the measurement is cut into; 0 = no A/B
AB = None          # the last workload's (median, min, max) of the pairs' ratios


class Skipped(Exception):
    """The workload cannot run here (a package is missing); the message says why."""


def run_for(step, seconds, sync, every=10):
    """Runs step until SECONDS have passed (checked at a synchronize every EVERY steps): (steps, seconds taken)."""
    n = 0
    t0 = time.perf_counter()
    while True:
        step()
        n += 1
        if n % every == 0:
            sync()
            dt = time.perf_counter() - t0
            if dt >= seconds:
                return n, dt


def alternate(step, seconds, sync, pairs, paused, every=10):
    """PAIRS pairs of windows of seconds / (2 * pairs) each, one under the context manager paused() and one
    without, the order flipping from pair to pair. Returns (steps and seconds of the windows without it,
    [speed without / speed with, one per pair])."""
    window = seconds / (2.0 * pairs)
    steps, taken, ratios = 0, 0.0, []
    for i in range(pairs):
        speed = {}
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            if on:
                n, dt = run_for(step, window, sync, every)
                steps, taken = steps + n, taken + dt
            else:
                with paused():
                    n, dt = run_for(step, window, sync, every)
            speed[on] = n / dt
        ratios.append(speed[True] / speed[False])
    return steps, taken, ratios


def timed(step, warmup, seconds, sync, every=10):
    """WARMUP steps, --warmup seconds more, then SECONDS measured (checked every EVERY steps; pairs of windows
    under --ab): (steps, seconds)."""
    global AB
    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < WARMUP_SECONDS:
        for _ in range(every):
            step()
        sync()
    if not AB_PAIRS:
        return run_for(step, seconds, sync, every)
    import culprit
    n, dt, ratios = alternate(step, seconds, sync, AB_PAIRS, culprit.paused, every)
    AB = (statistics.median(ratios), min(ratios), max(ratios))
    return n, dt


def resnet50(seconds):
    import torch
    import torchvision
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()

    n, dt = timed(step, 5, seconds, torch.cuda.synchronize)
    return "images_per_s", n * 32 / dt, "images/s", "higher"


def smallop(seconds):
    import torch
    x = torch.randn(64, 64, device="cuda")

    def step():
        y = x
        for _ in range(10):
            y = torch.tanh(y) * 0.5
        x.copy_(y)

    n, dt = timed(step, 50, seconds, torch.cuda.synchronize)
    return "steps_per_s", n / dt, "steps/s", "higher"


def triton_loop(seconds):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def axpy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + tl.load(y_ptr + offs, mask=m), mask=m)

    n = 4096
    x = torch.randn(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    grid = (triton.cdiv(n, 1024),)

    def step():
        for _ in range(10):
            axpy[grid](x, y, n, BLOCK=1024)

    k, dt = timed(step, 20, seconds, torch.cuda.synchronize)
    return "launches_per_s", k * 10 / dt, "launches/s", "higher"


def multistream(seconds):
    import torch
    streams = [torch.cuda.Stream() for _ in range(4)]
    xs = [torch.randn(128, 128, device="cuda") for _ in range(4)]
    main = torch.cuda.current_stream()

    def step():
        for s, x in zip(streams, xs):
            s.wait_stream(main)
            with torch.cuda.stream(s):
                y = x
                for _ in range(5):
                    y = torch.relu(y @ x) * 0.01
                x.copy_(y)
        for s in streams:
            main.wait_stream(s)

    n, dt = timed(step, 20, seconds, torch.cuda.synchronize)
    return "steps_per_s", n / dt, "steps/s", "higher"


GPT2_LAYERS, GPT2_WIDTH, GPT2_HEADS, GPT2_SEQ, GPT2_BATCH = 12, 768, 12, 1024, 32  # GPT-2 small's shape


def gpt2_train_step(layers, width, heads, seq, batch, vocab):
    """A GPT-2-style model built from a config (nothing is downloaded), its fused AdamW and a training step on
    random tokens under bf16 autocast over fp32 weights (needs transformers: Skipped without it)."""
    try:
        import transformers
    except ImportError as e:
        raise Skipped("transformers is not installed (%s)" % e)
    import torch
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=seq, vocab_size=vocab)
    model = transformers.GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()

    return step


def gpt2(seconds):
    """GPT-2 small's shape trained on random tokens. Its steps are long (about 0.1 s on an H200), so the clock is
    checked at a synchronize after every step rather than every 10th."""
    step = gpt2_train_step(GPT2_LAYERS, GPT2_WIDTH, GPT2_HEADS, GPT2_SEQ, GPT2_BATCH, 50257)
    import torch
    n, dt = timed(step, 3, seconds, torch.cuda.synchronize, every=1)
    return "tokens_per_s", n * GPT2_BATCH * GPT2_SEQ / dt, "tokens/s", "higher"


TINY_LAYERS, TINY_WIDTH, TINY_HEADS, TINY_SEQ, TINY_BATCH, TINY_VOCAB = 6, 256, 4, 128, 8, 8192


def tinygpt_step():
    """The launch-bound training step of tinygpt and first10s."""
    return gpt2_train_step(TINY_LAYERS, TINY_WIDTH, TINY_HEADS, TINY_SEQ, TINY_BATCH, TINY_VOCAB)


def tinygpt(seconds):
    import torch
    step = tinygpt_step()
    n, dt = timed(step, 5, seconds, torch.cuda.synchronize)
    return "tokens_per_s", n * TINY_BATCH * TINY_SEQ / dt, "tokens/s", "higher"


DECODE_PROMPT, DECODE_NEW = 32, 128


def decode(seconds):
    """Greedy generate() of DECODE_NEW tokens, every one of them (no end-of-text stop), repeated."""
    try:
        import transformers
    except ImportError as e:
        raise Skipped("transformers is not installed (%s)" % e)
    import torch
    cfg = transformers.GPT2Config(n_layer=GPT2_LAYERS, n_embd=GPT2_WIDTH, n_head=GPT2_HEADS, n_positions=1024,
                                  vocab_size=50257)
    model = transformers.GPT2LMHeadModel(cfg).cuda().eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, DECODE_PROMPT), device="cuda")

    def step():
        with torch.inference_mode():
            model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=DECODE_NEW,
                           min_new_tokens=DECODE_NEW, do_sample=False, pad_token_id=0)

    n, dt = timed(step, 1, seconds, torch.cuda.synchronize, every=1)
    return "new_tokens_per_s", n * DECODE_NEW / dt, "tokens/s", "higher"


FIRST_SECONDS = 10.0


def first10s(seconds):
    """Steps done in the first FIRST_SECONDS from the first one, cold (seconds is not used). Measured from the
    first step rather than from the process's start: importing torch and transformers takes most of 10 s on some
    machines (an H200's took more: no step at all within 10 s of the start), and it is the same with culprit."""
    import torch
    step = tinygpt_step()
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < FIRST_SECONDS:
        step()
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return "steps_in_first_10s", float(n), "steps", "higher"


WORKLOADS = {"resnet50": resnet50, "smallop": smallop, "triton": triton_loop, "multistream": multistream,
             "gpt2": gpt2, "tinygpt": tinygpt, "decode": decode, "first10s": first10s}
SOLO = ("first10s",)  # workloads that must be alone in their process


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", help="comma-separated: " + ",".join(sorted(WORKLOADS)))
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--warmup", type=float, default=0.0, help="seconds of untimed running before each measurement")
    ap.add_argument("--ab", type=int, nargs="?", const=6, default=0, metavar="PAIRS",
                    help="recording against culprit.paused() in PAIRS pairs of windows (default 6), in this process")
    a = ap.parse_args()
    names = a.names.split(",")
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error("unknown workload %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(WORKLOADS))))
    if len(names) > 1 and any(n in SOLO for n in names):
        ap.error("%s must be the only workload of its process" % " and ".join(n for n in names if n in SOLO))
    if a.seconds <= 0 or a.warmup < 0:
        ap.error("--seconds must be positive and --warmup not negative")
    if a.ab < 0:
        ap.error("--ab takes a positive number of window pairs")
    if a.ab:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
        import culprit
        if culprit.status() != "active":
            ap.error("--ab compares recording with culprit.paused(): run it with libculprit.so preloaded "
                     "(culprit: %s)" % culprit.status())
    global WARMUP_SECONDS, AB_PAIRS
    WARMUP_SECONDS = a.warmup
    AB_PAIRS = a.ab
    if os.environ.get("BENCH_ANOMALY") == "1":
        import torch
        torch.autograd.set_detect_anomaly(True)
    for name in names:
        try:
            metric, value, unit, better = WORKLOADS[name](a.seconds)
        except Skipped as e:
            print("skipped workload=%s reason=%s" % (name, e))
            sys.stdout.flush()
            continue
        ab = " ab_ratio=%.4f ab_min=%.4f ab_max=%.4f" % AB if AB_PAIRS else ""
        print("metric=%s value=%.4f unit=%s better=%s workload=%s%s" % (metric, value, unit.replace(" ", "_"),
                                                                        better, name, ab))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
