/* CUDA graphs seen through stream capture: which launches were captured into which graph, and which graph
 * each executable graph was made from, so that a faulting graph launch can list the kernels it ran with the
 * lines that captured them. In record mode nothing is added to the program's graphs; in precise and blocking
 * modes each capture also gets a breadcrumb slot whose writes become nodes of the graph. */
#ifndef CULPRIT_GRAPHS_H
#define CULPRIT_GRAPHS_H

#include <stdint.h>

/* A capture began on stream (by thread tid) after launch number seq. */
void graph_capture_begun(void *stream, int tid, uint64_t seq);
/* The capture on stream ended after launch number seq; graph is what it produced (NULL if it failed). */
void graph_capture_ended(void *stream, void *graph, uint64_t seq);
/* The stream is being destroyed: a capture still open on it ends with it. Returns 1 if one was open. */
int graph_capture_abandoned(void *stream);
/* exec was instantiated from graph. */
void graph_instantiated(void *exec, void *graph);
/* Precise mode: the capture on stream has a breadcrumb slot of its own; the graph writes 0 into it first on
 * every replay, then each captured kernel's launch number after it. */
void graph_capture_set_slot(void *stream, volatile uint64_t *slot, uint64_t dslot);
/* The open capture on stream's slot (device address), or 0. */
uint64_t graph_capture_slot(void *stream);
/* The launch-number window (after, upto] of the captured launches behind exec; 0 if unknown. *done gets the
 * last captured launch the latest replay completed (0: none yet) when the capture had a slot, else UINT64_MAX. */
int graph_window(void *exec, uint64_t *after, uint64_t *upto, uint64_t *done);
/* A context went away: the capture slots may have lived in its memory. */
void graph_forget_slots(void);
/* After fork in the child. */
void graph_after_fork(void);

#endif
