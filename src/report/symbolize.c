/* Report symbolization: collects the frames of a report that lack a source location, asks addr2line about
 * them one module at a time, and fills function/file/line; also demangles kernel names. It runs in the CLI
 * (never in the target), so it may allocate and spawn freely, but it must not trust the report: module paths
 * are only ever handed to addr2line as arguments, after checking they are ELF files. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "symbolize.h"
#include "../base/demangle.h"
#include "../render/json.h"
#include "../base/jsonw.h"
#include "replace.h"
#include "subproc.h"
#include "../render/report_keys.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYM_MAX_OUTPUT (64u << 20) /* more addr2line output than this is treated as a failure */

/* One frame waiting for an answer. */
struct sym_frame {
    struct json *frame;           /* the frame object in the report */
    struct json *stack;           /* the array holding it (the frames of one stack are next to each other) */
    size_t doc;                   /* which of the reports symbolized together it belongs to */
    const struct sym_answer *ans; /* what addr2line said, once applied */
    size_t module;                /* index into the module table */
    unsigned long long addr;      /* address in the file's own address space, as addr2line wants it */
};

/* What addr2line said about one address. */
struct sym_inline {
    char *func; /* function of this level, or NULL for "??" */
    char *file; /* source file, or NULL */
    long line;  /* line, 0 when unknown */
};

struct sym_answer {
    unsigned long long addr;  /* the address asked about */
    struct sym_inline *chain; /* every level from the innermost inlined function out to the real frame */
    size_t nchain;            /* entries in chain */
    char *func;               /* innermost function (inline-aware), or NULL for "??" */
    char *outer;              /* outermost function of the inline chain, or NULL */
    char *file;               /* innermost source file, or NULL for "??" */
    long line;                /* innermost line, 0 when unknown */
};

/* One module (ELF file) named by frames of the report. */
struct sym_module {
    char *path;              /* as written in the report */
    int usable;              /* 1 when it is a readable ELF file whose load base we know */
    unsigned long long base; /* page-aligned lowest PT_LOAD p_vaddr */
    struct sym_answer *ans;  /* answers, sorted by address */
    size_t nans;             /* entries in ans */
};

/* Everything gathered from the reports symbolized together (one addr2line per module for all of them). */
struct sym_state {
    struct sym_frame *frames;  /* frames to resolve */
    size_t nframes, capframes; /* used and allocated entries of frames */
    struct sym_module *mods;   /* distinct modules */
    size_t nmods, capmods;     /* used and allocated entries of mods */
    size_t doc;                /* the report being walked or changed now */
    int *changed;              /* per report: something was added to its tree */
    int oom;                   /* an allocation failed */
};

static int sym_noted_missing; /* the "addr2line is not available" note was printed */

static struct json *sym_get(struct json *obj, const char *key)
{
    return (struct json *)json_get(obj, key);
}

static int sym_set_str(struct sym_state *st, struct json *obj, const char *key, const char *val)
{
    struct json *s = json_new_str(val);
    if (!s || json_set(obj, key, s)) {
        json_free(s);
        st->oom = 1;
        return -1;
    }
    st->changed[st->doc] = 1;
    return 0;
}

/* ---- ELF ---- */

/* The address the module's first byte is mapped at when its load bias is 0: the lowest PT_LOAD p_vaddr rounded
 * down to a page, which is what dladdr's dli_fbase corresponds to. */
static int sym_elf_base(const char *path, unsigned long long *base)
{
    unsigned char ident[EI_NIDENT];
    unsigned long long lo = ~0ull, page = (unsigned long long)sysconf(_SC_PAGESIZE);
    struct stat sb;
    int fd, rc = -1;
    size_t i, phnum, phentsize;
    off_t phoff;

    /* non-blocking: a report may name a FIFO or a terminal as a module, whose open would wait for a writer;
     * only a regular file goes on (to addr2line too) */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode))
        goto out;
    if (pread(fd, ident, sizeof ident, 0) != (ssize_t)sizeof ident || memcmp(ident, ELFMAG, SELFMAG) != 0)
        goto out;
    if (ident[EI_CLASS] == ELFCLASS64) {
        Elf64_Ehdr eh;
        if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh)
            goto out;
        phoff = (off_t)eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
        if (phentsize < sizeof(Elf64_Phdr))
            goto out;
        for (i = 0; i < phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, phoff + (off_t)(i * phentsize)) != (ssize_t)sizeof ph)
                goto out;
            if (ph.p_type == PT_LOAD && ph.p_vaddr < lo)
                lo = ph.p_vaddr;
        }
    } else if (ident[EI_CLASS] == ELFCLASS32) {
        Elf32_Ehdr eh;
        if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh)
            goto out;
        phoff = (off_t)eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
        if (phentsize < sizeof(Elf32_Phdr))
            goto out;
        for (i = 0; i < phnum; i++) {
            Elf32_Phdr ph;
            if (pread(fd, &ph, sizeof ph, phoff + (off_t)(i * phentsize)) != (ssize_t)sizeof ph)
                goto out;
            if (ph.p_type == PT_LOAD && ph.p_vaddr < lo)
                lo = ph.p_vaddr;
        }
    } else {
        goto out;
    }
    if (lo == ~0ull)
        goto out;
    *base = page ? lo - lo % page : lo;
    rc = 0;
out:
    close(fd);
    return rc;
}

/* ---- gathering ---- */

static size_t sym_module_index(struct sym_state *st, const char *path)
{
    size_t i;
    for (i = 0; i < st->nmods; i++)
        if (strcmp(st->mods[i].path, path) == 0)
            return i;
    if (st->nmods == st->capmods) {
        size_t cap = st->capmods ? st->capmods * 2 : 8;
        struct sym_module *m = realloc(st->mods, cap * sizeof *m);
        if (!m) {
            st->oom = 1;
            return (size_t)-1;
        }
        st->mods = m;
        st->capmods = cap;
    }
    memset(&st->mods[st->nmods], 0, sizeof st->mods[0]);
    st->mods[st->nmods].path = strdup(path);
    if (!st->mods[st->nmods].path) {
        st->oom = 1;
        return (size_t)-1;
    }
    st->mods[st->nmods].usable = sym_elf_base(path, &st->mods[st->nmods].base) == 0;
    return st->nmods++;
}

static int sym_parse_hex(const char *s, unsigned long long *out)
{
    char *end;
    if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
        return -1;
    errno = 0;
    *out = strtoull(s + 2, &end, 16);
    return errno || *end ? -1 : 0;
}

static void sym_frame_seen(struct sym_state *st, struct json *stack, struct json *frame)
{
    const char *mod = json_get_str(frame, RK_MODULE);
    const char *fn = json_get_str(frame, RK_FUNCTION);
    unsigned long long off;
    size_t mi;

    if (fn && strncmp(fn, "_Z", 2) == 0) {
        char *dm = demangle_name(fn);
        if (dm)
            sym_set_str(st, frame, RK_FUNCTION, dm);
        free(dm);
    }
    if (json_get_str(frame, RK_FILE) && json_get_int(frame, RK_LINE, 0) > 0)
        return;
    if (!mod || mod[0] != '/' || sym_parse_hex(json_get_str(frame, RK_OFFSET), &off))
        return;
    mi = sym_module_index(st, mod);
    if (mi == (size_t)-1 || !st->mods[mi].usable)
        return;
    if (st->nframes == st->capframes) {
        size_t cap = st->capframes ? st->capframes * 2 : 64;
        struct sym_frame *f = realloc(st->frames, cap * sizeof *f);
        if (!f) {
            st->oom = 1;
            return;
        }
        st->frames = f;
        st->capframes = cap;
    }
    st->frames[st->nframes].frame = frame;
    st->frames[st->nframes].stack = stack;
    st->frames[st->nframes].doc = st->doc;
    st->frames[st->nframes].ans = NULL;
    st->frames[st->nframes].module = mi;
    /* offsets of return addresses point just past the call; one byte back lands inside the call instruction,
     * which is the line the user wants to see */
    st->frames[st->nframes].addr = off + st->mods[mi].base - (off + st->mods[mi].base > 0);
    st->nframes++;
}

/* A launch whose kernel name is missing or still mangled gets the demangled name. */
static void sym_launch_seen(struct sym_state *st, struct json *launch)
{
    const char *k = json_get_str(launch, RK_KERNEL);
    const char *m = json_get_str(launch, RK_MANGLED);
    char *dm;
    if (k && *k && strncmp(k, "_Z", 2) != 0)
        return;
    dm = demangle_name(m ? m : k);
    if (dm)
        sym_set_str(st, launch, RK_KERNEL, dm);
    free(dm);
}

/* Walks the whole tree so that every "stack" (error, culprit, candidates, history, and whatever a later
 * schema adds) is covered. */
static void sym_walk(struct sym_state *st, struct json *n, int depth)
{
    size_t i;
    if (!n || depth > JSON_MAX_DEPTH || st->oom)
        return;
    if (n->type == JSON_OBJ) {
        struct json *stack = sym_get(n, RK_STACK);
        if (json_get(n, RK_MANGLED) || (json_get_str(n, RK_KERNEL) && json_get(n, RK_SEQ)))
            sym_launch_seen(st, n);
        if (json_is(stack, JSON_ARR))
            for (i = 0; i < stack->len; i++)
                if (json_is(stack->kids[i], JSON_OBJ))
                    sym_frame_seen(st, stack, stack->kids[i]);
    }
    if (n->type == JSON_OBJ || n->type == JSON_ARR)
        for (i = 0; i < n->len; i++)
            if (!(n->type == JSON_OBJ && strcmp(n->keys[i], RK_STACK) == 0))
                sym_walk(st, n->kids[i], depth + 1);
}

/* ---- running addr2line ---- */

static int sym_cmp_ull(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* Runs addr2line on one module with the addresses on its stdin (a temporary file, so no pipe can fill up
 * both ways). On success *out holds its whole stdout. Returns 0, -1 on failure, -2 when it cannot be started. */
static int sym_run_addr2line(const char *module, const unsigned long long *addrs, size_t n, char **out, size_t *outlen)
{
    const char *prog = getenv(SYMBOLIZE_ADDR2LINE_ENV);
    char tmpl[] = "/tmp/culprit-addrs-XXXXXX";
    char *argv[] = {NULL, "-a", "-C", "-f", "-i", "-e", NULL, NULL};
    struct subproc_result res;
    int infd, rc;
    FILE *f;

    *out = NULL;
    *outlen = 0;
    if (!prog || !*prog)
        prog = "addr2line";
    argv[0] = (char *)prog;
    argv[6] = (char *)module;

    infd = mkstemp(tmpl);
    if (infd < 0)
        return -1;
    unlink(tmpl);
    f = fdopen(dup(infd), "w");
    if (!f) {
        close(infd);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(f, "0x%llx\n", addrs[i]);
    if (fclose(f) != 0 || lseek(infd, 0, SEEK_SET) != 0) {
        close(infd);
        return -1;
    }
    struct subproc_opts o = {infd, 0, NULL, SYMBOLIZE_TIMEOUT_S, SYM_MAX_OUTPUT};
    rc = subproc_capture(argv, &o, &res);
    close(infd);
    if (rc != 0)
        return rc;
    if (res.timed_out || res.truncated || !res.exited || res.status != 0) {
        free(res.out);
        /* a program that is there but cannot even start (exec failure in the spawned child) exits 127 */
        return res.exited && res.status == 127 ? -2 : -1;
    }
    *out = res.out;
    *outlen = res.len;
    return 0;
}

static int sym_addr_line(const char *s, unsigned long long *v)
{
    return sym_parse_hex(s, v) == 0 && strspn(s + 2, "0123456789abcdefABCDEF") == strlen(s + 2);
}

static char *sym_dup_known(const char *s)
{
    return s && *s && strcmp(s, "??") != 0 ? strdup(s) : NULL;
}

/* Splits "file:line" or "file:line (discriminator 2)" into parts; "??" parts are left empty. */
static void sym_file_line(const char *s, struct sym_answer *a)
{
    char tmp[4096];
    char *colon, *sp;
    snprintf(tmp, sizeof tmp, "%s", s);
    sp = strstr(tmp, " (discriminator");
    if (sp)
        *sp = '\0';
    colon = strrchr(tmp, ':');
    a->line = 0;
    if (colon) {
        char *end;
        long v;
        *colon = '\0';
        v = strtol(colon + 1, &end, 10);
        if (end != colon + 1 && *end == '\0' && v > 0)
            a->line = v;
    }
    a->file = sym_dup_known(tmp);
}

/* Parses the output for the sorted addrs into answers (one per address). Every group starts with the address
 * line, then function/location pairs from the innermost inline frame outwards. */
static int sym_parse_output(char *text, const unsigned long long *addrs, size_t n, struct sym_answer *ans)
{
    char *save = NULL, *line;
    size_t k = (size_t)-1, pair = 0;
    char *pending_func = NULL;

    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long v;
        size_t j;
        if (sym_addr_line(line, &v)) {
            for (j = k == (size_t)-1 ? 0 : k + 1; j < n && addrs[j] != v; j++)
                ;
            if (j < n) {
                k = j;
                pair = 0;
                pending_func = NULL;
                continue;
            }
        }
        if (k == (size_t)-1)
            continue;
        if (!pending_func) {
            pending_func = line;
            continue;
        }
        /* pending_func and line form one pair */
        if (pair == 0) {
            ans[k].func = sym_dup_known(pending_func);
            sym_file_line(line, &ans[k]);
        }
        {
            struct sym_inline *c = realloc(ans[k].chain, (ans[k].nchain + 1) * sizeof *c);
            if (c) {
                struct sym_answer tmp = {0};
                sym_file_line(line, &tmp);
                c[ans[k].nchain].func = sym_dup_known(pending_func);
                c[ans[k].nchain].file = tmp.file;
                c[ans[k].nchain].line = tmp.line;
                ans[k].chain = c;
                ans[k].nchain++;
            }
        }
        free(ans[k].outer);
        ans[k].outer = sym_dup_known(pending_func);
        pair++;
        pending_func = NULL;
    }
    return 0;
}

static void sym_resolve_module(struct sym_state *st, size_t mi)
{
    struct sym_module *m = &st->mods[mi];
    unsigned long long *addrs = NULL;
    size_t n = 0, i, outlen;
    char *out = NULL;
    int rc;

    for (i = 0; i < st->nframes; i++)
        if (st->frames[i].module == mi)
            n++;
    if (!n)
        return;
    addrs = malloc(n * sizeof *addrs);
    if (!addrs) {
        st->oom = 1;
        return;
    }
    n = 0;
    for (i = 0; i < st->nframes; i++)
        if (st->frames[i].module == mi)
            addrs[n++] = st->frames[i].addr;
    qsort(addrs, n, sizeof *addrs, sym_cmp_ull);
    if (n) {
        size_t u = 1; /* the reports of a job share most addresses: keep one of each */
        for (i = 1; i < n; i++)
            if (addrs[i] != addrs[u - 1])
                addrs[u++] = addrs[i];
        n = u;
    }
    rc = sym_run_addr2line(m->path, addrs, n, &out, &outlen);
    if (rc == -2) {
        if (!sym_noted_missing)
            fprintf(stderr, "culprit: addr2line could not be run, so stack frames keep module+offset "
                            "(install binutils to get file:line)\n");
        sym_noted_missing = 1;
    }
    if (rc) {
        free(addrs);
        return;
    }
    m->ans = calloc(n, sizeof *m->ans);
    if (!m->ans) {
        st->oom = 1;
        free(addrs);
        free(out);
        return;
    }
    for (i = 0; i < n; i++)
        m->ans[i].addr = addrs[i];
    m->nans = n;
    sym_parse_output(out, addrs, n, m->ans);
    free(out);
    free(addrs);
}

static const struct sym_answer *sym_find(const struct sym_module *m, unsigned long long addr)
{
    size_t lo = 0, hi = m->nans;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ans[mid].addr < addr)
            lo = mid + 1;
        else if (m->ans[mid].addr > addr)
            hi = mid;
        else
            return &m->ans[mid];
    }
    return NULL;
}

static void sym_apply(struct sym_state *st, struct sym_frame *f)
{
    const struct sym_answer *a = sym_find(&st->mods[f->module], f->addr);
    const char *fn;
    if (!a)
        return;
    f->ans = a;
    st->doc = f->doc;
    fn = json_get_str(f->frame, RK_FUNCTION);
    /* With debug information the innermost (inline-aware) name is where the pc really is, and it also corrects
     * the dynamic-symbol guess the library made for static functions. Without it, addr2line only knows the
     * symbol table, so it fills a missing or mangled name and nothing else. */
    if (a->func && (a->file || !fn || strncmp(fn, "_Z", 2) == 0) && (!fn || strcmp(fn, a->func) != 0))
        sym_set_str(st, f->frame, RK_FUNCTION, a->func);
    if (a->file && !json_get_str(f->frame, RK_FILE))
        sym_set_str(st, f->frame, RK_FILE, a->file);
    if (a->file && a->line > 0 && json_get_int(f->frame, RK_LINE, 0) <= 0) {
        struct json *ln = json_new_int(a->line);
        if (!ln || json_set(f->frame, RK_LINE, ln)) {
            json_free(ln);
            st->oom = 1;
            return;
        }
        st->changed[f->doc] = 1;
    }
}

/* A frame whose pc lies in code the compiler inlined (the kernel's launch stub inlined into the caller, say)
 * stands for several source-level frames; each outer level becomes a frame of its own, marked "inlined", right
 * after it, so the caller's line (where the user launched) is in the stack. */
static struct json *sym_inline_frame(const struct json *phys, const struct sym_inline *lv)
{
    struct json *f = json_new(JSON_OBJ);
    const char *keys[] = {RK_PC, RK_MODULE, RK_OFFSET};
    if (!f)
        return NULL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = json_get_str(phys, keys[i]);
        struct json *s = v ? json_new_str(v) : NULL;
        if (v && (!s || json_set(f, keys[i], s))) {
            json_free(s);
            json_free(f);
            return NULL;
        }
    }
    struct json *fn = lv->func ? json_new_str(lv->func) : NULL;
    struct json *file = lv->file ? json_new_str(lv->file) : NULL;
    struct json *line = lv->line > 0 ? json_new_int(lv->line) : NULL;
    struct json *inl = json_new(JSON_BOOL);
    if (inl)
        inl->boolean = 1;
    if ((lv->func && (!fn || json_set(f, RK_FUNCTION, fn))) || (lv->file && (!file || json_set(f, RK_FILE, file))) ||
        (lv->line > 0 && (!line || json_set(f, RK_LINE, line))) || !inl || json_set(f, RK_INLINED, inl)) {
        json_free(f);
        return NULL;
    }
    return f;
}

static void sym_expand_inlines(struct sym_state *st)
{
    for (size_t i = 0; i < st->nframes && !st->oom;) {
        struct json *stack = st->frames[i].stack;
        size_t end = i; /* the frames of this stack are frames[i..end) */
        int needed = 0;
        while (end < st->nframes && st->frames[end].stack == stack)
            end++;
        for (size_t j = i; j < end; j++)
            if (st->frames[j].ans && st->frames[j].ans->nchain > 1)
                needed = 1;
        if (needed) {
            size_t cap = stack->len, n = 0;
            struct json **kids;
            for (size_t j = i; j < end; j++)
                if (st->frames[j].ans)
                    cap += st->frames[j].ans->nchain;
            kids = calloc(cap ? cap : 1, sizeof *kids);
            if (!kids) {
                st->oom = 1;
                return;
            }
            for (size_t k = 0; k < stack->len; k++) {
                const struct sym_answer *a = NULL;
                kids[n++] = stack->kids[k];
                for (size_t j = i; j < end; j++)
                    if (st->frames[j].frame == stack->kids[k])
                        a = st->frames[j].ans;
                for (size_t lv = 1; a && lv < a->nchain && n < cap; lv++) {
                    struct json *f = sym_inline_frame(stack->kids[k], &a->chain[lv]);
                    if (!f) {
                        st->oom = 1;
                        break;
                    }
                    kids[n++] = f;
                }
            }
            free(stack->kids);
            stack->kids = kids;
            stack->len = n;
            stack->cap = cap;
            st->changed[st->frames[i].doc] = 1;
        }
        i = end;
    }
}

int symbolize_doc(struct json *doc, int *changed)
{
    int ch = 0, rc = symbolize_docs(&doc, 1, &ch);
    if (changed)
        *changed = ch;
    return rc;
}

int symbolize_docs(struct json *const *docs, size_t ndocs, int *changed)
{
    struct sym_state st;
    size_t i, j;
    int rc;

    memset(&st, 0, sizeof st);
    if (!ndocs)
        return SYMBOLIZE_OK;
    memset(changed, 0, ndocs * sizeof *changed);
    st.changed = changed;
    for (st.doc = 0; st.doc < ndocs; st.doc++)
        sym_walk(&st, docs[st.doc], 0);
    for (i = 0; i < st.nmods && !st.oom; i++)
        if (st.mods[i].usable)
            sym_resolve_module(&st, i);
    for (i = 0; i < st.nframes && !st.oom; i++)
        sym_apply(&st, &st.frames[i]);
    sym_expand_inlines(&st);
    rc = st.oom ? SYMBOLIZE_ENOMEM : SYMBOLIZE_OK;
    for (i = 0; i < st.nmods; i++) {
        for (j = 0; j < st.mods[i].nans; j++) {
            for (size_t c = 0; c < st.mods[i].ans[j].nchain; c++) {
                free(st.mods[i].ans[j].chain[c].func);
                free(st.mods[i].ans[j].chain[c].file);
            }
            free(st.mods[i].ans[j].chain);
            free(st.mods[i].ans[j].func);
            free(st.mods[i].ans[j].outer);
            free(st.mods[i].ans[j].file);
        }
        free(st.mods[i].ans);
        free(st.mods[i].path);
    }
    free(st.mods);
    free(st.frames);
    return rc;
}

/* ---- files ---- */

/* symbolize_load, and with own symbolize_load_own. */
static int symbolize_read(const char *path, struct json **doc, char *why, size_t whylen, int own)
{
    struct json_error jerr;
    struct stat sb;
    char *buf = NULL;
    size_t len = 0;
    const char *schema;
    int fd, rc;

    *doc = NULL;
    /* non-blocking, so that a FIFO named like a report is refused below instead of waiting for a writer */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (own ? O_NOFOLLOW : 0));
    if (fd < 0 && own && errno == ELOOP) {
        snprintf(why, whylen, "%s is a symbolic link, not a report culprit wrote: not read", path);
        rc = SYMBOLIZE_EFOREIGN;
        goto out;
    }
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
        rc = SYMBOLIZE_EREAD;
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, whylen, "cannot read %s: it is not a regular file", path);
        rc = SYMBOLIZE_EREAD;
        goto out;
    }
    if (own && sb.st_uid != geteuid()) {
        snprintf(why, whylen, "%s belongs to another user (uid %lu), not a report culprit wrote: not read", path,
                 (unsigned long)sb.st_uid);
        rc = SYMBOLIZE_EFOREIGN;
        goto out;
    }
    if ((unsigned long long)sb.st_size > SYMBOLIZE_MAX_REPORT) {
        snprintf(why, whylen, "%s is too large to be a culprit report", path);
        rc = SYMBOLIZE_ESCHEMA;
        goto out;
    }
    buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        snprintf(why, whylen, "out of memory reading %s", path);
        rc = SYMBOLIZE_ENOMEM;
        goto out;
    }
    while (len < (size_t)sb.st_size) {
        ssize_t got = read(fd, buf + len, (size_t)sb.st_size - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
            rc = SYMBOLIZE_EREAD;
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    rc = json_parse(buf, len, doc, &jerr);
    if (rc == JSON_ENOMEM) {
        snprintf(why, whylen, "out of memory reading %s", path);
        rc = SYMBOLIZE_ENOMEM;
        goto out;
    }
    if (rc) {
        snprintf(why, whylen, "%s is not a valid culprit report: %s at byte %zu", path, jerr.msg, jerr.offset);
        rc = SYMBOLIZE_EPARSE;
        goto out;
    }
    schema = json_get_str(*doc, RK_SCHEMA);
    if (!schema || strncmp(schema, "culprit.report/", 15) != 0) {
        snprintf(why, whylen, "%s is JSON but not a culprit report (no \"schema\": \"culprit.report/1\")", path);
        json_free(*doc);
        *doc = NULL;
        rc = SYMBOLIZE_ESCHEMA;
        goto out;
    }
    rc = SYMBOLIZE_OK;
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    return rc;
}

int symbolize_load(const char *path, struct json **doc, char *why, size_t whylen)
{
    return symbolize_read(path, doc, why, whylen, 0);
}

int symbolize_load_own(const char *path, struct json **doc, char *why, size_t whylen)
{
    return symbolize_read(path, doc, why, whylen, 1);
}

/* Replaces the report at path (not a symlink) with doc, atomically. Only a regular file of one's own is replaced,
 * or someone else's report in a shared directory would become the caller's; the file keeps its mode. */
static int symbolize_write(const char *path, const struct json *doc, char *why, size_t whylen)
{
    struct jw w;
    int rc = SYMBOLIZE_OK, e;

    jw_init(&w);
    w.pretty = 1;
    if (json_dump(doc, &w) != JSON_OK) {
        snprintf(why, whylen, "out of memory writing %s", path);
        rc = SYMBOLIZE_ENOMEM;
    } else if ((e = replace_text_file(path, w.buf, w.len, 1, why, whylen)) != 0) {
        rc = e == ENOMEM ? SYMBOLIZE_ENOMEM : SYMBOLIZE_EWRITE;
    }
    jw_free(&w);
    return rc;
}

int symbolize_save(const char *path, const struct json *doc, char *why, size_t whylen)
{
    /* A symlink is followed to the report it names: rename() would replace the link itself. A dangling one
     * stays as it is (symbolize_write refuses anything but a regular file). */
    struct stat sb;
    char *real = NULL;
    int rc;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        real = realpath(path, NULL);
    rc = symbolize_write(real ? real : path, doc, why, whylen);
    free(real);
    return rc;
}

int symbolize_file(const char *path, char *why, size_t whylen)
{
    struct json *doc = NULL;
    int changed = 0, rc;

    rc = symbolize_load(path, &doc, why, whylen);
    if (rc)
        goto out;
    rc = symbolize_doc(doc, &changed);
    if (rc) {
        snprintf(why, whylen, "out of memory symbolizing %s", path);
        goto out;
    }
    if (changed)
        rc = symbolize_save(path, doc, why, whylen);
out:
    json_free(doc);
    return rc;
}

int symbolize_report(const char *path)
{
    char why[512];
    return symbolize_file(path, why, sizeof why);
}
