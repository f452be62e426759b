/* `culprit trace REPORT [-o FILE]`: writes a report's launches as a Chrome/Perfetto trace (src/report/trace.c),
 * after adding file:line to their frames as `culprit report` does. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "../report/replace.h"
#include "../report/symbolize.h"
#include "../report/trace.h"
#include "../render/report_keys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DIR/culprit-4242.json -> DIR/trace-4242.json beside it (a name `culprit report DIR` does not take for a
 * report). */
static int cli_trace_default(const char *report, char *out, size_t n)
{
    const char *base = strrchr(report, '/');
    size_t dirlen = base ? (size_t)(base - report + 1) : 0, len;
    base = base ? base + 1 : report;
    if (strncmp(base, "culprit-", 8) == 0)
        base += 8;
    len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    return (size_t)snprintf(out, n, "%.*strace-%.*s.json", (int)dirlen, report, (int)len, base) < n ? 0 : -1;
}

int cli_trace_main(int argc, char **argv)
{
    const char *report = NULL, *out = NULL;
    char why[1024], dflt[PATH_MAX];
    struct json *doc = NULL;
    struct jw w;
    const char *kind;
    size_t nlaunches = 0;
    int i, changed = 0, rc = CLI_EXIT_FAIL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cli_help_verb(stdout, "trace");
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
                cli_err("%s needs a file name (or - for standard output)%s", argv[i],
                        i + 1 < argc ? ", and '--' is not one" : "");
                return CLI_EXIT_USAGE;
            }
            out = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_err("trace has no option '%s'; see 'culprit help trace'", argv[i]);
            return CLI_EXIT_USAGE;
        } else if (report) {
            cli_err("trace takes one report, not '%s' as well", argv[i]);
            return CLI_EXIT_USAGE;
        } else {
            report = argv[i];
        }
    }
    if (!report) {
        cli_err("trace needs a report, as in: culprit trace culprit-reports/run-.../culprit-4242.json");
        return CLI_EXIT_USAGE;
    }
    if (!out) {
        if (cli_trace_default(report, dflt, sizeof dflt) != 0) {
            cli_err("the trace's file name would be too long; give one with -o");
            return CLI_EXIT_USAGE;
        }
        out = dflt;
    }
    if (symbolize_load(report, &doc, why, sizeof why) != 0) {
        cli_err("%s", why);
        return CLI_EXIT_FAIL;
    }
    kind = json_get_str(doc, RK_KIND);
    if (kind && strcmp(kind, "exit") == 0) {
        /* an exit record says a process saw no CUDA error: no launch and no fault, nothing to put on a timeline */
        cli_err("%s is an exit record (its process saw no CUDA error): it holds no launches and no fault, so there "
                "is no trace to write",
                report);
        goto out_doc;
    }
    if (symbolize_doc(doc, &changed) == 0 && changed && symbolize_save(report, doc, why, sizeof why) != 0)
        cli_err("%s (the trace is complete, only the report keeps its old content)", why);
    jw_init(&w);
    if (trace_write(doc, &w, &nlaunches) != 0) {
        cli_err("%s: out of memory writing the trace", report);
        goto out;
    }
    if (nlaunches == 0)
        cli_err("%s lists no launches: the trace holds only %s", report,
                json_get(doc, RK_ERROR) || json_get(doc, RK_HANG) ? "the moment of the error or hang" : "its tracks");
    if (strcmp(out, "-") == 0) {
        if (fwrite(w.buf, 1, w.len, stdout) != w.len || fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
            cli_err("cannot write the trace to standard output: %s", strerror(errno));
            goto out;
        }
    } else {
        /* a private file renamed into place (mode 0600, as the report's), which never follows a planted link */
        if (replace_text_file(out, w.buf, w.len, 0, why, sizeof why) != 0) {
            cli_err("%s; no trace written", why);
            goto out;
        }
        cli_err("trace of %s written to %s (open it in Perfetto or chrome://tracing)", report, out);
    }
    rc = CLI_EXIT_OK;
out:
    jw_free(&w);
out_doc:
    json_free(doc);
    return rc;
}
