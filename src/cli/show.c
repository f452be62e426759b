/* Showing reports as text, for `culprit run` at the end and `culprit report`: the reports of a job (several
 * processes, or processes started by a launcher) as one merged view, any other report on its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"
#include "watch.h"
#include "../render/json.h"
#include "../report/merge.h"
#include "../render/render.h"
#include "../render/report_keys.h"

#include <stdlib.h>
#include <string.h>

int cli_show_reports(const struct merge_report *reps, size_t n, int brief, FILE *out, const char *sep,
                     const char *run_dir, int no_debugger, const struct cli_watch *said, int *faulted)
{
    struct merge_job *jobs = NULL;
    size_t njobs = 0, shown = 0, verdicts = 0;
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        const char *kind = json_get_str(reps[i].doc, RK_KIND);
        /* reports written before hang reports existed have no kind: they are all faults */
        if (!kind || strcmp(kind, "fault") == 0)
            *faulted = 1;
        if (!kind || strcmp(kind, "exit") != 0)
            verdicts++;
    }
    if (merge_jobs(reps, n, &jobs, &njobs) != 0) {
        cli_err("out of memory merging the reports");
        return -1;
    }
    for (size_t j = 0; j < njobs; j++) {
        const struct merge_job *job = &jobs[j];
        size_t procs = 0;
        for (size_t k = 0; k < job->nprocs; k++)
            if (job->procs[k].status != MERGE_MISSING)
                procs++;
        /* one `culprit run` per rank (srun culprit run ...) sees its own rank only: the others are not missing,
         * they are other commands' to show; a job of one rank is whole */
        if (merge_is_job(job) && !(run_dir && procs == 1 && job->world_size > 1)) {
            struct render_opts ro = {.brief = brief, .path = NULL, .no_debugger = no_debugger};
            char *text = merge_render(job, reps, &ro);
            if (!text) {
                cli_err("out of memory rendering the job's reports");
                rc = -1;
                continue;
            }
            if (shown++ && sep && !brief)
                fputs(sep, out);
            fputs(text, out);
            free(text);
            continue;
        }
        for (size_t k = 0; k < job->nreports; k++) {
            const struct merge_report *r = &reps[job->reports[k]];
            struct render_opts ro = {.brief = brief, .path = r->path, .no_debugger = no_debugger};
            char *text = render_doc(r->doc, &ro);
            if (!text) {
                cli_err("out of memory rendering %s", r->path);
                rc = -1;
                continue;
            }
            /* -q: the library's own one-line notice said this already, unless the run learned more since */
            if (brief && said && watch_said(said, text)) {
                free(text);
                continue;
            }
            if (shown++ && sep && !brief)
                fputs(sep, out);
            fputs(text, out);
            free(text);
        }
        if (run_dir && job->ranked && procs == 1 && job->world_size > 1)
            cli_say(out, "'culprit report %s' merges the reports of every rank written there", run_dir);
    }
    merge_free(jobs, njobs);
    return rc ? rc : (int)verdicts;
}
