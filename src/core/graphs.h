/* CUDA graphs seen through stream capture: which launches were captured into which graph, and which graph
 * each executable graph was made from, so that a faulting graph launch can list the kernels it ran with the
 * lines that captured them. Adds nothing to the program's graphs. */
#ifndef CULPRIT_GRAPHS_H
#define CULPRIT_GRAPHS_H

#include <stdint.h>

/* A capture began on stream (by thread tid) after launch number seq. */
void graph_capture_begun(void *stream, int tid, uint64_t seq);
/* The capture on stream ended after launch number seq; graph is what it produced (NULL if it failed). */
void graph_capture_ended(void *stream, void *graph, uint64_t seq);
/* exec was instantiated from graph. */
void graph_instantiated(void *exec, void *graph);
/* The launch-number window (first, last] of the captured launches behind exec; 0 if unknown. */
int graph_window(void *exec, uint64_t *after, uint64_t *upto);
/* After fork in the child. */
void graph_after_fork(void);

#endif
