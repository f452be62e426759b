/* Core's upcalls: how the launch path reaches the floor above it (src/aftermath: the fault report, the hang
 * watcher, the last look, the exit record) without knowing it. Core declares the table and calls through it; the
 * floor above defines it (aftermath.c), so the table is complete before any code runs, whatever the order in
 * which libraries start. A NULL entry is skipped. Never called on the launch path's common case: each is once
 * per process or after an error. */
#ifndef CULPRIT_UPCALLS_H
#define CULPRIT_UPCALLS_H

#include <stdint.h>

struct cp_config;

struct cp_upcalls {
  /* culprit is on in this process: configuration was read (cfg lives as long as the process) */
  void (*started)(const struct cp_config *cfg);
  /* the process's first recorded launch (a forked child's first one too) */
  void (*first_launch)(const struct cp_config *cfg);
  /* a sticky error surfaced in the driver call api; exact_seq non-zero: blocking mode proved that launch faulted */
  void (*sticky)(int code, const char *api, uint64_t exact_seq);
  /* before context ctx, or (ctx NULL) device's primary context, goes away by the call api */
  void (*ctx_going)(void *ctx, int device, const char *api);
  /* the program exits: among its atexit handlers, registered at the first recorded launch */
  void (*at_exit)(void);
};

extern const struct cp_upcalls cp_upcalls;

#endif
