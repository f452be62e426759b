/* The simulated driver's stream capture and graphs: capturing a stream's work into a graph, instantiating and
 * launching it, destroying both, as exported entry points in the style of fc_api.c. */
#include "fc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- capture and graphs ----------------------------------------------------------------------------------- */

static CUresult fc_capture_begin(CUstream h, int pt, int global)
{
    struct fc_stream *s;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (s->kind == FC_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (s->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    struct fc_graph *g = calloc(1, sizeof *g);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->global = global;
    g->next = fc_g.graphs;
    fc_g.graphs = g;
    s->capture = g;
    return CUDA_SUCCESS;
}

static CUresult fc_capture_end(CUstream h, int pt, CUgraph *pg)
{
    struct fc_stream *s;
    CUresult rc = fc_stream_get(h, pt, &s);
    if (rc)
        return rc;
    if (!s->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (!pg)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture->invalidated) {
        *pg = NULL;
        s->capture = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *pg = (CUgraph)s->capture;
    s->capture = NULL;
    return s->ctx->sticky;
}

static CUresult fc_capture_status(CUstream h, int pt, CUstreamCaptureStatus *st)
{
    struct fc_stream *s;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (!rc && !st)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *st = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return rc;
}

static CUresult fc_graph_instantiate(CUgraphExec *pe, CUgraph hg)
{
    struct fc_ctx *c;
    struct fc_graph *g, *e;
    CUresult rc = fc_live(&c);
    if (rc)
        return rc;
    if (!pe || !(g = fc_graph_valid(hg, 0)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!(e = calloc(1, sizeof *e)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->exec = 1;
    if (g->n) {
        if (!(e->ops = malloc(g->n * sizeof *e->ops))) {
            free(e);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(e->ops, g->ops, g->n * sizeof *e->ops);
    }
    e->n = e->cap = g->n;
    e->next = fc_g.graphs;
    fc_g.graphs = e;
    *pe = (CUgraphExec)e;
    return CUDA_SUCCESS;
}

static CUresult fc_graph_launch(CUgraphExec he, CUstream h, int pt)
{
    struct fc_stream *s;
    struct fc_graph *e;
    CUresult rc = fc_work_stream(h, pt, &s);
    if (rc)
        return rc;
    if (!(e = fc_graph_valid(he, 1)))
        return CUDA_ERROR_INVALID_HANDLE;
    return fc_graph_enqueue(s, e);
}

static CUresult fc_graph_destroy(const void *h, int exec)
{
    CUresult rc = fc_ready();
    struct fc_graph *g;
    if (rc)
        return rc;
    if (!(g = fc_graph_valid(h, exec)))
        return CUDA_ERROR_INVALID_VALUE;
    for (struct fc_graph **pp = &fc_g.graphs; *pp; pp = &(*pp)->next) {
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    }
    for (unsigned i = 0; i < fc_g.nctx; i++) /* a graph still being captured into is left without one */
        for (struct fc_stream *s = fc_g.ctx[i]->streams; s; s = s->next)
            if (s->capture == g)
                s->capture = NULL;
    free(g->ops);
    free(g);
    return CUDA_SUCCESS;
}

FC_API CUresult cuStreamBeginCapture(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_begin(hStream, 0, 1));
}

FC_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_begin(hStream, 1, 1));
}

FC_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_begin(hStream, 0, mode == CU_STREAM_CAPTURE_MODE_GLOBAL));
}

FC_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_begin(hStream, 1, mode == CU_STREAM_CAPTURE_MODE_GLOBAL));
}

FC_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_end(hStream, 0, phGraph));
}

FC_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_end(hStream, 1, phGraph));
}

FC_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_status(hStream, 0, captureStatus));
}

FC_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    FC_BEGIN();
    FC_RETURN(fc_capture_status(hStream, 1, captureStatus));
}

FC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_instantiate(phGraphExec, hGraph));
}

FC_API CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                      char *logBuffer, size_t bufferSize)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_instantiate(phGraphExec, hGraph));
}

FC_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_launch(hGraphExec, hStream, 0));
}

FC_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_launch(hGraphExec, hStream, 1));
}

FC_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_destroy(hGraphExec, 1));
}

FC_API CUresult cuGraphDestroy(CUgraph hGraph)
{
    FC_BEGIN();
    FC_RETURN(fc_graph_destroy(hGraph, 0));
}

/* A graph (exec 0) or executable graph (exec 1) handle the program made and did not destroy, or NULL. */
struct fc_graph *fc_graph_valid(const void *h, int exec)
{
    for (struct fc_graph *g = fc_g.graphs; g; g = g->next)
        if ((const void *)g == h && g->exec == exec)
            return g;
    return NULL;
}
