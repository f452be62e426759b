/* The words of a job's merged view (merge_words.c), for merge.c, which groups the reports and decides each
 * process's status: the phrases of a process, the names in them, and the verdict line. */
#ifndef CULPRIT_REPORT_MERGE_WORDS_H
#define CULPRIT_REPORT_MERGE_WORDS_H

#include <stddef.h>

struct json;
struct merge_job;
struct merge_proc;

/* The report's kind: "fault", "hang" or "exit" (a report without one is a fault, from before the others). */
const char *merge_kind(const struct json *doc);
/* obj's key as an unsigned number, 0 when absent or not positive. */
unsigned long long merge_uint(const struct json *obj, const char *key);
/* A fault's launch in a phrase: the kernel (cut in the middle when long) and where it was launched. */
void merge_fault_launch(const struct json *doc, char *out, size_t outsz);
/* The error's name in a phrase ("CUDA_ERROR_ASSERT (710)"). */
void merge_errname(const struct json *err, char *out, size_t outsz);
/* Whether the fault was inside a collective (an NCCL kernel): 1 with its name in coll, else 0. */
int merge_fault_in_collective(const struct json *doc, char *coll, size_t collsz);
/* A hang report's phrase, what its process waited in, and whether it runs a kernel of its own: into p. */
void merge_hang_phrase(struct merge_proc *p);
/* An exit record's phrase: into p. */
void merge_clean_phrase(struct merge_proc *p);
/* qsort orders: processes by rank, those without one last, then host and pid; groups by size. */
int merge_cmp_proc(const void *a, const void *b);
int merge_cmp_size(const void *a, const void *b);
/* The job's verdict line, into j->verdict. */
void merge_verdict_line(struct merge_job *j);

#endif
