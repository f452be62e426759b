/* The tables of `culprit run`'s after-run stages and their walkers, with the stages that gather no evidence of
 * their own: loading and saving a report, the verdict, --diagnose's note, delivery, the launch marks and what to
 * say when nothing was shown. The evidence stages live in their own files (stages.h lists them). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "stages.h"
#include "../cli/cli.h"
#include "../cli/deliver.h"
#include "../cli/watch.h"
#include "../base/config.h"
#include "../render/json.h"
#include "../render/render.h"
#include "../report/merge.h"
#include "../report/symbolize.h"
#include "../render/report_keys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ev_snapshot(const char *dir, struct ev_seen **seen, size_t *nseen)
{
    char **paths;
    size_t n, i;
    *seen = NULL;
    *nseen = 0;
    if (cli_list_reports(dir, &paths, &n) != 0 || n == 0)
        return 0;
    *seen = calloc(n, sizeof **seen);
    if (!*seen) {
        cli_free_list(paths, n);
        return ENOMEM;
    }
    for (i = 0; i < n; i++) {
        struct stat sb;
        (*seen)[i].path = paths[i];
        if (stat(paths[i], &sb) == 0) {
            (*seen)[i].ino = sb.st_ino;
            (*seen)[i].size = sb.st_size;
            (*seen)[i].mtime = sb.st_mtim;
        }
    }
    free(paths); /* the strings now belong to seen */
    *nseen = n;
    return 0;
}

int ev_is_old(const struct ev_seen *seen, size_t nseen, const char *path)
{
    struct stat sb;
    size_t i;
    if (stat(path, &sb) != 0)
        return 1;
    for (i = 0; i < nseen; i++)
        if (strcmp(seen[i].path, path) == 0)
            return seen[i].ino == sb.st_ino && seen[i].size == sb.st_size &&
                   seen[i].mtime.tv_sec == sb.st_mtim.tv_sec && seen[i].mtime.tv_nsec == sb.st_mtim.tv_nsec;
    return 0;
}

void ev_seen_free(struct ev_seen *seen, size_t nseen)
{
    for (size_t i = 0; i < nseen; i++)
        free(seen[i].path);
    free(seen);
}

/* The run directory may be shared: a link or another user's file named like a report is no report of this run's
 * (reading it followed the link: another file's content was shown as the verdict). A report of another culprit
 * command sharing the directory is that command's to show and annotate; one without this command's run id was
 * written outside its environment, or planted: not shown as its verdict. */
static enum ev_next ev_stage_load(struct ev_ctx *c)
{
    char why[1024];
    const char *run;
    int rc = symbolize_load_own(c->path, &c->doc, why, sizeof why);
    if (rc == SYMBOLIZE_EFOREIGN) {
        if (!c->skipped.unowned++)
            snprintf(c->skipped.first_unowned, sizeof c->skipped.first_unowned, "%s", c->path);
        return EV_PASSED;
    }
    if (rc != 0) {
        cli_err("%s", why);
        return EV_FAILED;
    }
    run = json_get_str(json_get(c->doc, RK_PROCESS), RK_RUN_ID);
    if (!run || strcmp(run, c->run_id) != 0) {
        if (!run && !c->skipped.foreign++)
            snprintf(c->skipped.first_foreign, sizeof c->skipped.first_foreign, "%s", c->path);
        return EV_PASSED;
    }
    /* Without a watch the library's one-line notice went straight to the terminal: it is the report's brief
     * text as written, which -q then does not repeat (with a watch, the watch saw the very line pass). */
    if (c->o->quiet && c->w && c->o->no_watch) {
        struct render_opts bro = {.brief = 1, .path = c->path};
        char *said = render_doc(c->doc, &bro);
        if (said)
            watch_note_said(c->w, said, strlen(said));
        free(said);
    }
    return EV_NEXT;
}

static enum ev_next ev_stage_symbolize(struct ev_ctx *c)
{
    int changed = 0;
    if (symbolize_doc(c->doc, &changed) == 0 && changed)
        c->changed = 1;
    return EV_NEXT;
}

static enum ev_next ev_stage_save(struct ev_ctx *c)
{
    char why[1024];
    if ((c->changed || c->addr || c->narrowed) && symbolize_save(c->path, c->doc, why, sizeof why) != 0)
        cli_err("%s (the verdict below is complete, only the file keeps its old content)", why);
    return EV_NEXT;
}

/* What each report of the run goes through, in order, before the verdict: symbolized, given the evidence the run
 * left (the asserts the watch saw, the end of its NCCL log, the kernel log's line of its fault), what the faulting
 * address touched (the GPU core dump's address, else the kernel log's page), a window of candidates that page
 * settles and then the address's answer as of the culprit's launch, saved, and a verdict of candidates settled by
 * a rerun when --rerun asks for one. */
static const struct ev_stage ev_report_stages[] = {
    {"load", ev_stage_load, {NULL, NULL}},
    {"symbolize", ev_stage_symbolize, {NULL, NULL}},
    {"asserts", asserts_stage, {"adding the device asserts to ", ""}},
    {"nccllog", nccllog_stage, {"adding NCCL's log to ", ""}},
    {"kernlog", kernlog_stage, {"adding the kernel's log of the GPU fault to ", ""}},
    {"address", faultpage_stage_address, {"answering the faulting address in ", ""}},
    {"faultpage", faultpage_stage, {"settling the verdict of ", " by the page of its faulting address"}},
    {"address again", faultpage_stage_readdress, {"answering the faulting address in ", ""}},
    {"save", ev_stage_save, {NULL, NULL}},
    {"rerun", rerun_stage, {NULL, NULL}},
};

/* Runs the report stages over the report at c->path. Returns 0 with the annotated report in c->doc (the caller's to
 * free), 1 when it is not the run's to show, -1 when it cannot be shown. */
static int ev_report(struct ev_ctx *c)
{
    c->doc = NULL;
    c->changed = c->addr = c->narrowed = 0;
    for (size_t i = 0; i < sizeof ev_report_stages / sizeof ev_report_stages[0]; i++) {
        const struct ev_stage *s = &ev_report_stages[i];
        switch (s->run(c)) {
        case EV_NEXT:
            break;
        case EV_NOMEM:
            if (s->nomem[0])
                cli_err("out of memory %s%s%s", s->nomem[0], c->path, s->nomem[1]);
            else
                cli_err("out of memory");
            break;
        case EV_PASSED:
            json_free(c->doc);
            c->doc = NULL;
            return 1;
        case EV_FAILED:
            json_free(c->doc);
            c->doc = NULL;
            return -1;
        }
    }
    return 0;
}

/* Says what the report stages passed over, in at most two lines. */
static void ev_skip_say(const struct ev_skipped *skip)
{
    if (skip->unowned)
        cli_err("%zu file(s) named like reports were not read (symbolic links, or files of another user: nothing "
                "culprit wrote for this run), such as %s",
                skip->unowned, skip->first_unowned);
    if (skip->foreign)
        cli_err("%zu report(s) carry no run id of this culprit run (written outside its environment, or put there "
                "by someone else) and are not shown as its verdict; 'culprit report %s' shows one",
                skip->foreign, skip->first_foreign);
}

/* The run's new reports, each through the report stages; c->mine holds those to show. */
static enum ev_next ev_stage_reports(struct ev_ctx *c)
{
    char **reports = NULL;
    size_t n = 0, i;
    if (cli_list_reports(c->dir, &reports, &n) == 0 && n && (c->mine = calloc(n, sizeof *c->mine)) != NULL) {
        memset(&c->skipped, 0, sizeof c->skipped);
        for (i = 0; i < n; i++) {
            c->path = reports[i];
            if (ev_is_old(c->seen, c->nseen, reports[i]) || ev_report(c) != 0) {
                free(reports[i]);
                continue;
            }
            c->mine[c->nmine].path = reports[i];
            c->mine[c->nmine++].doc = c->doc;
        }
        c->path = NULL;
        c->doc = NULL;
        ev_skip_say(&c->skipped);
        free(reports); /* the paths shown now belong to mine */
        return EV_NEXT;
    }
    if (n)
        cli_err("out of memory");
    cli_free_list(reports, n);
    return EV_NEXT;
}

/* The verdict over the run's reports. */
static enum ev_next ev_stage_verdict(struct ev_ctx *c)
{
    int verdicts;
    if (!c->mine)
        return EV_NEXT;
    fflush(stdout);
    verdicts = cli_show_reports(c->mine, c->nmine, c->o->quiet, stderr, "culprit:\n", c->rel, c->o->simulated, c->w,
                                c->faulted);
    /* exit records say no error was seen; a report that could not be shown may still hold one */
    c->shown = verdicts < 0 ? c->nmine : (size_t)verdicts;
    return EV_NEXT;
}

/* Whether a report names a framework operator anywhere (an "op" on a launch it lists, or a "diagnosis"). */
static int ev_report_has_ops(const struct json *doc)
{
    static const char *const lists[] = {RK_CANDIDATES, RK_HISTORY};
    if (json_len(json_get(doc, RK_DIAGNOSIS)) || json_get(json_get(doc, RK_CULPRIT), RK_OP))
        return 1;
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const struct json *l = json_get(doc, lists[k]);
        for (size_t i = 0; i < json_len(l); i++)
            if (json_get(json_at(l, i), RK_OP))
                return 1;
    }
    return 0;
}

/* --diagnose that named nothing: say why it may not have, rather than leave the user to wonder. */
static enum ev_next ev_stage_diagnose(struct ev_ctx *c)
{
    for (size_t i = 0; c->o->boot && !c->o->is_rerun && i < c->nmine; i++) {
        const struct json *d = c->mine[i].doc;
        const char *kind = json_get_str(d, RK_KIND);
        const char *py = json_get_str(d, RK_PYTHON_STATUS);
        if ((!kind || strcmp(kind, "fault") == 0) && !ev_report_has_ops(d)) {
            if (py && strncmp(py, "no Python", 9) == 0)
                cli_err("--diagnose named no operator: the process that faulted ran no Python (its report says "
                        "\"%s\"), and --diagnose names the PyTorch operators of Python programs",
                        py);
            else
                cli_err("--diagnose named no operator for this fault: the launches it lists were made outside "
                        "the PyTorch operators it saw (a program that never imported torch, a thread that did "
                        "not import it, or kernels a library launched on its own)");
            break;
        }
    }
    return EV_NEXT;
}

/* --on-report, --events: each report of the run handed on. */
static enum ev_next ev_stage_deliver(struct ev_ctx *c)
{
    for (size_t i = 0; !c->o->is_rerun && i < c->nmine; i++)
        deliver_report(c->o, c->mine[i].path, c->mine[i].doc);
    return EV_NEXT;
}

/* Counts and removes the files by which the run's processes said they launched kernels with culprit loaded
 * (cfg_launched_prefix): how many processes of the run culprit saw launch. */
static enum ev_next ev_stage_launched(struct ev_ctx *c)
{
    char prefix[96];
    struct dirent *e;
    int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    c->launched = 0;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return EV_NEXT;
    }
    cfg_launched_prefix(c->run_id, prefix, sizeof prefix);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && unlinkat(dirfd(d), e->d_name, 0) == 0)
            c->launched++;
    closedir(d);
    return EV_NEXT;
}

/* What is said when the run showed no verdict, or culprit was off in part of it; a directory culprit made for a run
 * that left nothing in it goes. */
static enum ev_next ev_stage_outcome(struct ev_ctx *c)
{
    const struct cli_watch *w = c->w;
    const char *cmd = c->o->argv[0];
    /* "no sticky CUDA error" is true only where culprit was there to see one */
    if (!c->off[0] && w->preload_error[0])
        snprintf(c->off, c->offsz, "the dynamic loader could not preload %s (%s)", render_base(c->lib),
                 w->preload_error);
    if (w->unwritten) {
        /* a fault was met and its verdict printed by the library, but no file holds it: it counts as one */
        *c->faulted = 1;
        if (!c->shown)
            cli_err("%s met a sticky CUDA error whose report culprit could not write (the verdict and why are "
                    "printed above)",
                    cmd);
        c->remove_dir = 1;
    } else if (!c->shown && c->off[0]) {
        cli_err("culprit was off in %s: %s; a fault there would not show here", cmd, c->off);
        c->remove_dir = 1;
    } else if (!c->shown && w->load_error[0]) {
        cli_err("the dynamic loader stopped %s before it ran (%s), so culprit never ran in it", cmd, w->load_error);
        c->remove_dir = 1;
    } else if (!c->shown && !c->launched) {
        cli_err("no sticky CUDA error in %s, and culprit saw no kernel launched in it: if it launches kernels, they "
                "ran in a process culprit was not loaded in (one started without culprit's LD_PRELOAD, as `env -u "
                "LD_PRELOAD` starts one, or a set-user-ID program)",
                cmd);
        c->remove_dir = 1;
    } else if (!c->shown) {
        cli_err("no sticky CUDA error in %s", cmd);
        c->remove_dir = 1;
    } else if (w->preload_error[0]) {
        cli_err("the dynamic loader could not preload %s into a process of %s (%s): culprit was off there",
                render_base(c->lib), cmd, w->preload_error);
    }
    return EV_NEXT;
}

/* `culprit run`'s steps once the command ended, in order: GPU core dumps first (a dump may make a verdict exact),
 * then a job's ranks rerun together before any report is shown, each report through the report stages, the
 * verdict, --diagnose's note, delivery, and the run's leftovers (NCCL's logs, the launch marks) before what to say
 * when nothing was shown. */
static const struct ev_stage ev_run_stages[] = {
    {"coredump", coredump_stage, {NULL, NULL}},    {"rerun", rerun_stage_job, {NULL, NULL}},
    {"reports", ev_stage_reports, {NULL, NULL}},   {"verdict", ev_stage_verdict, {NULL, NULL}},
    {"diagnose", ev_stage_diagnose, {NULL, NULL}}, {"deliver", ev_stage_deliver, {NULL, NULL}},
    {"nccllog", nccllog_stage_tidy, {NULL, NULL}}, {"launched", ev_stage_launched, {NULL, NULL}},
    {"outcome", ev_stage_outcome, {NULL, NULL}},
};

void ev_run(struct ev_ctx *c)
{
    for (size_t i = 0; i < sizeof ev_run_stages / sizeof ev_run_stages[0]; i++)
        if (ev_run_stages[i].run(c) == EV_NOMEM)
            cli_err("out of memory");
}

void ev_free(struct ev_ctx *c)
{
    for (size_t i = 0; i < c->nmine; i++) {
        json_free((struct json *)c->mine[i].doc);
        free((char *)c->mine[i].path);
    }
    free(c->mine);
    c->mine = NULL;
    c->nmine = 0;
}
