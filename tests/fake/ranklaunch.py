#!/usr/bin/env python3
"""A small stand-in for torchrun, for the job tests (rank_cases.py): starts NPROC copies of a command with
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT and TORCHELASTIC_RUN_ID set, and, as torchrun
does, once one worker fails sends SIGTERM to the others and waits for them. A worker's own environment can be
given with --env RANK:NAME=VALUE (how a test scripts the fault of one rank). --wait-for GLOB:N holds the stop
back until N files match GLOB (at most 30 s), as a job scheduler that lets a watchdog time out first;
--stop-signal names the signal (KILL, as a scheduler's last resort, leaves what the workers wrote before;
NONE lets the others run to their end).

    ranklaunch.py --nproc 4 [--env 2:FAKECUDA_FAULT=kernel=X] [--run-id ID] [--wait-for GLOB:N]
                  [--stop-signal TERM|KILL|NONE|...] -- CMD ARGS...

Exits 0 when every worker did, else 1. Standard library only.
"""

import argparse
import glob
import os
import signal
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nproc", type=int, required=True)
    ap.add_argument("--env", action="append", default=[], metavar="RANK:NAME=VALUE")
    ap.add_argument("--run-id", default="none")
    ap.add_argument("--wait-for", metavar="GLOB:N")
    ap.add_argument("--stop-signal", default="TERM")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    workers = []
    for rank in range(a.nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(a.nproc),
                   LOCAL_WORLD_SIZE=str(a.nproc), GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500",
                   TORCHELASTIC_RUN_ID=a.run_id)
        for spec in a.env:
            who, _, kv = spec.partition(":")
            name, _, value = kv.partition("=")
            if int(who) == rank:
                env[name] = value
        workers.append(subprocess.Popen(cmd, env=env))
    failed = False
    alive = list(workers)
    while alive:
        for w in list(alive):
            rc = w.poll()
            if rc is None:
                continue
            alive.remove(w)
            if rc != 0 and not failed:
                failed = True
                print("ranklaunch: worker %d failed with %d; stopping the others" % (workers.index(w), rc),
                      file=sys.stderr, flush=True)
                if a.wait_for:
                    pattern, _, count = a.wait_for.rpartition(":")
                    deadline = time.time() + 30
                    while len(glob.glob(pattern)) < int(count) and time.time() < deadline:
                        time.sleep(0.05)
                for other in alive if a.stop_signal != "NONE" else ():
                    other.send_signal(getattr(signal, "SIG" + a.stop_signal))
        time.sleep(0.05)
    return 1 if failed or any(w.returncode != 0 for w in workers) else 0


if __name__ == "__main__":
    sys.exit(main())
