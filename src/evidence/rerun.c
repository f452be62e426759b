/* `culprit run --rerun`: when a report's verdict is a set of candidates, the same command runs again with
 * blocking launches over their window only (the targeted rerun a verdict suggests), and the two runs become one
 * report: "confirmed by the rerun" when the rerun faulted at one of the candidates (that launch becomes the
 * culprit, with the first run's stacks), or, when the program did not behave the same way (it faulted
 * elsewhere, or not at all), a note saying so with both runs kept. Only when asked: a rerun repeats the
 * program's side effects. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "rerun.h"
#include "../cli/cli.h"
#include "promote.h"
#include "stages.h"
#include "../render/addr.h"
#include "../render/json.h"
#include "../base/config.h"
#include "../report/symbolize.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

/* The fault report of the rerun that answers the first run's report: the one of the process with the same rank
 * when ranks are known, else the only fault report of the rerun. NULL when there is none (the rerun did not
 * fault). *several tells that several reports made the choice impossible. */
static struct json *rerun_answer(const char *dir, const struct json *first, char *path, size_t pathsz, int *several)
{
    char **reports = NULL;
    size_t n = 0, i;
    struct json *found = NULL;
    long long rank = json_get_int(json_get(first, RK_PROCESS), RK_RANK, -1);
    char why[512];

    *several = 0;
    if (cli_list_reports(dir, &reports, &n) != 0)
        return NULL;
    for (i = 0; i < n; i++) {
        struct json *doc = NULL;
        const char *kind;
        if (symbolize_load_own(reports[i], &doc, why, sizeof why) != 0)
            continue;
        kind = json_get_str(doc, RK_KIND);
        if ((kind && strcmp(kind, "fault") != 0) ||
            (rank >= 0 && json_get_int(json_get(doc, RK_PROCESS), RK_RANK, -1) != rank)) {
            json_free(doc);
            continue;
        }
        if (found) {
            *several = 1;
            json_free(doc);
            continue;
        }
        found = doc;
        snprintf(path, pathsz, "%s", reports[i]);
    }
    cli_free_list(reports, n);
    if (*several) {
        json_free(found);
        return NULL;
    }
    return found;
}

/* The candidate of the first run that is launch seq, or NULL. */
static struct json *rerun_candidate(struct json *cands, long long seq)
{
    size_t i;
    for (i = 0; i < json_len(cands); i++)
        if (json_get_int(json_at(cands, i), RK_SEQ, -1) == seq)
            return (struct json *)json_at(cands, i);
    return NULL;
}

/* Writes the outcome into the first report: "rerun" {window, outcome, report, seq, kernel}, and for a confirmed
 * candidate the verdict made exact. Returns 0 or ENOMEM. */
static int rerun_merge(struct json *doc, long long lo, long long hi, const char *outcome, const char *rpath,
                       const struct json *rculprit, const char *sentence)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    struct json *cands = (struct json *)json_get(doc, RK_CANDIDATES);
    struct json *r = json_new(JSON_OBJ), *win = json_new(JSON_OBJ);
    const char *reason = json_get_str(verdict, RK_REASON);
    long long seq = json_get_int(rculprit, RK_SEQ, -1);
    if (!json_is(rculprit, JSON_OBJ))
        rculprit = NULL; /* a rerun report without a culprit (null) names no launch */
    char *why = NULL;

    if (!r || !win || json_put(win, RK_FIRST, json_new_int(lo)) || json_put(win, RK_LAST, json_new_int(hi)) ||
        json_put(r, RK_WINDOW, win) || json_put(r, RK_OUTCOME, json_new_str(outcome)) ||
        (rpath && json_put(r, RK_REPORT, json_new_str(rpath))) ||
        (rculprit && json_put(r, RK_SEQ, json_new_int(seq))) ||
        (rculprit && json_get_str(rculprit, RK_KERNEL) &&
         json_put(r, RK_KERNEL, json_new_str(json_get_str(rculprit, RK_KERNEL)))) ||
        json_set(doc, RK_RERUN, r) != 0) {
        json_free(r);
        return ENOMEM;
    }
    if (asprintf(&why, "%s%s%s", reason ? reason : "", reason ? "; " : "", sentence) < 0 ||
        json_put(verdict, RK_REASON, json_new_str(why))) {
        free(why);
        return ENOMEM;
    }
    free(why);
    if (strcmp(outcome, "confirmed") != 0)
        return 0;
    /* The candidate becomes the culprit; the others stay listed as what the first run could not rule out. */
    struct json *chosen = rerun_candidate(cands, seq);
    for (size_t i = 0; chosen && i < cands->len; i++)
        if (cands->kids[i] == chosen)
            return promote_candidate(doc, i, RK_CANDIDATES_BEFORE_RERUN) == ENOMEM ? ENOMEM : 0;
    return 0;
}

int rerun_needed(const struct json *doc, long long *lo, long long *hi)
{
    const struct json *verdict = rk_verdict(doc), *win = json_get(verdict, RK_WINDOW);
    const char *kind = json_get_str(doc, RK_KIND);
    if ((kind && strcmp(kind, "fault") != 0) || !rk_is_candidates(doc) || json_get(doc, RK_RERUN))
        return 0; /* a report merged with a rerun already is not rerun again */
    *lo = json_get_int(win, RK_FIRST, -1);
    *hi = json_get_int(win, RK_LAST, -1);
    return *lo > 0 && *hi >= *lo;
}

/* After the rerun (its reports in dir): the outcome for the first run's report doc at path, over window
 * lo..hi, merged into it and saved. Returns 0 or an exit code. */
static int rerun_conclude(struct json *doc, const char *path, long long lo, long long hi, const char *dir)
{
    struct json *answer = NULL;
    char why[1024], rpath[PATH_MAX], sentence[PATH_MAX + 512];
    long long seq;
    int several = 0, rc;
    const char *outcome;

    answer = rerun_answer(dir, doc, rpath, sizeof rpath, &several);
    seq = json_get_int(json_get(answer, RK_CULPRIT), RK_SEQ, -1);
    if (answer && rk_is_exact(answer) && rerun_candidate((struct json *)json_get(doc, RK_CANDIDATES), seq)) {
        outcome = "confirmed";
        snprintf(sentence, sizeof sentence,
                 "confirmed by a rerun with blocking launches #%lld..#%lld: launch "
                 "#%lld faulted there",
                 lo, hi, seq);
    } else if (answer) {
        outcome = "elsewhere";
        if (seq > 0)
            snprintf(sentence, sizeof sentence,
                     "a rerun with blocking launches #%lld..#%lld faulted at launch #%lld "
                     "instead, so the program does not run the same way twice; both runs are shown (the rerun's "
                     "report: %s)",
                     lo, hi, seq, rpath);
        else
            snprintf(sentence, sizeof sentence,
                     "a rerun with blocking launches #%lld..#%lld faulted but did not "
                     "pin a launch there (the rerun's report: %s)",
                     lo, hi, rpath);
    } else {
        outcome = several ? "unmatched" : "no-fault";
        snprintf(sentence, sizeof sentence,
                 several
                     ? "a rerun with blocking launches #%lld..#%lld left several reports, none of them this process's "
                       "alone"
                     : "a rerun with blocking launches #%lld..#%lld did not fault, so the program does not "
                       "run the same way twice",
                 lo, hi);
    }
    rc = rerun_merge(doc, lo, hi, outcome, answer ? rpath : NULL, answer ? json_get(answer, RK_CULPRIT) : NULL,
                     sentence);
    if (rc == 0 && symbolize_save(path, doc, why, sizeof why) != 0) {
        cli_err("%s", why);
        rc = CLI_EXIT_FAIL;
    } else if (rc) {
        cli_err("out of memory merging the rerun into %s", path);
        rc = CLI_EXIT_FAIL;
    }
    json_free(answer);
    return rc;
}

/* Whether the process of a report ran Python ("python_status" names the interpreter, not "no Python in this
 * process"); a report without the field may have. */
static int rerun_ran_python(const struct json *doc)
{
    const char *st = json_get_str(doc, RK_PYTHON_STATUS);
    return !st || strncmp(st, "no Python", 9) != 0;
}

/* A rerun of a Python program diagnoses PyTorch operators by default: it is slow anyway, and the operator's
 * arguments are what the user wants to see next. A program that ran no Python (a C program) has no operators to
 * name, and without the Python package at hand the rerun runs as asked. */
static void rerun_diagnose(struct cli_run_opts *r, int python)
{
    static char boot[PATH_MAX];
    if (!r->boot && python && cli_find_boot(boot, sizeof boot, 1) == 0)
        r->boot = boot;
}

/* Makes the rerun's report directory, or takes one already there only when it is this user's and no one else may
 * write into it: in a shared run directory, a rerun-PID made beforehand by someone else would be theirs to fill
 * (and their core dump directory's parent). Returns 0, or -1 after saying why. */
static int rerun_own_dir(const char *dir)
{
    struct stat sb;
    if (mkdir(dir, 0700) == 0)
        return 0;
    if (errno == EEXIST && lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid() &&
        !(sb.st_mode & (S_IWGRP | S_IWOTH)))
        return 0;
    cli_err("the rerun's report directory %s %s: no rerun", dir,
            errno == EEXIST ? "is already there and not a private directory of yours" : strerror(errno));
    return -1;
}

/* The options of a rerun, the same for one process and for a job: the first run's, with blocking launches over
 * the window (launches "A:B" for one process, rank_launches "R=A:B,..." for a job's ranks), reports quietly into
 * dir, no rerun of its own, and operators diagnosed where python (rerun_diagnose). */
static struct cli_run_opts rerun_opts(const struct cli_run_opts *o, const char *launches, const char *rank_launches,
                                      const char *dir, int python)
{
    struct cli_run_opts r = *o;
    rerun_diagnose(&r, python);
    r.mode = "blocking";
    r.launches = launches;
    r.rank_launches = rank_launches;
    r.kernels = NULL;
    r.dir = dir;
    r.quiet = 1;
    r.rerun = 0;
    r.is_rerun = 1;
    return r;
}

int rerun_settle(const struct cli_run_opts *o, const char *path, const char *run_dir)
{
    struct cli_run_opts r;
    struct json *doc = NULL;
    char why[1024], window[64], dir[PATH_MAX];
    long long lo, hi;
    int wstatus = 0, faulted = 0, rc;

    if (symbolize_load_own(path, &doc, why, sizeof why) != 0) {
        cli_err("%s", why);
        return CLI_EXIT_FAIL;
    }
    if (!rerun_needed(doc, &lo, &hi)) {
        json_free(doc);
        return 0;
    }
    snprintf(window, sizeof window, "%lld:%lld", lo, hi);
    if ((size_t)snprintf(dir, sizeof dir, "%s/rerun-%lld", run_dir,
                         json_get_int(json_get(doc, RK_PROCESS), RK_PID, 0)) >= sizeof dir) {
        json_free(doc);
        cli_err("the rerun's report directory would be too long a path");
        return CLI_EXIT_FAIL;
    }
    if (rerun_own_dir(dir) != 0) {
        json_free(doc);
        return CLI_EXIT_FAIL;
    }
    r = rerun_opts(o, window, NULL, dir, rerun_ran_python(doc));
    cli_err("the verdict is one of launches #%lld..#%lld: running the command again with blocking launches "
            "there (culprit run --mode blocking --launches %s%s), reports into %s",
            lo, hi, window, r.boot ? " --diagnose" : "", dir);
    rc = cli_run_command(&r, &wstatus, &faulted);
    if (rc == 0)
        rc = rerun_conclude(doc, path, lo, hi, dir);
    json_free(doc);
    return rc;
}

#define RERUN_MAX_RANKS 64 /* ranks of one job a rerun gives windows to */

int rerun_settle_job(const struct cli_run_opts *o, char **paths, size_t n, const char *run_dir)
{
    struct cli_run_opts r;
    struct json *docs[RERUN_MAX_RANKS];
    const char *which[RERUN_MAX_RANKS];
    long long los[RERUN_MAX_RANKS], his[RERUN_MAX_RANKS];
    char why[1024], spec[CFG_PATTERN_MAX] = "", dir[PATH_MAX];
    size_t k = 0, used = 0;
    int wstatus = 0, faulted = 0, rc = 0;

    for (size_t i = 0; i < n && k < RERUN_MAX_RANKS; i++) {
        struct json *doc = NULL;
        long long lo, hi, rank;
        if (symbolize_load_own(paths[i], &doc, why, sizeof why) != 0)
            continue;
        rank = json_get_int(json_get(doc, RK_PROCESS), RK_RANK, -1);
        if (rank < 0 || !rerun_needed(doc, &lo, &hi)) {
            json_free(doc);
            continue;
        }
        int w = snprintf(spec + used, sizeof spec - used, "%s%lld=%lld:%lld", used ? "," : "", rank, lo, hi);
        if (w < 0 || (size_t)w >= sizeof spec - used) {
            json_free(doc);
            break; /* the ranks that fit are rerun; the others keep their candidates */
        }
        used += (size_t)w;
        docs[k] = doc;
        which[k] = paths[i];
        los[k] = lo;
        his[k++] = hi;
    }
    if (k == 0)
        return 0;
    if ((size_t)snprintf(dir, sizeof dir, "%s/rerun-job", run_dir) >= sizeof dir) {
        cli_err("the rerun's report directory would be too long a path");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    if (rerun_own_dir(dir) != 0) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    int python = 0;
    for (size_t i = 0; i < k; i++)
        python |= rerun_ran_python(docs[i]);
    r = rerun_opts(o, NULL, spec, dir, python);
    cli_err("%zu rank(s) of the job have a window of candidates: running the job again with blocking launches "
            "there, each rank its own (CULPRIT_RANK_LAUNCHES=%s%s), reports into %s",
            k, spec, r.boot ? ", operators diagnosed" : "", dir);
    rc = cli_run_command(&r, &wstatus, &faulted);
    for (size_t i = 0; rc == 0 && i < k; i++)
        rc = rerun_conclude(docs[i], which[i], los[i], his[i], dir);
out:
    for (size_t i = 0; i < k; i++)
        json_free(docs[i]);
    return rc;
}

/* The run's stage: a job's ranks are rerun together, each over its own window, before any report is shown. */
enum ev_next rerun_stage_job(struct ev_ctx *c)
{
    char **reports = NULL;
    size_t n = 0, i, fresh = 0;
    if (!c->o->rerun || cli_list_reports(c->dir, &reports, &n) != 0 || !n) {
        cli_free_list(reports, n);
        return EV_NEXT;
    }
    for (i = 0; i < n; i++)
        if (!ev_is_old(c->seen, c->nseen, reports[i]))
            reports[fresh++] = reports[i];
        else
            free(reports[i]);
    n = fresh;
    rerun_settle_job(c->o, reports, n, c->dir);
    cli_free_list(reports, n);
    return EV_NEXT;
}

/* The report stage: a verdict of candidates settled by a rerun when --rerun asks for one. */
enum ev_next rerun_stage(struct ev_ctx *c)
{
    char why[1024];
    long long lo, hi;
    if (!c->o->rerun || !rerun_needed(c->doc, &lo, &hi))
        return EV_NEXT;
    json_free(c->doc);
    c->doc = NULL;
    rerun_settle(c->o, c->path, c->dir);
    if (symbolize_load_own(c->path, &c->doc, why, sizeof why) != 0) {
        cli_err("%s", why);
        return EV_FAILED;
    }
    /* the rerun may have named the culprit, whose launch the address's answer is judged at */
    if (addr_annotate_fault(c->doc, &c->addr) == 0 && c->addr && symbolize_save(c->path, c->doc, why, sizeof why) != 0)
        cli_err("%s", why);
    return EV_NEXT;
}
