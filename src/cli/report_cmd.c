/* `culprit report`: shows reports written earlier, as text (full or one line each) or as indented JSON. Paths
 * may be report files or directories (their culprit-*.json files, or those of their run-* subdirectories).
 * The reports are symbolized first, all together (one addr2line per module: a job's ranks share their
 * programs), and answered for the faulting address their GPU core dump gave; each is written back when that
 * added anything, the file is writable and the reports are no more than CLI_WRITE_BACK_MAX. With --address,
 * each report also says what that address touched (render/addr.c); that answer is shown, not saved. A run that
 * takes more than a second says how far it got on stderr, once a second. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"
#include "../render/addr.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "../report/merge.h"
#include "../render/render.h"
#include "../report/symbolize.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* A growing list of report paths. */
struct cli_paths {
    char **v;   /* malloc'd paths */
    size_t n;   /* used entries */
    size_t cap; /* allocated entries */
};

static int cli_paths_add(struct cli_paths *p, const char *path)
{
    char *s = strdup(path);
    if (!s)
        return ENOMEM;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        char **v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return ENOMEM;
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = s;
    return 0;
}

static int cli_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the reports of a directory; when it holds none itself, those of its subdirectories (so that
 * `culprit report culprit-reports` shows every run). Returns 0 or an errno value. */
static int cli_collect_dir(struct cli_paths *out, const char *dir)
{
    char **list = NULL, **subs = NULL;
    size_t n = 0, nsubs = 0, capsubs = 0, i, j;
    struct dirent *de;
    DIR *d;
    int rc = cli_list_reports(dir, &list, &n);

    if (rc)
        return rc;
    for (i = 0; i < n && !rc; i++)
        rc = cli_paths_add(out, list[i]);
    cli_free_list(list, n);
    if (rc || n)
        return rc;

    d = opendir(dir);
    if (!d)
        return errno;
    while ((de = readdir(d)) != NULL && !rc) {
        struct stat sb;
        char *p;
        if (de->d_name[0] == '.')
            continue;
        if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
            rc = ENOMEM;
            break;
        }
        if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            free(p);
            continue;
        }
        if (nsubs == capsubs) {
            char **v;
            capsubs = capsubs ? capsubs * 2 : 16;
            v = realloc(subs, capsubs * sizeof *v);
            if (!v) {
                free(p);
                rc = ENOMEM;
                break;
            }
            subs = v;
        }
        subs[nsubs++] = p;
    }
    closedir(d);
    if (nsubs)
        qsort(subs, nsubs, sizeof *subs, cli_cmp);
    for (i = 0; i < nsubs && !rc; i++) {
        if (cli_list_reports(subs[i], &list, &n) != 0)
            continue;
        for (j = 0; j < n && !rc; j++)
            rc = cli_paths_add(out, list[j]);
        cli_free_list(list, n);
    }
    cli_free_list(subs, nsubs);
    return rc;
}

/* The value of option name at argv[*i], given as "NAME VALUE" or "NAME=VALUE", advancing *i past it; NULL when
 * argv[*i] is not that option, "" when its value is missing (or is "--", which is never an option's value). */
static const char *cli_report_opt(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return strcmp(argv[*i] + n + 1, "--") == 0 ? "" : argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0)
        return "";
    return argv[++*i];
}

#define CLI_PROGRESS_AFTER_S 1.0 /* a run quicker than this says nothing of its progress */
#define CLI_WRITE_BACK_MAX 64    /* more reports than this are shown symbolized but not written back */

/* Progress of a long run, on stderr: nothing in its first second, then at most a line a second. */
struct cli_progress {
    double start; /* CLOCK_MONOTONIC seconds when the run started */
    double last;  /* when the last line was printed; 0 when none was */
};

static double cli_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cli_progress(struct cli_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cli_progress(struct cli_progress *p, const char *fmt, ...)
{
    double now = cli_seconds();
    va_list ap;
    if (now - p->start < CLI_PROGRESS_AFTER_S || (p->last && now - p->last < 1.0))
        return;
    p->last = now;
    fprintf(stderr, "culprit: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (%.1f s)\n", now - p->start);
}

/* Symbolizes the reports together and, when they are few, writes back those that gained anything (a report we
 * may not write, someone else's or a read-only copy, is still shown symbolized). Returns 0 or ENOMEM. */
static int cli_symbolize(struct merge_report *reps, size_t n, struct cli_progress *pr)
{
    struct json **docs = calloc(n ? n : 1, sizeof *docs);
    int *changed = calloc(n ? n : 1, sizeof *changed);
    char why[1024];
    int rc = 0;
    if (!docs || !changed) {
        rc = ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        docs[i] = (struct json *)reps[i].doc;
    if (symbolize_docs(docs, n, changed) != 0) {
        rc = ENOMEM;
        goto out;
    }
    /* what the faulting address the GPU core dump gave touched, as culprit run writes it (render/addr.c) */
    for (size_t i = 0; i < n; i++) {
        int addr = 0;
        if (addr_annotate_fault(docs[i], &addr) != 0) {
            rc = ENOMEM;
            goto out;
        }
        if (addr)
            changed[i] = 1;
    }
    /* Each write is a new file renamed over the report (a crash must not leave half a report), and a thousand
     * of those took seconds where symbolizing them all again takes a tenth of one. */
    for (size_t i = 0; i < n && n <= CLI_WRITE_BACK_MAX; i++) {
        if (changed[i])
            symbolize_save(reps[i].path, reps[i].doc, why, sizeof why);
        cli_progress(pr, "writing the symbolized reports back: %zu of %zu", i + 1, n);
    }
out:
    free(docs);
    free(changed);
    return rc;
}

/* The options of `culprit report`, parsed. */
struct report_args {
    int as_json;      /* --json */
    int brief;        /* --brief */
    int have_address; /* --address was given */
    uint64_t address; /* --address ADDR */
    uint64_t access;  /* --access-size N; 0 when not given */
    int help;         /* -h or --help: the help is printed, nothing else to do */
    int first;        /* argv's index of the first PATH */
};

/* Parses the options before the PATHs. Returns 0 (ra filled), or CLI_EXIT_USAGE with the reason printed. */
static int report_args(int argc, char **argv, struct report_args *ra)
{
    long long num;
    const char *v;
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (strcmp(a, "--json") == 0)
            ra->as_json = 1;
        else if (strcmp(a, "--brief") == 0)
            ra->brief = 1;
        else if ((v = cli_report_opt(argc, argv, &i, "--address")) != NULL) {
            if (addr_parse(v, &ra->address) != 0) {
                cli_err("--address must be a device address, in hex as reports write them (0x7f2a00001000) or in "
                        "decimal, not '%s'",
                        v);
                return CLI_EXIT_USAGE;
            }
            ra->have_address = 1;
        } else if ((v = cli_report_opt(argc, argv, &i, "--access-size")) != NULL) {
            if (cli_parse_int(v, 1, 1 << 20, &num) != 0) {
                cli_err("--access-size must be the bytes accessed, 1 to 1048576, not '%s'", v);
                return CLI_EXIT_USAGE;
            }
            ra->access = (uint64_t)num;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            cli_help_verb(stdout, "report");
            ra->help = 1;
            return 0;
        } else {
            cli_err("report has no option '%s'; see 'culprit help report'", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (ra->access && !ra->have_address) {
        cli_err("--access-size goes with --address ADDR");
        return CLI_EXIT_USAGE;
    }
    if (i >= argc) {
        cli_err("report needs a report file or a directory of reports, as in: culprit report culprit-reports");
        return CLI_EXIT_USAGE;
    }
    if (ra->as_json && ra->brief) {
        cli_err("--json and --brief do not go together; pick one");
        return CLI_EXIT_USAGE;
    }
    ra->first = i;
    return 0;
}

/* Adds the PATHs argv[from..argc) to paths: a file as it is, a directory's culprit-*.json reports. One that
 * cannot be read, or a directory without reports, is said and sets *failed. Returns 0, or -1 when memory ran out
 * (said). */
static int report_collect(int argc, char **argv, int from, struct cli_paths *paths, int *failed)
{
    for (int i = from; i < argc; i++) {
        struct stat sb;
        size_t before = paths->n;
        int err;
        if (stat(argv[i], &sb) != 0) {
            cli_err("cannot read %s: %s", argv[i], strerror(errno));
            *failed = 1;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (cli_paths_add(paths, argv[i]) != 0) {
                cli_err("out of memory");
                return -1;
            }
            continue;
        }
        err = cli_collect_dir(paths, argv[i]);
        if (err) {
            cli_err("cannot list %s: %s", argv[i], strerror(err));
            *failed = 1;
        } else if (paths->n == before) {
            cli_err("%s holds no culprit-*.json reports", argv[i]);
            *failed = 1;
        }
    }
    return 0;
}

/* --json: the reports into w, each job merged into one document (culprit.job/1) and every other report as it is;
 * an array when there is more than one. Returns 0, or -1 when memory ran out merging them (said). */
static int report_json(const struct merge_report *reps, size_t nreps, struct jw *w)
{
    struct merge_job *jobs = NULL;
    size_t njobs = 0, items = 0, k;

    if (merge_jobs(reps, nreps, &jobs, &njobs) != 0) {
        cli_err("out of memory merging the reports");
        return -1;
    }
    for (k = 0; k < njobs; k++)
        items += merge_is_job(&jobs[k]) ? 1 : jobs[k].nreports;
    if (items > 1)
        jw_arr_begin(w);
    for (k = 0; k < njobs; k++) {
        if (merge_is_job(&jobs[k])) {
            merge_write_json(&jobs[k], reps, w);
            continue;
        }
        for (size_t r = 0; r < jobs[k].nreports; r++)
            json_dump(reps[jobs[k].reports[r]].doc, w);
    }
    if (items > 1)
        jw_arr_end(w);
    merge_free(jobs, njobs);
    return 0;
}

int cli_report_main(int argc, char **argv)
{
    struct cli_paths paths = {0};
    struct report_args ra = {0};
    int failed = 0, rc;
    struct merge_report *reps = NULL;
    size_t k, nreps = 0;
    struct cli_progress pr = {cli_seconds(), 0};
    struct jw w;

    rc = report_args(argc, argv, &ra);
    if (rc != 0 || ra.help)
        return rc;
    jw_init(&w);
    w.pretty = 1;
    if (report_collect(argc, argv, ra.first, &paths, &failed) != 0) {
        rc = CLI_EXIT_FAIL;
        goto out;
    }

    reps = calloc(paths.n ? paths.n : 1, sizeof *reps);
    if (!reps) {
        cli_err("out of memory");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    for (k = 0; k < paths.n; k++) {
        struct json *doc = NULL;
        char why[1024];
        cli_progress(&pr, "reading the reports: %zu of %zu", k, paths.n);
        if (symbolize_load(paths.v[k], &doc, why, sizeof why) != 0) {
            cli_err("%s", why);
            failed = 1;
            continue;
        }
        reps[nreps].path = paths.v[k];
        reps[nreps++].doc = doc;
    }
    cli_progress(&pr, "symbolizing %zu reports", nreps);
    if (cli_symbolize(reps, nreps, &pr) != 0) {
        cli_err("out of memory symbolizing the reports");
        rc = CLI_EXIT_FAIL;
        goto out;
    }
    for (k = 0; ra.have_address && k < nreps; k++) /* shown, not saved: after the write-back above */
        if (addr_annotate((struct json *)reps[k].doc, ra.address, ra.access, "command line") != 0) {
            cli_err("out of memory answering --address for %s", reps[k].path);
            failed = 1;
        }
    cli_progress(&pr, "merging %zu reports", nreps);
    /* the reports of a job (several processes, or a launcher's ranks) are shown merged, as one view */
    if (!ra.as_json) {
        int faulted = 0;
        if (cli_show_reports(reps, nreps, ra.brief, stdout, "\n", NULL, 0, NULL, &faulted) < 0)
            failed = 1;
    } else if (report_json(reps, nreps, &w) != 0) {
        failed = 1;
    }
    if (ra.as_json && w.len) {
        if (w.err) {
            cli_err("cannot write the JSON: out of memory, or nested deeper than %d levels", JW_MAX_DEPTH);
            failed = 1;
        } else {
            fwrite(w.buf, 1, w.len, stdout);
            fputc('\n', stdout);
        }
    }
    if (fflush(stdout) != 0) {
        cli_err("cannot write the output: %s", strerror(errno));
        failed = 1;
    }
    if (pr.last)
        fprintf(stderr, "culprit: %zu reports read and shown in %.1f s\n", nreps, cli_seconds() - pr.start);
    rc = failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    for (k = 0; k < nreps; k++)
        json_free((struct json *)reps[k].doc);
    free(reps);
    jw_free(&w);
    cli_free_list(paths.v, paths.n);
    return rc;
}
