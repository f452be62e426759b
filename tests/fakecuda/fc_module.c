/* The simulated driver's modules, libraries and kernels: loading images (data, files, libraries), their functions
 * and kernels, names and parameter layouts, as exported entry points in the style of fc_api.c. */
#include "fc_internal.h"

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
