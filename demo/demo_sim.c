/* The culprit demo for machines without a GPU: a tiny training loop (embedding lookup, softmax loss, SGD update)
 * written against the CUDA driver API the way cudart reaches it, meant to run on the simulated driver
 * (culprit demo --sim). At step 3 one label is out of range, the loss kernel trips its device-side assert, and
 * the error only surfaces when the losses are read back a step later, like in a real training script. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#define VOCAB 512   /* embedding rows */
#define DIM 16      /* embedding width */
#define CLASSES 10  /* output classes; a label must be below this */
#define BATCH 64    /* tokens per step */
#define STEPS 6     /* training steps */
#define LOG_EVERY 2 /* read the losses back every LOG_EVERY steps */

#define MODULE_IMAGE "fakecubin:_Z9embed_fwdPKiPfi,_Z12softmax_lossPKfPKiPfi,_Z8sgd_stepPfPKfi"

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* The driver entry points the trainer uses, fetched through cuGetProcAddress like cudart fetches them. */
static struct {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDeviceGetName) device_name;
    __typeof__(&cuDevicePrimaryCtxRetain) ctx_retain;
    __typeof__(&cuCtxSetCurrent) ctx_set;
    __typeof__(&cuModuleLoadData) module_load;
    __typeof__(&cuModuleGetFunction) get_function;
    __typeof__(&cuMemAlloc) mem_alloc;
    __typeof__(&cuMemFree) mem_free;
    __typeof__(&cuMemcpyHtoDAsync) htod_async;
    __typeof__(&cuMemcpyDtoHAsync) dtoh_async;
    __typeof__(&cuStreamSynchronize) stream_sync;
    __typeof__(&cuMemsetD32Async) memset_async;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuLaunchKernel) launch;
    __typeof__(&cuGetErrorName) error_name;
    __typeof__(&cuGetErrorString) error_string;
} cu;

static getproc_fn getproc; /* cuGetProcAddress_v2 from libcuda.so.1 */

static void *entry(const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    if (getproc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        fprintf(stderr, "trainer: the CUDA driver has no %s\n", name);
        exit(1);
    }
    return p;
}

/* How a training script reports a CUDA failure: the call it saw fail, the error, and it gives up. */
static void check(CUresult rc, const char *what)
{
    const char *name = "unknown", *text = "unknown error";
    if (rc == CUDA_SUCCESS)
        return;
    cu.error_name(rc, &name);
    cu.error_string(rc, &text);
    fprintf(stderr, "trainer: %s failed: %s: %s\n", what, name, text);
    exit(1);
}

static int load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "trainer: cannot load the CUDA driver: %s\n", dlerror());
        return -1;
    }
    getproc = (getproc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (getproc == NULL) {
        fprintf(stderr, "trainer: the CUDA driver is too old (no cuGetProcAddress_v2)\n");
        return -1;
    }
    cu.init = (__typeof__(cu.init))entry("cuInit");
    cu.device_get = (__typeof__(cu.device_get))entry("cuDeviceGet");
    cu.device_name = (__typeof__(cu.device_name))entry("cuDeviceGetName");
    cu.ctx_retain = (__typeof__(cu.ctx_retain))entry("cuDevicePrimaryCtxRetain");
    cu.ctx_set = (__typeof__(cu.ctx_set))entry("cuCtxSetCurrent");
    cu.module_load = (__typeof__(cu.module_load))entry("cuModuleLoadData");
    cu.get_function = (__typeof__(cu.get_function))entry("cuModuleGetFunction");
    cu.mem_alloc = (__typeof__(cu.mem_alloc))entry("cuMemAlloc");
    cu.mem_free = (__typeof__(cu.mem_free))entry("cuMemFree");
    cu.htod_async = (__typeof__(cu.htod_async))entry("cuMemcpyHtoDAsync");
    cu.dtoh_async = (__typeof__(cu.dtoh_async))entry("cuMemcpyDtoHAsync");
    cu.stream_sync = (__typeof__(cu.stream_sync))entry("cuStreamSynchronize");
    cu.memset_async = (__typeof__(cu.memset_async))entry("cuMemsetD32Async");
    cu.stream_create = (__typeof__(cu.stream_create))entry("cuStreamCreate");
    cu.launch = (__typeof__(cu.launch))entry("cuLaunchKernel");
    cu.error_name = (__typeof__(cu.error_name))entry("cuGetErrorName");
    cu.error_string = (__typeof__(cu.error_string))entry("cuGetErrorString");
    return 0;
}

/* A deterministic stand-in for a data loader: token ids and labels of one batch. The batch of step 3 carries a
 * label of 12 for a 10-class head: the bug this demo is about. */
static void next_batch(int step, int *tokens, int *labels)
{
    for (int i = 0; i < BATCH; i++) {
        tokens[i] = (step * 131 + i * 7) % VOCAB;
        labels[i] = (step + i) % CLASSES;
    }
    if (step == 3)
        labels[41] = CLASSES + 2;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction embed_fwd, softmax_loss, sgd_step;
    CUstream stream;
    CUdeviceptr d_table, d_tokens, d_labels, d_acts, d_grads, d_losses;
    int tokens[BATCH], labels[BATCH], batch = BATCH;
    float losses[LOG_EVERY];
    char name[128];

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The simulated GPU needs to be told where the device assert fires (a real GPU just does it). */
    if (getenv("FAKECUDA_FAULT") == NULL)
        setenv("FAKECUDA_FAULT", "kernel=_Z12softmax_lossPKfPKiPfi,nth=3,code=710", 1);
    if (load_driver() != 0)
        return 1;

    check(cu.init(0), "cuInit");
    check(cu.device_get(&dev, 0), "cuDeviceGet");
    check(cu.device_name(name, sizeof name, dev), "cuDeviceGetName");
    check(cu.ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cu.ctx_set(ctx), "cuCtxSetCurrent");
    check(cu.module_load(&mod, MODULE_IMAGE), "loading the model kernels");
    check(cu.get_function(&embed_fwd, mod, "_Z9embed_fwdPKiPfi"), "cuModuleGetFunction(embed_fwd)");
    check(cu.get_function(&softmax_loss, mod, "_Z12softmax_lossPKfPKiPfi"), "cuModuleGetFunction(softmax_loss)");
    check(cu.get_function(&sgd_step, mod, "_Z8sgd_stepPfPKfi"), "cuModuleGetFunction(sgd_step)");
    check(cu.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cu.mem_alloc(&d_table, VOCAB * DIM * sizeof(float)), "allocating the embedding table");
    check(cu.mem_alloc(&d_tokens, BATCH * sizeof(int)), "allocating the token buffer");
    check(cu.mem_alloc(&d_labels, BATCH * sizeof(int)), "allocating the label buffer");
    check(cu.mem_alloc(&d_acts, BATCH * DIM * sizeof(float)), "allocating activations");
    check(cu.mem_alloc(&d_grads, BATCH * DIM * sizeof(float)), "allocating gradients");
    check(cu.mem_alloc(&d_losses, LOG_EVERY * sizeof(float)), "allocating the loss buffer");
    check(cu.memset_async(d_table, 0, VOCAB * DIM, stream), "initializing the embedding table");
    printf("trainer: %d steps on %s, batch %d, %d classes\n", STEPS, name, BATCH, CLASSES);

    for (int step = 1; step <= STEPS; step++) {
        CUdeviceptr loss_slot = d_losses + (CUdeviceptr)(((step - 1) % LOG_EVERY) * sizeof(float));
        void *embed_args[] = {&d_tokens, &d_acts, &batch};
        void *loss_args[] = {&d_acts, &d_labels, &loss_slot, &batch};
        void *sgd_args[] = {&d_table, &d_grads, &batch};

        next_batch(step, tokens, labels);
        check(cu.htod_async(d_tokens, tokens, sizeof tokens, stream), "copying the batch");
        check(cu.htod_async(d_labels, labels, sizeof labels, stream), "copying the labels");
        check(cu.launch(embed_fwd, BATCH, 1, 1, DIM, 1, 1, 0, stream, embed_args, NULL), "embed_fwd");
        check(cu.launch(softmax_loss, BATCH, 1, 1, 32, 1, 1, 0, stream, loss_args, NULL), "softmax_loss"); /* CULPRIT-LAUNCH */
        check(cu.launch(sgd_step, VOCAB, 1, 1, DIM, 1, 1, 0, stream, sgd_args, NULL), "sgd_step");
        printf("step %d: queued\n", step);
        if (step % LOG_EVERY == 0) {
            /* Reading the losses waits for the GPU (like loss.item()): this is where an earlier failure shows up. */
            check(cu.dtoh_async(losses, d_losses, sizeof losses, stream), "reading the losses back");
            check(cu.stream_sync(stream), "reading the losses back");
            printf("step %d: losses of steps %d-%d read back\n", step, step - LOG_EVERY + 1, step);
        }
    }
    check(cu.mem_free(d_losses), "cuMemFree");
    printf("trainer: done\n");
    return 0;
}
