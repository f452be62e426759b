/* `culprit run --coredump`, after the dumps are read (coredump.c): each dump is tied to the report of the process
 * that wrote it, and a verdict that was not exact becomes exact when the dump singles out one launch (its kernel,
 * block and launch shape, or, among several that run it, the one whose arguments point into what the faulting
 * warp touched). The driver aborts the process once the dump is written, so the report may be a hang report
 * (SIGABRT), which then becomes the fault it was. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "coredump.h"
#include "coredump_elf.h"
#include "../cli/cli.h"
#include "promote.h"
#include "../render/addr.h"
#include "../render/argmatch.h"
#include "../base/demangle.h"
#include "../render/json.h"
#include "../report/symbolize.h"
#include "../render/report_keys.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A launch's grid or block as three positive numbers (a graph launch has none): 1, else 0. */
static int coredump_dims(const struct json *arr, long long v[3])
{
    if (json_len(arr) != 3)
        return 0;
    for (int i = 0; i < 3; i++)
        if (json_int(json_at(arr, (size_t)i), &v[i]) != 0 || v[i] <= 0)
            return 0;
    return 1;
}

/* Whether the dump's kernel, block index and launch shape may be those of launch l. */
static int coredump_fits(const struct coredump_info *ci, const struct json *l)
{
    const char *k = json_get_str(l, RK_KERNEL), *m = json_get_str(l, RK_MANGLED);
    char *dm = NULL;
    int same;
    if (!ci->kernel)
        return 0;
    if (m && !(k && *k && strncmp(k, "_Z", 2) != 0))
        k = dm = demangle_name(m);
    same = k && demangle_same_kernel(k, ci->kernel);
    free(dm);
    if (!same)
        return 0;
    long long g[3], b[3];
    int have_g = coredump_dims(json_get(l, RK_GRID), g), have_b = coredump_dims(json_get(l, RK_BLOCK), b);
    for (int i = 0; i < 3; i++) {
        if (have_g && ((ci->block[0] >= 0 && ci->block[i] >= g[i]) || (ci->grid[0] >= 0 && ci->grid[i] != g[i])))
            return 0;
        if (have_b && ci->block_dim[0] >= 0 && ci->block_dim[i] != b[i])
            return 0;
    }
    return 1;
}

/* coredump_fits as argmatch wants it. */
static int coredump_fits_arg(void *arg, const struct json *l)
{
    return coredump_fits(arg, l);
}

/* Adds the allocation holding address (a mapping of a segment made of several: the whole run, since a pointer into
 * any piece of it reaches it) to ranges unless it is there already. Returns the new count. */
static int coredump_add_range(const struct json *doc, unsigned long long address, unsigned access,
                              struct argmatch_range *ranges, int n, int max)
{
    struct addr_answer a;
    addr_answer(doc, address, access, &a);
    if ((a.where != ADDR_INSIDE && a.where != ADDR_OVERRUN) || !a.in.obj || n >= max)
        return n;
    uint64_t base, end;
    addr_reach(&a.in, &base, &end);
    for (int i = 0; i < n; i++)
        if (ranges[i].base == base)
            return n;
    ranges[n].base = base;
    ranges[n].end = end;
    return n + 1;
}

int coredump_fault_ranges(const struct json *doc, const struct coredump_info *ci, struct argmatch_range *ranges,
                          int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    if (ci->have_address)
        n = coredump_add_range(doc, ci->address, ci->access_size, ranges, n, max);
    /* the warp's lanes whose address the dump gives: the in-bounds ones show the buffer the faulting instruction
     * works on, which the faulting launch was handed */
    for (int l = 0; ci->lanes && l < COREDUMP_LANES; l++)
        if (ci->lanes[l].have_address)
            n = coredump_add_range(doc, ci->lanes[l].address, ci->access_size, ranges, n, max);
    return n;
}

int coredump_narrow_by_args(struct json *doc, const struct coredump_info *ci, const struct argmatch_range *ranges,
                            int n, int *narrowed)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    struct argmatch_result m;
    char *why = NULL;
    *narrowed = 0;
    if (!verdict || !ci->kernel || n < 1 || rk_is_exact(doc))
        return 0;
    if (!argmatch_find(doc, ranges, n, coredump_fits_arg, (void *)ci, &m))
        return 0;
    long long seq = json_get_int(json_at(rk_candidates(doc), m.hit), RK_SEQ, -1);
    if (asprintf(&why,
                 "named by its arguments: launch #%lld's parameter bytes %d..%d hold 0x%llx, which points into the "
                 "allocation 0x%llx..0x%llx the faulting access touched, and the arguments of no other candidate "
                 "running %s point there",
                 seq, m.word * 8, m.word * 8 + 7, (unsigned long long)m.value, (unsigned long long)ranges[m.range].base,
                 (unsigned long long)ranges[m.range].end, ci->kernel) < 0)
        return ENOMEM;
    int rc = promote_because(doc, m.hit, RK_CANDIDATES_BEFORE_COREDUMP, "arguments", why);
    free(why);
    if (rc)
        return rc == ENOMEM ? ENOMEM : 0;
    *narrowed = 1;
    return 0;
}

/* The CUresult a GPU exception surfaces as (cuda-gdb's names of the exceptions). */
static int coredump_code(const char *exception, const char **name)
{
    static const struct {
        const char *word;
        int code;
        const char *name;
    } map[] = {{"Assert", 710, "CUDA_ERROR_ASSERT"}, /* "Warp Assert", "Assertion failed" */
               {"Misaligned", 716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
               {"Illegal Address", 700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
               {"Out-of-range Address", 700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
               {"Illegal Instruction", 715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
               {"Invalid PC", 718, "CUDA_ERROR_INVALID_PC"},
               {"Address Space", 717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
               {"Stack", 714, "CUDA_ERROR_HARDWARE_STACK_ERROR"}};
    for (size_t i = 0; exception && i < sizeof map / sizeof map[0]; i++)
        if (strstr(exception, map[i].word)) {
            *name = map[i].name;
            return map[i].code;
        }
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return 719;
}

/* A hang report written because the driver aborted the process after its core dump (SIGABRT) is the report of
 * a fault: it becomes one, its "error" made from the dump and from the thread the signal found (its "hang"
 * object stays, saying how the process ended). Returns 0 or ENOMEM. */
static int coredump_make_fault(struct json *doc, const struct coredump_info *ci)
{
    const struct json *hang = json_get(doc, RK_HANG), *threads = json_get(doc, RK_THREADS), *who = NULL;
    const char *name;
    int code = coredump_code(ci->exception, &name);
    struct json *err = json_new(JSON_OBJ);
    char msg[512];
    /* the driver aborts from a thread of its own: the main thread shows where the program was (waiting in a
     * synchronize, typically); without it, the thread the signal found */
    long long pid = json_get_int(json_get(doc, RK_PROCESS), RK_PID, -1);
    for (size_t i = 0; i < json_len(threads) && !who; i++)
        if (json_get_int(json_at(threads, i), RK_TID, -2) == pid)
            who = json_at(threads, i);
    for (size_t i = 0; i < json_len(threads) && !who; i++) {
        const struct json *h = json_get(json_at(threads, i), RK_SIGNAL_HANDLER);
        if (json_is(h, JSON_BOOL) && h->boolean)
            who = json_at(threads, i);
    }
    if (!who && json_len(threads))
        who = json_at(threads, 0);
    snprintf(msg, sizeof msg, "the GPU core dump says: %s", ci->exception ? ci->exception : "exception");
    if (!err || json_put(err, RK_CODE, json_new_int(code)) || json_put(err, RK_NAME, json_new_str(name)) ||
        json_put(err, RK_MESSAGE, json_new_str(msg)) ||
        json_put(err, RK_API, json_new_str("the driver's GPU core dump (it then aborted the process)")) ||
        json_put(err, RK_THREAD,
                 json_new_int(json_get_int(who, RK_TID, json_get_int(json_get(doc, RK_PROCESS), RK_PID, 0)))) ||
        json_put(err, RK_TIME_NS, json_new_int(json_get_int(hang, RK_TIME_NS, 0))) ||
        json_put(err, RK_TIME_UNIX_NS, json_new_int(json_get_int(hang, RK_TIME_UNIX_NS, 0))) ||
        (json_get(who, RK_STACK) && json_set(err, RK_STACK, promote_copy(json_get(who, RK_STACK))) != 0) ||
        json_set(doc, RK_ERROR, err) != 0) {
        json_free(err);
        return ENOMEM;
    }
    return json_put(doc, RK_KIND, json_new_str("fault")) ? ENOMEM : 0;
}

int coredump_attach(struct json *doc, const struct coredump_info *ci, const char *dump_path, int *changed)
{
    struct json *verdict = (struct json *)json_get(doc, RK_VERDICT);
    struct json *cands = (struct json *)json_get(doc, RK_CANDIDATES);
    const struct json *culprit = json_get(doc, RK_CULPRIT);
    const char *reason = json_get_str(verdict, RK_REASON);
    int exact = rk_is_exact(doc);
    struct json *cd = coredump_json(ci, dump_path);
    char where[PATH_MAX + 32], *why = NULL;
    size_t i, hits = 0, hit = 0;
    int rc;

    if (!cd || json_set(doc, RK_COREDUMP, cd) != 0) {
        json_free(cd);
        return ENOMEM;
    }
    *changed = 1;
    const char *kind = json_get_str(doc, RK_KIND);
    if (kind && strcmp(kind, "hang") == 0 && ci->exception && coredump_make_fault(doc, ci) != 0)
        return ENOMEM;
    coredump_where(ci, where, sizeof where);
    if (!verdict || !ci->kernel)
        return 0;
    if (exact && json_is(culprit, JSON_OBJ)) {
        int same = coredump_fits(ci, culprit);
        rc = asprintf(&why, "%s%sthe GPU core dump %s: %s faulted%s (%s)", reason ? reason : "", reason ? "; " : "",
                      same ? "agrees" : "names another kernel", ci->kernel, where,
                      ci->exception ? ci->exception : "exception");
        if (rc < 0 || json_put(verdict, RK_REASON, json_new_str(why))) {
            free(why);
            return ENOMEM;
        }
        free(why);
        return 0;
    }
    for (i = 0; i < json_len(cands); i++)
        if (json_is(json_at(cands, i), JSON_OBJ) && coredump_fits(ci, json_at(cands, i))) {
            hits++;
            hit = i;
        }
    if (hits > 1) {
        /* several candidates run the dump's kernel: what each passed it may tell them apart */
        struct argmatch_range ranges[COREDUMP_LANES + 1];
        int narrowed = 0, n = coredump_fault_ranges(doc, ci, ranges, COREDUMP_LANES + 1);
        rc = asprintf(&why, "%s%sthe GPU core dump says %s faulted%s (%s), which more than one candidate runs",
                      reason ? reason : "", reason ? "; " : "", ci->kernel, where,
                      ci->exception ? ci->exception : "exception");
        if (rc < 0 || json_put(verdict, RK_REASON, json_new_str(why))) {
            free(why);
            return ENOMEM;
        }
        free(why);
        return coredump_narrow_by_args(doc, ci, ranges, n, &narrowed);
    }
    if (hits != 1) {
        rc = asprintf(&why, "%s%sthe GPU core dump says %s faulted%s (%s), %s", reason ? reason : "",
                      reason ? "; " : "", ci->kernel, where, ci->exception ? ci->exception : "exception",
                      hits ? "which more than one candidate runs" : "which no candidate runs");
        if (rc < 0 || json_put(verdict, RK_REASON, json_new_str(why))) {
            free(why);
            return ENOMEM;
        }
        free(why);
        return 0;
    }
    /* One candidate: it becomes the culprit, the others are kept as what was left before the dump. */
    long long seq = json_get_int(cands->kids[hit], RK_SEQ, -1);
    rc = asprintf(&why,
                  "%s%sthe GPU core dump says %s faulted%s (%s): launch #%lld is the only candidate that "
                  "runs it",
                  reason ? reason : "", reason ? "; " : "", ci->kernel, where,
                  ci->exception ? ci->exception : "exception", seq);
    if (rc < 0 || json_put(verdict, RK_REASON, json_new_str(why)) ||
        promote_candidate(doc, hit, RK_CANDIDATES_BEFORE_COREDUMP) != 0) {
        free(why);
        return ENOMEM;
    }
    free(why);
    return 0;
}

/* "gpucore-HOST-PID.nvcudmp" -> pid and host. */
static int coredump_name(const char *name, long *pid, char *host, size_t hostsz)
{
    const char *dot = strstr(name, ".nvcudmp"), *dash;
    if (strncmp(name, "gpucore-", 8) != 0 || !dot)
        return -1;
    for (dash = dot; dash > name + 8 && dash[-1] != '-'; dash--)
        ;
    if (dash <= name + 8 || !isdigit((unsigned char)*dash))
        return -1;
    *pid = strtol(dash, NULL, 10);
    snprintf(host, hostsz, "%.*s", (int)(dash - 1 - (name + 8)), name + 8);
    return 0;
}

/* A dump of the run's directory waiting to be read. */
#define COREDUMP_SCAN_MAX 4096 /* dump names of one run looked at to choose from; more are only counted */

struct coredump_found {
    char name[NAME_MAX + 1]; /* its file name in the dump directory */
    long pid;                /* the pid its name gives */
    int reported;            /* a process of that pid left a report of this run */
};

static int coredump_cmp_found(const void *a, const void *b)
{
    const struct coredump_found *x = a, *y = b;
    if (x->reported != y->reported)
        return x->reported ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Keeps of reports[0..n) those of run run_id that are this user's regular files (the others are no report of this
 * run's), and each one's pid in pids (n entries). Returns how many were kept. */
static size_t coredump_run_reports(const char *run_id, char **reports, size_t n, long long *pids)
{
    size_t kept = 0;
    char why[1024];
    for (size_t i = 0; i < n; i++) {
        struct json *doc = NULL;
        const char *run;
        if (symbolize_load_own(reports[i], &doc, why, sizeof why) == 0 &&
            (run = json_get_str(json_get(doc, RK_PROCESS), RK_RUN_ID)) != NULL && strcmp(run, run_id) == 0) {
            pids[kept] = json_get_int(json_get(doc, RK_PROCESS), RK_PID, -1);
            reports[kept++] = reports[i];
        } else {
            free(reports[i]);
        }
        json_free(doc);
    }
    return kept;
}

/* The dumps in the run's directory (dfd): regular files of this user's named like the driver names them, at most
 * COREDUMP_SCAN_MAX of them in found (*nfound), the rest counted in *over. Returns the array (NULL for none). */
static struct coredump_found *coredump_scan(DIR *d, int dfd, size_t *nfound_out, size_t *over_out)
{
    struct dirent *de;
    struct stat sb;
    struct coredump_found *found = NULL;
    size_t nfound = 0, cap = 0, over = 0;

    while ((de = readdir(d)) != NULL) {
        char host[256];
        long pid;
        if (fnmatch("gpucore-*.nvcudmp", de->d_name, FNM_PERIOD) != 0 ||
            coredump_name(de->d_name, &pid, host, sizeof host) || strlen(de->d_name) > NAME_MAX)
            continue;
        /* a regular file of this user's (the driver writes it as the process's user), not a link */
        if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid())
            continue;
        if (nfound == cap) {
            struct coredump_found *nf;
            if (cap >= COREDUMP_SCAN_MAX) { /* the rest are only counted */
                over++;
                continue;
            }
            cap = cap ? cap * 2 : COREDUMP_MAX_DUMPS;
            if (!(nf = realloc(found, cap * sizeof *nf))) {
                over++;
                cap = nfound;
                continue;
            }
            found = nf;
        }
        struct coredump_found *f = &found[nfound++];
        snprintf(f->name, sizeof f->name, "%s", de->d_name);
        f->pid = pid;
        f->reported = 0;
    }
    *nfound_out = nfound;
    *over_out = over;
    return found;
}

/* Reads one dump (name, in the run's directory dfd, dump_dir) with the debugger and ties it to its process's
 * report among the run's (reports, of pids); says so where no report is its process's. Returns 1 when tied. */
static int coredump_read_one(int dfd, const char *dump_dir, const char *name, char **reports, size_t nrep,
                             const long long *pids)
{
    struct stat sb;
    char dump[PATH_MAX], host[256], why[1024];
    long pid;
    struct coredump_info ci;
    char *out;
    int found_rep = 0, fd, tied = 0;
    coredump_name(name, &pid, host, sizeof host);
    snprintf(dump, sizeof dump, "%s/%s", dump_dir, name);
    /* opened once more without following a link, as the debugger is about to read it */
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    close(fd);
    if (!(out = coredump_run_gdb(dump, why, sizeof why))) {
        cli_err("GPU core dump %s not read: %s", dump, why);
        return 0;
    }
    if (coredump_parse(out, &ci) != 0) {
        cli_err("GPU core dump %s: the debugger named no exception; its output ends: %.300s", dump,
                strlen(out) > 300 ? out + strlen(out) - 300 : out);
        free(out);
        coredump_free(&ci);
        return 0;
    }
    free(out);
    struct coredump_census cs;
    if (coredump_census(dump, &cs) == 0)
        coredump_note_census(&ci, &cs);
    for (size_t i = 0; i < nrep && !found_rep; i++) {
        struct json *doc = NULL;
        const struct json *proc;
        int changed = 0;
        if (pids[i] != pid || symbolize_load_own(reports[i], &doc, why, sizeof why) != 0)
            continue;
        proc = json_get(doc, RK_PROCESS);
        const char *h = json_get_str(proc, RK_HOSTNAME), *kind = json_get_str(doc, RK_KIND);
        if (json_get_int(proc, RK_PID, -1) == pid && (!h || !strcmp(h, host)) && (!kind || strcmp(kind, "exit") != 0)) {
            found_rep = 1;
            if (coredump_attach(doc, &ci, dump, &changed) != 0)
                cli_err("out of memory tying %s to %s", dump, reports[i]);
            else if (changed && symbolize_save(reports[i], doc, why, sizeof why) != 0)
                cli_err("%s", why);
            else
                tied++;
        }
        json_free(doc);
    }
    if (!found_rep) {
        char where[PATH_MAX + 32];
        coredump_where(&ci, where, sizeof where);
        cli_err("GPU core dump %s (process %ld on %s): %s faulted%s (%s); culprit wrote no report for that "
                "process",
                dump, pid, host, ci.kernel ? ci.kernel : "a kernel", where, ci.exception ? ci.exception : "exception");
    }
    coredump_free(&ci);
    return tied;
}

int coredump_attach_all(const char *dump_dir, const char *run_dir, const char *run_id)
{
    DIR *d;
    struct stat sb;
    struct coredump_found *found = NULL;
    char **reports = NULL;
    size_t nrep = 0, nfound = 0, over = 0;
    long long *pids = NULL;
    int tied = 0, dfd;

    if (!dump_dir || !*dump_dir)
        return 0;
    /* the directory coredump_prepare made: still a directory of this user's that no one else may write into */
    dfd = open(dump_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 || fstat(dfd, &sb) != 0 || sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH))) {
        cli_err("the run's directory of GPU core dumps %s is no longer the private directory culprit made: its dumps "
                "are not read",
                dump_dir);
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    if (!(d = fdopendir(dfd))) {
        close(dfd);
        return 0;
    }
    found = coredump_scan(d, dfd, &nfound, &over);
    /* the run's reports, only when there is a dump to tie to them */
    if (nfound && cli_list_reports(run_dir, &reports, &nrep) != 0)
        nrep = 0;
    if (!(pids = malloc((nrep ? nrep : 1) * sizeof *pids))) {
        cli_err("out of memory reading the GPU core dumps");
        cli_free_list(reports, nrep);
        reports = NULL;
        nfound = nrep = 0;
    }
    nrep = coredump_run_reports(run_id, reports, nrep, pids);
    for (size_t k = 0; k < nfound; k++)
        for (size_t i = 0; i < nrep && !found[k].reported; i++)
            found[k].reported = pids[i] == found[k].pid;
    /* the dumps of processes that left a report first, then by name; at most COREDUMP_MAX_DUMPS are read */
    if (nfound)
        qsort(found, nfound, sizeof *found, coredump_cmp_found);
    if (nfound > COREDUMP_MAX_DUMPS) {
        over += nfound - COREDUMP_MAX_DUMPS;
        nfound = COREDUMP_MAX_DUMPS;
    }
    for (size_t k = 0; k < nfound; k++)
        tied += coredump_read_one(dfd, dump_dir, found[k].name, reports, nrep, pids);
    if (over)
        cli_err("%zu more GPU core dump(s) in %s were not read: culprit reads at most %d of one run", over, dump_dir,
                COREDUMP_MAX_DUMPS);
    closedir(d);
    free(found);
    free(pids);
    cli_free_list(reports, nrep);
    rmdir(dump_dir); /* only when the run left no dump there */
    return tied;
}
