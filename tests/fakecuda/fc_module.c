/* The simulated driver's modules, libraries and kernels: loading images (data, files, libraries), their functions
 * and kernels, names and parameter layouts, as exported entry points in the style of fc_api.c; then the state
 * behind them (parsing an image, plain names, parameter layouts, handle checks). */
#include "fc_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules, libraries, kernels -------------------------------------------------------------------------- */

static CUresult fc_module_load_data(CUmodule *pm, const void *image)
{
    struct fc_ctx *c;
    struct fc_module *m;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!pm)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_module_load(image, 0, c, &m)))
        return rc;
    *pm = (CUmodule)m;
    return CUDA_SUCCESS;
}

static CUresult fc_module_load_file(CUmodule *pm, const char *path)
{
    struct fc_ctx *c;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return fc_module_load_data(pm, buf);
}

static struct fc_func *fc_func_named(struct fc_module *m, const char *name)
{
    for (size_t i = 0; name && i < m->nfunc; i++)
        if (!strcmp(m->funcs[i].name, name))
            return &m->funcs[i];
    return NULL;
}

/* Unloading runs the context first: queued launches of the module must not outlive it. */
static CUresult fc_module_unload(CUmodule hm)
{
    struct fc_ctx *c;
    CUresult rc = fc_live(&c);
    struct fc_module *m = (struct fc_module *)hm;
    if (rc)
        return rc;
    if (!fc_module_valid(m, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = fc_drain_ctx(m->ctx && m->ctx->alive ? m->ctx : c)))
        return rc;
    m->alive = 0;
    return CUDA_SUCCESS;
}

static CUresult fc_module_get_function(CUfunction *pf, CUmodule hm, const char *name)
{
    struct fc_ctx *c;
    struct fc_func *f;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!pf || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fc_module_valid((struct fc_module *)hm, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!(f = fc_func_named((struct fc_module *)hm, name)))
        return CUDA_ERROR_NOT_FOUND;
    *pf = (CUfunction)f;
    return CUDA_SUCCESS;
}

/* Names survive a sticky error: a tool names the culprit after the fault. */
static CUresult fc_func_name(const char **name, const void *h, int library)
{
    struct fc_func *f;
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(f = fc_func_valid(h)) || (library && !f->mod->library))
        return CUDA_ERROR_INVALID_HANDLE;
    *name = f->name;
    return CUDA_SUCCESS;
}

/* A kernel's parameters as its image declared them: past the last one, CUDA_ERROR_INVALID_VALUE (as the driver
 * answers); a kernel whose image declared no list, CUDA_ERROR_NOT_SUPPORTED (nothing is known of them). */
static CUresult fc_param_info(const void *h, size_t i, size_t *off, size_t *size, int library)
{
    struct fc_func *f;
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!(f = fc_func_valid(h)) || (library && !f->mod->library))
        return CUDA_ERROR_INVALID_HANDLE;
    if (f->nparams < 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (i >= (size_t)f->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (off)
        *off = f->poff[i];
    if (size)
        *size = f->psize[i];
    return CUDA_SUCCESS;
}

/* Libraries are context-independent, so loading and unloading them neither needs nor checks a context. */
static CUresult fc_library_load(CUlibrary *pl, const void *code)
{
    struct fc_module *m;
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!pl)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = fc_module_load(code, 1, NULL, &m)))
        return rc;
    *pl = (CUlibrary)m;
    return CUDA_SUCCESS;
}

static CUresult fc_library_unload(CUlibrary hl)
{
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!fc_module_valid((struct fc_module *)hl, 1))
        return CUDA_ERROR_INVALID_HANDLE;
    ((struct fc_module *)hl)->alive = 0;
    return CUDA_SUCCESS;
}

static CUresult fc_library_get_kernel(CUkernel *pk, CUlibrary hl, const char *name)
{
    struct fc_func *f;
    CUresult rc = fc_ready();
    if (rc)
        return rc;
    if (!pk || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!fc_module_valid((struct fc_module *)hl, 1))
        return CUDA_ERROR_INVALID_HANDLE;
    if (!(f = fc_func_named((struct fc_module *)hl, name)))
        return CUDA_ERROR_NOT_FOUND;
    *pk = (CUkernel)f;
    return CUDA_SUCCESS;
}

/* A kernel's function in the current context is the same object: launching either handle works, as a CUkernel
 * cast to CUfunction does on the real driver. */
static CUresult fc_kernel_get_function(CUfunction *pf, CUkernel k)
{
    struct fc_ctx *c;
    struct fc_func *f;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!pf)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(f = fc_func_valid(k)) || !f->mod->library)
        return CUDA_ERROR_INVALID_HANDLE;
    *pf = (CUfunction)f;
    return CUDA_SUCCESS;
}

FC_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    FC_BEGIN();
    FC_RETURN(fc_module_load_file(module, fname));
}

FC_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    FC_BEGIN();
    FC_RETURN(fc_module_load_data(module, image));
}

FC_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                   void **optionValues)
{
    FC_BEGIN();
    FC_RETURN(fc_module_load_data(module, image));
}

FC_API CUresult cuModuleUnload(CUmodule hmod)
{
    FC_BEGIN();
    FC_RETURN(fc_module_unload(hmod));
}

FC_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    FC_BEGIN();
    FC_RETURN(fc_module_get_function(hfunc, hmod, name));
}

FC_API CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    FC_BEGIN();
    FC_RETURN(fc_func_name(name, hfunc, 0));
}

FC_API CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    FC_BEGIN();
    FC_RETURN(fc_param_info(func, paramIndex, paramOffset, paramSize, 0));
}

FC_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                  void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                  void **libraryOptionValues, unsigned int numLibraryOptions)
{
    FC_BEGIN();
    FC_RETURN(fc_library_load(library, code));
}

FC_API CUresult cuLibraryUnload(CUlibrary library)
{
    FC_BEGIN();
    FC_RETURN(fc_library_unload(library));
}

FC_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    FC_BEGIN();
    FC_RETURN(fc_library_get_kernel(pKernel, library, name));
}

FC_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    FC_BEGIN();
    FC_RETURN(fc_kernel_get_function(pFunc, kernel));
}

FC_API CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    FC_BEGIN();
    FC_RETURN(fc_func_name(name, hfunc, 1));
}

FC_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    FC_BEGIN();
    FC_RETURN(fc_param_info(kernel, paramIndex, paramOffset, paramSize, 1));
}

/* ---- loading images: the state behind the entry points ---------------------------------------------------------------------------------------------- */

/* The identifier an Itanium-mangled name carries: "_Z9write_oobPii" -> "write_oob", "_ZN2ns1kEv" -> "ns::k".
 * Anything else is its own plain name. */
static void fc_plain_name(const char *name, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    if (!strncmp(name, "_Z", 2)) {
        const char *p = name + 2;
        int nested = *p == 'N';
        if (nested) {
            p++;
            while (*p == 'r' || *p == 'V' || *p == 'K')
                p++;
        }
        while (isdigit((unsigned char)*p)) {
            char *end;
            unsigned long n = strtoul(p, &end, 10);
            if (n == 0 || strnlen(end, n) < n)
                break;
            if (len && len + 2 < cap) {
                memcpy(out + len, "::", 2);
                len += 2;
            }
            size_t take = n < cap - 1 - len ? n : cap - 1 - len;
            memcpy(out + len, end, take);
            len += take;
            out[len] = 0;
            p = end + n;
            if (!nested)
                break;
        }
    }
    if (!len)
        snprintf(out, cap, "%s", name);
}

/* A kernel's parameter list "(S,S,...)" (sizes in bytes) into f: each parameter is placed at the next offset
 * aligned to the largest power of two dividing its size, 8 at most. 0, or -1 when it is malformed. */
static int fc_parse_params(const char *p, struct fc_func *f)
{
    size_t off = 0;
    f->nparams = 0;
    p++; /* '(' */
    while (isspace((unsigned char)*p))
        p++;
    if (*p == ')')
        return p[1] ? -1 : 0;
    for (;;) {
        char *end;
        unsigned long size = strtoul(p, &end, 10);
        size_t align = 1;
        if (end == p || size == 0 || size > 4096 || f->nparams == FC_MAX_PARAMS)
            return -1;
        while (align < 8 && size % (align * 2) == 0)
            align *= 2;
        off = (off + align - 1) / align * align;
        f->poff[f->nparams] = off;
        f->psize[f->nparams++] = size;
        off += size;
        for (p = end; isspace((unsigned char)*p); p++)
            ;
        if (*p == ')')
            return p[1] ? -1 : 0;
        if (*p++ != ',')
            return -1;
    }
}

/* Parses "fakecubin:" name[(sizes)][,name[(sizes)]...] into a new module (or library). */
CUresult fc_module_load(const char *image, int library, struct fc_ctx *ctx, struct fc_module **out)
{
    static const char magic[] = "fakecubin:";
    if (!image || strncmp(image, magic, sizeof magic - 1))
        return CUDA_ERROR_INVALID_IMAGE;
    char *text = strdup(image + sizeof magic - 1);
    struct fc_module *m = calloc(1, sizeof *m);
    size_t cap = 1;
    for (const char *p = text ? text : ""; *p; p++)
        cap += *p == ',';
    struct fc_func *funcs = calloc(cap, sizeof *funcs);
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (!text || !m || !funcs)
        goto fail;
    /* names are split at commas outside a parameter list */
    for (char *tok = text, *next; tok; tok = next) {
        int depth = 0;
        for (next = tok; *next && (*next != ',' || depth); next++)
            depth += (*next == '(') - (*next == ')');
        if (*next)
            *next++ = 0;
        else
            next = NULL;
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = 0;
        if (!*tok)
            continue;
        struct fc_func *f = &funcs[m->nfunc];
        char *paren = strchr(tok, '(');
        f->nparams = -1;
        if (paren && fc_parse_params(paren, f) != 0) {
            rc = CUDA_ERROR_INVALID_IMAGE;
            goto fail;
        }
        while (paren && paren > tok && isspace((unsigned char)paren[-1]))
            paren--;
        if (!(f->name = paren ? strndup(tok, (size_t)(paren - tok)) : strdup(tok)))
            goto fail;
        fc_plain_name(f->name, f->plain, sizeof f->plain);
        f->mod = m;
        m->nfunc++;
    }
    rc = CUDA_ERROR_INVALID_IMAGE;
    if (m->nfunc == 0)
        goto fail;
    free(text);
    m->library = library;
    m->alive = 1;
    m->ctx = ctx;
    m->funcs = funcs;
    m->next = fc_g.modules;
    fc_g.modules = m;
    *out = m;
    return CUDA_SUCCESS;
fail:
    if (m && funcs)
        for (size_t i = 0; i < m->nfunc; i++)
            free(funcs[i].name);
    free(funcs);
    free(m);
    free(text);
    return rc;
}

/* A function or kernel handle of a loaded module or library, or NULL. */
struct fc_func *fc_func_valid(const void *h)
{
    uintptr_t a = (uintptr_t)h;
    for (struct fc_module *m = fc_g.modules; m; m = m->next) {
        uintptr_t lo = (uintptr_t)m->funcs, hi = (uintptr_t)(m->funcs + m->nfunc);
        if (m->alive && a >= lo && a < hi && (a - lo) % sizeof(struct fc_func) == 0)
            return (struct fc_func *)h;
    }
    return NULL;
}

int fc_module_valid(const struct fc_module *m, int library)
{
    for (struct fc_module *x = fc_g.modules; x; x = x->next)
        if (x == m)
            return x->alive && x->library == library;
    return 0;
}
