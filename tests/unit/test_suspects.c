/* Unit test: the rule for a stream's suspects (aftermath/suspects.c), shared by the fault verdict and the hang report:
 * the launches after the last one known complete, up to the first whose breadcrumb was queued; everything after
 * it without breadcrumbs; other streams', captured and refused launches skipped; a lost first record lost. */
#include "../../src/core/crumb.h"
#include "../../src/core/ring.h"
#include "../../src/aftermath/suspects.h"
#include "check.h"

#include <string.h>

#define N 24

static struct cp_rec g_recs[N];
static uint64_t g_got[N];
static int g_ngot;

static void got(void *arg, const struct cp_rec *r) {
  (void)arg;
  g_got[g_ngot++] = atomic_load(&r->seq);
}

/* Launches 1..n on stream 0 (prev links), every one without a breadcrumb; odd ones on stream 1 when mixed. */
static void fill(int n, int mixed) {
  memset(g_recs, 0, sizeof g_recs);
  uint64_t prev[2] = {0, 0};
  for (int i = 0; i < n; i++) {
    uint32_t idx = mixed && (i % 2) ? 1 : 0;
    atomic_store(&g_recs[i].seq, (uint64_t)i + 1);
    g_recs[i].stream_idx = idx;
    g_recs[i].prev = prev[idx];
    g_recs[i].flags = CP_REC_UNCRUMBED;
    prev[idx] = (uint64_t)i + 1;
  }
}

static int run(struct suspects_recs *s, struct cp_stream *st, uint32_t idx, uint64_t done, int *lost) {
  g_ngot = 0;
  *lost = 0;
  return suspects_of_stream(s, idx, st, done, got, NULL, lost);
}

int main(void) {
  volatile uint64_t slot = 0;
  struct cp_stream st;
  memset(&st, 0, sizeof st);
  st.slot = &slot;
  struct suspects_recs s = {g_recs, 20, sizeof(struct cp_rec)};
  int lost;

  /* record mode: nothing crumbed after #16, so #17..#20 are all suspects */
  fill(20, 0);
  CHECK(run(&s, &st, 0, 16, &lost) == 4 && !lost);
  CHECK(g_ngot == 4 && g_got[0] == 17 && g_got[3] == 20);

  /* #18's breadcrumb was queued: had it completed, done would say so; #19 and #20 had not started */
  g_recs[17].flags = 0;
  CHECK(run(&s, &st, 0, 16, &lost) == 2 && g_got[0] == 17 && g_got[1] == 18);

  /* precise: every launch crumbed, the first after done is the only suspect */
  for (int i = 0; i < 20; i++) g_recs[i].flags = 0;
  CHECK(run(&s, &st, 0, 17, &lost) == 1 && g_got[0] == 18);

  /* a breadcrumb on a launch that raced another thread's, or one the driver refused, does not end the list */
  g_recs[17].flags = CP_REC_RACY;
  g_recs[18].flags = CP_REC_CRUMB_FAILED;
  CHECK(run(&s, &st, 0, 17, &lost) == 3 && g_got[2] == 20);

  /* without breadcrumbs on the stream at all, every launch after done */
  for (int i = 0; i < 20; i++) g_recs[i].flags = 0;
  st.slot = NULL;
  CHECK(run(&s, &st, 0, 10, &lost) == 10 && g_got[0] == 11 && g_got[9] == 20);
  st.slot = &slot;

  /* captured launches and launch calls that returned the error are never suspects (nor links of the chain) */
  g_recs[17].flags = CP_REC_CAPTURED;
  g_recs[18].flags = CP_REC_RETURNED_ERROR;
  g_recs[17].prev = g_recs[18].prev = 0;
  g_recs[19].prev = 17;
  CHECK(run(&s, &st, 0, 17, &lost) == 1 && g_got[0] == 20);
  CHECK(!suspects_usable(&g_recs[17]) && !suspects_usable(&g_recs[18]) && suspects_usable(&g_recs[19]));

  /* another stream's launches in between are skipped; each stream has its own list */
  fill(20, 1);
  CHECK(run(&s, &st, 0, 0, &lost) == 10 && g_got[0] == 1 && g_got[1] == 3);
  CHECK(run(&s, &st, 1, 0, &lost) == 10 && g_got[0] == 2 && g_got[9] == 20);

  /* the first unfinished launch (#17) is no longer in the snapshot: nothing is listed, lost is set */
  fill(20, 0);
  struct suspects_recs tail = {g_recs + 17, 3, sizeof(struct cp_rec)};
  CHECK(run(&tail, &st, 0, 16, &lost) == 0 && lost && g_ngot == 0);
  /* but when #18 is the next one after done, the same tail is fine */
  CHECK(run(&tail, &st, 0, 17, &lost) == 3 && !lost);

  /* all complete: no suspect */
  CHECK(run(&s, &st, 0, 20, &lost) == 0 && !lost);
  return CHECK_DONE();
}
