/* Text rendering of a culprit report: the full verdict (error, where it surfaced, the culprit launch with its
 * stack, the launches before it, candidates and how to pin them) or a one-line summary. Output is plain ASCII
 * layout without colours (names are copied, made terminal-safe by render_add), and keeps to about 100 columns
 * except for names that are longer on their own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "render.h"
#include "render_int.h"
#include "addr.h"
#include "../base/demangle.h"
#include "json.h"
#include "nccl.h"
#include "report_keys.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char render_why[200];

const char *render_error(void)
{
    return render_why;
}

/* ---- the two forms ---- */

/* Under a faulting graph launch: the node a device assert pinned, else the kernels captured into the graph (one
 * of them faulted), each with the line that captured it. */
static void render_graph_nodes(struct render_buf *b, const struct json *launch, const struct json *asserts)
{
    const struct json *node = json_get(launch, RK_NODE);
    const struct json *nodes = json_get(launch, RK_GRAPH_NODES);
    char last_place[200] = "";
    size_t i, n = json_len(nodes);
    if (json_is(node, JSON_OBJ)) {
        const char *src = json_get_str(launch, RK_NODE_SOURCE);
        render_line(b, "  the node that faulted, %s:",
                    src && strcmp(src, "graph breadcrumbs") == 0
                        ? "from the graph's breadcrumbs (the node before it completed)"
                        : "named by the device assert");
        render_launch_item(b, node, "  ", 1, asserts, NULL, 0, -1);
        return;
    }
    if (!json_is(nodes, JSON_ARR) || n == 0)
        return;
    render_line(b, "  the graph ran %zu captured kernel%s; one of them faulted:", n, n == 1 ? "" : "s");
    for (i = 0; i < n; i++) {
        size_t j = i;
        while (j + 1 < n && render_same_launch(json_at(nodes, j), json_at(nodes, j + 1)))
            j++;
        render_launch_item(b, json_at(nodes, i), "  ", 1, asserts, last_place, sizeof last_place,
                           j > i ? json_get_int(json_at(nodes, j), RK_SEQ, -1) : -1);
        i = j;
    }
}

/* What the GPU core dump says of the fault inside the kernel (culprit run --coredump): the source line (with
 * -lineinfo), the faulting block and thread, and where it ran. */
static void render_coredump(struct render_buf *b, const struct json *cd, const struct json *fa)
{
    const char *file = json_get_str(cd, RK_SOURCE_FILE), *exc = json_get_str(cd, RK_EXCEPTION);
    char where[300] = "", blk[64], thr[64];
    long long line = json_get_int(cd, RK_SOURCE_LINE, -1), warp = json_get_int(cd, RK_WARP, -1);
    if (!json_is(cd, JSON_OBJ))
        return;
    if (file && line > 0)
        snprintf(where, sizeof where, " at %s:%lld", render_base(file), line);
    if (json_len(json_get(cd, RK_BLOCK)) == 3 && json_len(json_get(cd, RK_THREAD)) == 3)
        snprintf(where + strlen(where), sizeof where - strlen(where), ", block %s, thread %s",
                 render_dims(json_get(cd, RK_BLOCK), blk, sizeof blk),
                 render_dims(json_get(cd, RK_THREAD), thr, sizeof thr));
    render_line(b, "  the GPU core dump: %s%s", exc ? exc : "an exception", where);
    if (warp >= 0)
        render_line(b, "    (device %lld, SM %lld, warp %lld, lane %lld)", json_get_int(cd, RK_DEVICE, -1),
                    json_get_int(cd, RK_SM, -1), warp, json_get_int(cd, RK_LANE, -1));
    const struct json *crashed = json_get(cd, RK_DEBUGGER_CRASHED);
    const char *unknown = json_get_str(cd, RK_ADDRESS_UNKNOWN);
    if (json_is(crashed, JSON_BOOL) && crashed->boolean) {
        const char *err = json_get_str(cd, RK_DEBUGGER_ERROR);
        char text[800];
        /* where the dump's own tables say why no thread is known (address_unknown, below), that is said alone */
        snprintf(text, sizeof text, "cuda-gdb died reading the dump%s%s%s, after what is shown here%s", err ? " (" : "",
                 err ? err : "", err ? ")" : "",
                 unknown ? "" : ": the faulting thread, instruction and address are not known");
        render_para(b, "    ", "      ", text);
    }
    /* the faulting access: its instruction, and its address when the dump gives it (what it touched is said by
     * the address lines, render_addr) */
    const char *access = json_get_str(cd, RK_ACCESS), *space = json_get_str(cd, RK_SPACE);
    const char *insn = json_get_str(cd, RK_INSTRUCTION), *addr = json_get_str(cd, RK_ADDRESS);
    /* an illegal address's faulting lane is chosen with the allocation table: its address is the answer's */
    if (!addr && json_get_int(fa, RK_LANE, -1) >= 0 && json_get_str(fa, RK_SOURCE) &&
        !strcmp(json_get_str(fa, RK_SOURCE), "coredump"))
        addr = json_get_str(fa, RK_ADDRESS);
    long long size = json_get_int(cd, RK_ACCESS_SIZE, 0), align = json_get_int(cd, RK_ALIGNMENT, 0);
    if (!access) {
        if (unknown) /* no instruction read, but the dump's own tables say why no thread could give it */
            render_para(b, "    ", "      ", unknown);
        return;
    }
    render_line(b, "    the faulting access: a %lld-byte %s %s (%s)%s%s", size, space ? space : "", access,
                insn ? insn : "?", addr ? " at " : "", addr ? addr : "");
    if (addr && align > 1)
        render_line(b, "    %s is not a multiple of %lld: the access needs %lld-byte alignment", addr, align, align);
    if (!addr && unknown)
        render_para(b, "    ", "      ", unknown);
}

/* "arguments: 0x7f5b7fe00000 0x100 (12 bytes)": what the launch passed its kernel, as 8-byte words, when its
 * record kept it; then, for each word that points into an allocation the report's table recorded, which one
 * (the buffers the kernel was given: the faulting access went through one of them, or through none). */
static void render_args(struct render_buf *b, const struct json *doc, const struct json *launch)
{
    const struct json *p = json_get(launch, RK_PARAMS);
    long long size = json_get_int(launch, RK_PARAMS_SIZE, -1);
    char line[256];
    size_t used = 0;
    if (!json_len(p) || size < 0)
        return;
    for (size_t i = 0; i < json_len(p) && used < sizeof line; i++) {
        const char *w = json_str(json_at(p, i));
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", i ? " " : "", w ? w : "?");
    }
    if ((unsigned long long)size > json_len(p) * 8)
        render_line(b, "  arguments: %s ... (%lld bytes, the first %zu kept)", line, size, json_len(p) * 8);
    else
        render_line(b, "  arguments: %s (%lld bytes)", line, size);
    for (size_t i = 0; i < json_len(p); i++) {
        char what[2200], text[2400];
        if (!addr_describe_word(doc, launch, i, what, sizeof what))
            continue;
        snprintf(text, sizeof text, "word %zu points to %s", i, what);
        render_para(b, "    ", "      ", text);
    }
}

static void render_launch(struct render_buf *b, const struct json *doc, const struct json *launch, const char *reason,
                          const struct json *asserts, const struct json *coredump, const struct json *fa)
{
    char *owned = NULL;
    const char *name = render_kernel(launch, &owned);
    const char *api = json_get_str(launch, RK_API);
    const char *kind = json_get_str(launch, RK_KIND);
    long long seq = json_get_int(launch, RK_SEQ, -1), shmem = json_get_int(launch, RK_SHARED_MEM, -1);
    char geo[160], place[200], head[128] = "";
    size_t used = 0;

    render_line(b, "the kernel that faulted: %s", name);
    render_nccl_kernel(b, name, "  ");
    render_asserts(b, asserts, launch, name, "  ", 1);
    render_coredump(b, coredump, fa);
    if (seq >= 0)
        used += (size_t)snprintf(head, sizeof head, "launch #%lld", seq);
    if (api)
        used += (size_t)snprintf(head + used, sizeof head - used, "%svia %s", used ? " " : "", api);
    /* plain kernel launches are the norm; only the other kinds are worth a word */
    if (kind && strcmp(kind, "kernel") != 0 && used < sizeof head)
        snprintf(head + used, sizeof head - used, "%s(%s launch)", used ? " " : "", kind);
    if (head[0])
        render_line(b, "  %s", head);
    render_geometry(launch, geo, sizeof geo);
    if (kind && strcmp(kind, "graph") == 0)
        shmem = -1; /* the graph's nodes have their own */
    if (geo[0] || shmem >= 0) {
        char sh[64] = "";
        if (shmem >= 0)
            snprintf(sh, sizeof sh, "%lld bytes of shared memory", shmem);
        render_line(b, "  %s%s%s", geo, geo[0] && sh[0] ? ", " : "", sh);
    }
    render_args(b, doc, launch);
    render_place(launch, place, sizeof place);
    if (place[0])
        render_line(b, "  on %s", place);
    if (reason)
        render_para(b, "  how culprit knows: ", "    ", reason);
    render_origin(b, launch, "  launched from");
    render_op(b, launch, "  ", 1);
    render_graph_nodes(b, launch, asserts);
    free(owned);
}

/* Why the error showed up in this call rather than where the kernel was launched: the call waits for the GPU. */
static const char *render_surface_note(const char *api)
{
    if (!api)
        return NULL;
    if (strcmp(api, "exit") == 0)
        return "culprit found this error as the process exited: the program either exited with the faulty "
               "work still queued or met the error in a CUDA call culprit does not wrap (the CUDA runtime "
               "checks the context inside some of its own calls), so the stack above is the exit's and the "
               "program's own message, if any, says where it stopped";
    if (strstr(api, "MemcpyDtoH") || strcmp(api, "cuMemcpy") == 0 || strncmp(api, "cuMemcpy_", 9) == 0)
        return "a copy to the host waits for the kernels queued before it (.item(), .cpu(), .tolist() and "
               "printing a CUDA tensor all do this)";
    if (strstr(api, "MemFree") || strstr(api, "MemFreeHost") || strstr(api, "PrimaryCtx") || strstr(api, "CtxDestroy"))
        return "freeing device memory or tearing down a context waits for the GPU "
               "(torch.cuda.empty_cache() does this)";
    if (strstr(api, "EventSynchronize") || strstr(api, "EventQuery") || strstr(api, "StreamQuery"))
        return "waiting on or polling an event or stream observes the device's state";
    if (strstr(api, "Synchronize"))
        return "a synchronize waits for every queued kernel (torch.cuda.synchronize(), loss.item() and "
               "cudaDeviceSynchronize do this)";
    if (strstr(api, "Launch"))
        return "after a fault the driver refuses every new launch, so the next launch reports it";
    return NULL;
}

/* A launch from a thread that runs no Python (PyTorch's autograd engine during backward()): the Python threads'
 * lines when the error surfaced, the waiting one among them. */
static void render_waiting_threads(struct render_buf *b, const struct json *doc, const struct json *launch)
{
    const struct json *threads = json_get(doc, RK_PYTHON_THREADS);
    if (json_len(json_get(launch, RK_PYTHON)) || !json_len(threads))
        return;
    render_line(b, "  its thread runs no Python (as PyTorch's autograd engine during backward()); when the error");
    render_line(b, "  surfaced, the Python thread%s waiting on it %s at:", json_len(threads) == 1 ? "" : "s",
                json_len(threads) == 1 ? "was" : "were");
    for (size_t i = 0; i < json_len(threads); i++) {
        const struct json *t = json_at(threads, i);
        if (json_len(threads) > 1)
            render_line(b, "    thread %lld:", json_get_int(t, RK_ID, 0));
        render_python(b, json_get(t, RK_PYTHON), json_len(threads) > 1 ? "      " : "    ");
    }
}

/* The hand-off to cuda-gdb: run under it, the program stops where the kernel faults (cuda-gdb stops at a GPU
 * exception, an assert included, with the focus on the faulting thread and, with -lineinfo, its source line), so
 * the culprit can be stepped through there. Only for faults of a process whose command line is known. */
static void render_debugger(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const char *kind = json_get_str(doc, RK_KIND);
    const struct json *process = json_get(doc, RK_PROCESS);
    if ((kind && strcmp(kind, "fault") != 0) || json_len(json_get(process, RK_ARGV)) == 0 ||
        json_get_int(process, RK_ARGV_LEFT_OUT, 0) > 0 || (o && o->no_debugger))
        return;
    render_add(b, "culprit:\n");
    render_run_again(b, process, "to stop in cuda-gdb where it faults (the faulting thread, its line with -lineinfo):",
                     "cuda-gdb -ex run --args ");
}

/* Whether doc is a device assert's report whose run printed no assert line (culprit run read it all: an empty
 * device_asserts). */
static int render_asserts_lost(const struct json *doc)
{
    const struct json *asserts = json_get(doc, RK_DEVICE_ASSERTS);
    return rk_error_code(doc, 0) == RK_ERROR_ASSERT && json_is(asserts, JSON_ARR) && json_len(asserts) == 0;
}

static void render_full(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const struct json *err = json_get(doc, RK_ERROR);
    const struct render_verdict v = render_verdict_of(doc);
    const struct json *hist = json_get(doc, RK_HISTORY);
    const char *msg = json_get_str(err, RK_MESSAGE);
    const char *api = json_get_str(err, RK_API);
    long long tid = json_get_int(err, RK_THREAD, -1);
    char ename[160];
    size_t i;

    render_errname(err, ename, sizeof ename);
    render_line(b, "%s%s%s", ename, msg ? ": " : "", msg ? msg : "");
    if (api || tid >= 0 || json_get(err, RK_STACK)) {
        char tbuf[48] = "";
        if (tid >= 0)
            snprintf(tbuf, sizeof tbuf, " on thread %lld", tid);
        if (json_len(json_get(err, RK_PYTHON))) {
            render_line(b, "it surfaced later, in %s%s, at (Python):", api ? api : "a CUDA call", tbuf);
            render_python(b, json_get(err, RK_PYTHON), "    ");
            render_line(b, "  native stack:");
            render_stack_max(b, json_get(err, RK_STACK), "    ", 3);
        } else {
            render_line(b, "it surfaced later, in %s%s, at:", api ? api : "a CUDA call", tbuf);
            render_stack(b, json_get(err, RK_STACK), "    ");
        }
        if (render_surface_note(api))
            render_para(b, "  why there: ", "    ", render_surface_note(api));
    }
    render_add(b, "culprit:\n");

    if (json_is(v.culprit, JSON_OBJ)) {
        render_launch(b, doc, v.culprit, v.reason, json_get(doc, RK_DEVICE_ASSERTS), json_get(doc, RK_COREDUMP),
                      json_get(doc, RK_FAULT_ADDRESS));
        render_waiting_threads(b, doc, v.culprit);
    } else if (rk_is_candidates(doc)) {
        /* handled below */
    } else if (rk_is_exact(doc)) {
        render_line(b, "the verdict says exact, but the report names no launch%s%s", v.reason ? ": " : ".",
                    v.reason ? v.reason : "");
    } else {
        render_para(b, "culprit could not name the kernel that faulted: ", "  ",
                    v.reason ? v.reason : "the report gives no reason");
    }

    if (rk_is_candidates(doc) || json_len(v.cands) > 0) {
        size_t n = json_len(v.cands);
        long long lo = -1, hi = -1;
        if (json_is(v.culprit, JSON_OBJ))
            render_add(b, "culprit:\n");
        if (n == 0) {
            render_line(b, "culprit could not tell which launch faulted, and the report lists no candidates%s%s",
                        v.reason ? ": " : ".", v.reason ? v.reason : "");
        } else {
            render_line(b, "culprit could not tell which of these %zu launch%s faulted:", n, n == 1 ? "" : "es");
            char last_place[200] = "";
            for (i = 0; i < n; i++) {
                const struct json *c = json_at(v.cands, i);
                size_t j = i;
                /* consecutive launches of the same kernel, shape and launch site read as one line */
                while (j + 1 < n && render_same_launch(json_at(v.cands, j), json_at(v.cands, j + 1)))
                    j++;
                render_launch_item(b, c, "  ", 1, json_get(doc, RK_DEVICE_ASSERTS), last_place, sizeof last_place,
                                   j > i ? json_get_int(json_at(v.cands, j), RK_SEQ, -1) : -1);
                render_seq_span(v.cands, i, j + 1, &lo, &hi);
                i = j;
            }
            if (v.reason && !json_is(v.culprit, JSON_OBJ))
                render_para(b, "  why: ", "    ", v.reason);
            if (render_asserts_lost(doc))
                render_para(b, "  no assert text: ", "    ",
                            "the output culprit run read held no device-assert line to tell these launches apart "
                            "(when thousands of threads assert at once, the device can lose every line)");
            addr_render_freed_args(b, doc, v.cands);
            if (lo >= 0) {
                char cmd[128];
                snprintf(cmd, sizeof cmd, "culprit run --mode blocking --launches %lld:%lld -- ", lo, hi);
                render_run_again(b, json_get(doc, RK_PROCESS),
                                 "to pin it exactly, run it again with blocking launches in that window:", cmd);
            }
        }
    }

    addr_render(b, doc); /* what the faulting address touched, when the report gives one */
    if (json_len(hist) > 0) {
        const char *stream = json_get_str(v.culprit, RK_STREAM);
        render_add(b, "culprit:\n");
        if (stream)
            render_line(b, "launches before it on stream %s (oldest first):", stream);
        else
            render_line(b, "launches before it on its stream (oldest first):");
        for (i = 0; i < json_len(hist); i++)
            render_launch_item(b, json_at(hist, i), "  ", 0, NULL, NULL, 0, -1);
    }
    render_diagnosis(b, doc);
    render_nccl_log(b, doc);
    render_debugger(b, doc, o);
    if (o && o->path)
        render_line(b, "report: %s", o->path);
}

static void render_brief(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const struct json *err = json_get(doc, RK_ERROR);
    const struct render_verdict v = render_verdict_of(doc);
    const char *api = json_get_str(err, RK_API);
    char ename[160];

    render_errname(err, ename, sizeof ename);
    render_add(b, "culprit: %s", ename);
    if (api)
        render_add(b, " surfaced in %s", api);
    if (json_is(v.culprit, JSON_OBJ)) {
        char shortname[RENDER_BRIEF_NAME + 1];
        long long seq = json_get_int(v.culprit, RK_SEQ, -1);
        render_add(b, "; faulting kernel: %s", render_brief_kernel(v.culprit, shortname, sizeof shortname));
        if (seq >= 0)
            render_add(b, ", launch #%lld", seq);
    } else if (json_len(v.cands) > 0 || rk_is_candidates(doc)) {
        size_t n = json_len(v.cands);
        long long lo = -1, hi = -1;
        render_seq_span(v.cands, 0, n, &lo, &hi);
        render_add(b, "; one of %zu candidate launches", n);
        if (lo >= 0)
            render_add(b, " (#%lld..#%lld)", lo, hi);
        render_add(b, " faulted");
    } else {
        render_add(b, "; faulting kernel unknown");
    }
    if (o && o->path)
        render_add(b, "; report: %s", o->path);
    render_add(b, "\n");
}

/* An exit record ("kind": "exit", written by a process of a job that saw no CUDA error): one line. */
static void render_exit(struct render_buf *b, const struct json *doc, const struct render_opts *o)
{
    const struct json *proc = json_get(doc, RK_PROCESS);
    const char *host = json_get_str(proc, RK_HOSTNAME), *launcher = json_get_str(proc, RK_LAUNCHER);
    long long rank = json_get_int(proc, RK_RANK, -1), world = json_get_int(proc, RK_WORLD_SIZE, -1);
    long long status = json_get_int(json_get(doc, RK_EXIT), RK_STATUS, -1);
    long long launches = json_get_int(json_get(doc, RK_STATS), RK_LAUNCHES, -1);

    if (rank >= 0 && world > 0)
        render_add(b, "culprit: rank %lld of %lld", rank, world);
    else if (rank >= 0)
        render_add(b, "culprit: rank %lld", rank);
    else
        render_add(b, "culprit: process");
    if (launcher)
        render_add(b, " (%s)", launcher);
    render_add(b, " on host %s, pid %lld, saw no CUDA error", host ? host : "?", json_get_int(proc, RK_PID, -1));
    if (status >= 0)
        render_add(b, "; it exited with status %lld", status);
    if (launches >= 0)
        render_add(b, "%s after %lld launch%s", status >= 0 ? "" : "; it exited", launches, launches == 1 ? "" : "es");
    if (o && o->brief && o->path)
        render_add(b, "; report: %s", o->path);
    render_add(b, "\n");
    if (o && o->brief)
        return;
    render_nccl_log(b, doc);
    if (o && o->path)
        render_line(b, "report: %s", o->path);
}

char *render_doc(const struct json *doc, const struct render_opts *opts)
{
    struct render_buf b = {0};
    const char *kind = json_get_str(doc, RK_KIND);
    if (!json_is(doc, JSON_OBJ))
        return NULL;
    if (kind && strcmp(kind, "exit") == 0)
        render_exit(&b, doc, opts);
    else if (kind && strcmp(kind, "hang") == 0)
        render_hang(&b, doc, opts);
    else if (opts && opts->brief)
        render_brief(&b, doc, opts);
    else
        render_full(&b, doc, opts);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *render_text_opts(const char *json, size_t len, const struct render_opts *opts, char *why, size_t whylen)
{
    struct json *doc = NULL;
    struct json_error jerr;
    char *text = NULL;
    int rc;

    render_why[0] = '\0';
    rc = json_parse(json, len, &doc, &jerr);
    if (rc == JSON_ENOMEM)
        snprintf(render_why, sizeof render_why, "out of memory while reading the report");
    else if (rc)
        snprintf(render_why, sizeof render_why, "the report is not valid JSON: %s at byte %zu", jerr.msg, jerr.offset);
    else if (!json_is(doc, JSON_OBJ))
        snprintf(render_why, sizeof render_why, "the report is not a JSON object");
    else if ((text = render_doc(doc, opts)) == NULL)
        snprintf(render_why, sizeof render_why, "out of memory while rendering the report");
    json_free(doc);
    if (!text && why && whylen)
        snprintf(why, whylen, "%s", render_why);
    return text;
}

char *render_text(const char *json, size_t len, int brief)
{
    struct render_opts o = {.brief = brief, .path = NULL};
    return render_text_opts(json, len, &o, NULL, 0);
}

const char *render_launch_name(const struct json *launch, char **owned)
{
    return render_kernel(launch, owned);
}

const char *render_launch_site(const struct json *launch, char *out, size_t outsz)
{
    const struct json *f = render_user_pyframe(json_get(launch, RK_PYTHON));
    const char *file;
    long long line;
    out[0] = '\0';
    if (!f)
        f = render_user_frame(launch);
    if (!f)
        return out;
    file = render_base(json_get_str(f, RK_FILE));
    line = json_get_int(f, RK_LINE, 0);
    if (file && line > 0)
        snprintf(out, outsz, "%s:%lld", file, line);
    else if (file)
        snprintf(out, outsz, "%s", file);
    else
        render_frame(f, out, outsz);
    return out;
}
