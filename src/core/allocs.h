/* The allocation table (allocs.c): every device range the program allocated through the driver, live or recently
 * freed, with its kind, size, the launch number at its allocation and free, and where it was allocated. It turns a
 * faulting address into "which buffer, and by how much" (src/render/addr.c). It records nothing of launches and
 * is not on the launch path: intercept hands it allocations and frees after the driver said yes. */
#ifndef CULPRIT_ALLOCS_H
#define CULPRIT_ALLOCS_H

#include <stddef.h>
#include <stdint.h>

#include "../stack/pystack.h"

#define ALLOCS_CAPACITY 4096 /* entries the table holds, live and freed together */
#define ALLOCS_FRAMES 16     /* native frames kept of an allocation site, at most */
#define ALLOCS_PY 16         /* Python frames kept of an allocation site, at most */

/* What made a range (the report's "kind"; allocs_kind_name). */
enum allocs_kind {
  ALLOCS_DEVICE,   /* cuMemAlloc */
  ALLOCS_PITCHED,  /* cuMemAllocPitch: pitch x height bytes */
  ALLOCS_ASYNC,    /* cuMemAllocAsync: from the device's current pool, in stream order */
  ALLOCS_POOL,     /* cuMemAllocFromPoolAsync: from a pool the program made */
  ALLOCS_MANAGED,  /* cuMemAllocManaged */
  ALLOCS_HOST,     /* cuMemHostAlloc, cuMemAllocHost: pinned host memory, by its device address */
  ALLOCS_VM,       /* cuMemMap: physical memory mapped into a reserved range */
  ALLOCS_RESERVED, /* cuMemAddressReserve: addresses only, nothing there until mapped */
  ALLOCS_NKINDS
};

enum {
  ALLOCS_FREED = 1,      /* freed (freed_seq and freed_api say when and by what) */
  ALLOCS_FREE_UNSEEN = 2 /* a later allocation got the same address before culprit saw this one freed (a
                                   * free it does not wrap): taken as freed then */
};

/* One range, as allocs_snapshot hands it out. */
struct allocs_entry {
  uint64_t base;                    /* device address of its first byte */
  uint64_t size;                    /* bytes */
  uint64_t host;                    /* ALLOCS_HOST: the host pointer the program got and frees it by; else 0 */
  uint64_t seq;                     /* the last launch number handed out when it was allocated (launch #seq was made
                                   * before it, #seq+1 after) */
  uint64_t freed_seq;               /* with ALLOCS_FREED: the last launch number handed out when it was freed */
  uint64_t order;                   /* allocations recorded before it in this process, plus one */
  const char *api;                  /* the driver entry point that made it (static string) */
  const char *freed_api;            /* the one that freed it, NULL while live or when the free was not seen */
  int32_t tid;                      /* the allocating thread (gettid) */
  uint8_t kind;                     /* enum allocs_kind */
  uint8_t flags;                    /* ALLOCS_FREED, ALLOCS_FREE_UNSEEN */
  uint8_t nframes;                  /* valid entries in frames */
  uint8_t npy;                      /* valid entries in py */
  void *frames[ALLOCS_FRAMES];      /* native return addresses of the allocating call, innermost first */
  struct pystack_ref py[ALLOCS_PY]; /* Python frames of the allocating thread, innermost first */
};

/* The table's counters since the process started (a forked child's since the fork). */
struct allocs_counts {
  uint32_t capacity;         /* ALLOCS_CAPACITY */
  uint64_t recorded;         /* allocations recorded */
  uint64_t forgotten;        /* freed entries dropped, oldest free first, to make room for new ones */
  uint64_t not_recorded;     /* allocations not recorded: every entry was live */
  uint64_t handles_created;  /* cuMemCreate: physical allocations of the virtual memory API */
  uint64_t handles_released; /* cuMemRelease */
  uint64_t handle_bytes;     /* bytes cuMemCreate allocated */
};

/* Native frames kept per allocation site (the configured launch stack depth, at most ALLOCS_FRAMES; 0: none). */
void allocs_configure(int stack_depth);
/* The program allocated size bytes at base (host: the host pointer of host memory, else 0) through api. */
void allocs_alloc(int kind, uint64_t base, uint64_t size, uint64_t host, const char *api);
/* Pinned host memory the program got (cuMemHostAlloc, cuMemAllocHost): recorded by its device address, which
 * the driver is asked for (on a 64-bit system with unified addressing it is the host pointer itself). */
void allocs_alloc_host(void *host, uint64_t size, const char *api);
/* Frees: a device address (cuMemFree, cuMemFreeAsync), a host pointer (cuMemFreeHost), a mapped range whose
 * mappings all end (cuMemUnmap), a reservation (cuMemAddressFree). Unknown addresses are ignored. */
void allocs_free_device(uint64_t base, const char *api);
void allocs_free_host(void *host, const char *api);
void allocs_unmap(uint64_t base, uint64_t size, const char *api);
void allocs_unreserve(uint64_t base, const char *api);
/* A physical allocation of the virtual memory API was made (size bytes) or released (size 0): counted only; its
 * addresses are those of its mappings. */
void allocs_handle(int created, uint64_t size);

/* Copies every consistent entry, oldest allocation first, into a malloc'd array (*n entries; NULL and 0 when
 * there are none or memory is short) and the counters into *c (when not NULL). Any thread, any time: it takes
 * no lock and a range being written meanwhile is read again or left out. */
struct allocs_entry *allocs_snapshot(size_t *n, struct allocs_counts *c);
/* "device", "pitched", "async", "pool", "managed", "host", "vm", "reserved". */
const char *allocs_kind_name(int kind);

#endif
