/* Decoding NCCL kernel names into the collective they run. NCCL compiles one kernel per collective, reduction,
 * type, algorithm and protocol that it specializes (and a generic kernel for the rest), and spells all five in
 * the name, so the name alone says which collective a rank was running or waiting in. */
#include "nccl.h"

#include <stdio.h>
#include <string.h>

#define NCCL_TOKENS 16 /* more '_'-separated parts than any NCCL kernel name has */

/* Algorithms as the names spell them; some take two tokens. */
static const char *const nccl_algos[] = {"COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "TREE",
                                         "RING",           "NVLS",          "PAT",       "COLLNET"};

struct nccl_map {
    const char *from; /* as the name spells it */
    const char *to;   /* as culprit shows it */
};

static const struct nccl_map nccl_ops[] = {
    {"Sum", "sum"}, {"Prod", "prod"},           {"MinMax", "min/max"},        {"Min", "min"},
    {"Max", "max"}, {"PreMulSum", "premulsum"}, {"SumPostDiv", "sumpostdiv"},
};

/* Older releases spell the C type of the elements. */
static const struct nccl_map nccl_ctypes[] = {
    {"int8_t", "i8"},
    {"uint8_t", "u8"},
    {"int32_t", "i32"},
    {"uint32_t", "u32"},
    {"int64_t", "i64"},
    {"uint64_t", "u64"},
    {"half", "f16"},
    {"float", "f32"},
    {"double", "f64"},
    {"__nv_bfloat16", "bf16"},
    {"__nv_fp8_e4m3", "f8e4m3"},
    {"__nv_fp8_e5m2", "f8e5m2"},
    {"int8", "i8"},
    {"uint8", "u8"},
};

static const char *const nccl_types[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                         "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};

static const char *map_find(const struct nccl_map *m, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].from, s))
            return m[i].to;
    return NULL;
}

/* The bare identifier of a kernel name: "void " and an argument or template list dropped, a mangled name's
 * <length><identifier> taken apart. */
static int bare_name(const char *name, char *out, size_t outsz)
{
    size_t n;
    if (!name)
        return -1;
    while (*name == ' ')
        name++;
    if (!strncmp(name, "void ", 5))
        name += 5;
    if (!strncmp(name, "_Z", 2)) {
        size_t len = 0;
        const char *p = name + 2;
        if (*p < '1' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9' && len < 4096)
            len = len * 10 + (size_t)(*p++ - '0');
        if (len == 0 || strnlen(p, len) < len)
            return -1;
        name = p;
        n = len;
    } else {
        n = strcspn(name, "(< ");
    }
    if (n == 0 || n >= outsz)
        return -1;
    memcpy(out, name, n);
    out[n] = '\0';
    return 0;
}

static void put(char *dst, size_t dstsz, const char *s)
{
    snprintf(dst, dstsz, "%s", s ? s : "");
}

/* The algorithm at tokens t[*i..]: one or two tokens; advances *i. */
static const char *take_algo(char **t, int n, int *i)
{
    for (size_t a = 0; a < sizeof nccl_algos / sizeof nccl_algos[0]; a++) {
        const char *algo = nccl_algos[a];
        const char *us = strchr(algo, '_');
        if (us) {
            size_t l1 = (size_t)(us - algo);
            if (*i + 1 < n && strlen(t[*i]) == l1 && !strncmp(t[*i], algo, l1) && !strcmp(t[*i + 1], us + 1)) {
                *i += 2;
                return algo;
            }
        } else if (*i < n && !strcmp(t[*i], algo)) {
            *i += 1;
            return algo;
        }
    }
    return NULL;
}

static const char *proto_name(const char *s)
{
    if (!strcmp(s, "LL"))
        return "LL";
    if (!strcmp(s, "LL128"))
        return "LL128";
    if (!strcmp(s, "SIMPLE"))
        return "Simple";
    return NULL;
}

/* Collectives whose kernels carry no meaningful reduction or type (older releases name a dummy one). */
static int moves_only(const char *coll)
{
    return !strcmp(coll, "AllGather") || !strcmp(coll, "Broadcast") || !strcmp(coll, "SendRecv") ||
           !strcmp(coll, "AllToAll");
}

static void lower_algo(const char *algo, char *out, size_t outsz)
{
    size_t i = 0;
    for (; algo[i] && i + 1 < outsz; i++)
        out[i] = (char)(algo[i] >= 'A' && algo[i] <= 'Z' ? algo[i] + 32 : algo[i]);
    out[i] = '\0';
}

int nccl_decode(const char *name, struct nccl_kernel *k)
{
    char bare[256], *t[NCCL_TOKENS], *save = NULL;
    int n = 0, i = 1, old;
    const char *rest;
    memset(k, 0, sizeof *k);
    if (bare_name(name, bare, sizeof bare))
        return -1;
    if (!strncmp(bare, "ncclDevKernel_", 14)) {
        old = 0;
        rest = bare + 14;
    } else if (!strncmp(bare, "ncclKernel_", 11)) {
        old = 1;
        rest = bare + 11;
    } else {
        return -1;
    }
    char *body = (char *)rest;
    for (char *tok = strtok_r(body, "_", &save); tok && n < NCCL_TOKENS; tok = strtok_r(NULL, "_", &save))
        t[n++] = tok;
    if (n == 0 || !(t[0][0] >= 'A' && t[0][0] <= 'Z'))
        return -1;
    put(k->collective, sizeof k->collective, t[0]);
    if (!strcmp(t[0], "Generic") || (!old && !strcmp(t[0], "SendRecv")))
        return 0;
    if (old) {
        /* <Coll>_<ALGO>_<PROTO>_<Op>_<type>, the type in C spelling (it may hold '_' itself) */
        const char *algo = take_algo(t, n, &i), *proto = i < n ? proto_name(t[i]) : NULL, *op, *ty;
        if (!algo || !proto)
            return 0;
        lower_algo(algo, k->algorithm, sizeof k->algorithm);
        put(k->protocol, sizeof k->protocol, proto);
        i++;
        if (i >= n || moves_only(k->collective))
            return 0;
        op = map_find(nccl_ops, sizeof nccl_ops / sizeof nccl_ops[0], t[i++]);
        char ctype[64] = "";
        for (size_t used = 0; i < n && used < sizeof ctype; i++) /* a longer name is cut, never written past */
            used += (size_t)snprintf(ctype + used, sizeof ctype - used, "%s%s", used ? "_" : "", t[i]);
        /* "__nv_bfloat16" split at its underscores leaves empty parts that strtok dropped: rebuild its spelling */
        if (!strcmp(ctype, "nv_bfloat16") || !strcmp(ctype, "nv_fp8_e4m3") || !strcmp(ctype, "nv_fp8_e5m2")) {
            char tmp[sizeof ctype + 2];
            snprintf(tmp, sizeof tmp, "__%s", ctype);
            snprintf(ctype, sizeof ctype, "%.*s", (int)sizeof ctype - 1, tmp);
        }
        ty = map_find(nccl_ctypes, sizeof nccl_ctypes / sizeof nccl_ctypes[0], ctype);
        put(k->op, sizeof k->op, op);
        put(k->dtype, sizeof k->dtype, ty);
        return 0;
    }
    /* <Coll>[_<Op>_<type>]_<ALGO>_<PROTO> */
    if (n >= 4) {
        const char *op = map_find(nccl_ops, sizeof nccl_ops / sizeof nccl_ops[0], t[1]);
        for (size_t j = 0; op && j < sizeof nccl_types / sizeof nccl_types[0]; j++)
            if (!strcmp(t[2], nccl_types[j])) {
                put(k->op, sizeof k->op, op);
                put(k->dtype, sizeof k->dtype, t[2]);
                i = 3;
            }
    }
    const char *algo = take_algo(t, n, &i);
    if (algo && i + 1 == n && proto_name(t[i])) {
        lower_algo(algo, k->algorithm, sizeof k->algorithm);
        put(k->protocol, sizeof k->protocol, proto_name(t[i]));
    }
    return 0;
}

const char *nccl_describe(const struct nccl_kernel *k, char *out, size_t outsz)
{
    const char *parts[4] = {k->op, k->dtype, k->algorithm, k->protocol};
    size_t used = (size_t)snprintf(out, outsz, "NCCL %s", k->collective);
    int any = 0;
    for (int i = 0; i < 4 && used < outsz; i++) {
        if (!parts[i][0])
            continue;
        used += (size_t)snprintf(out + used, outsz - used, "%s%s", any ? ", " : " (", parts[i]);
        any = 1;
    }
    if (!strcmp(k->collective, "Generic") && used < outsz)
        used += (size_t)snprintf(out + used, outsz - used, "%s", " kernel (runs any collective)");
    else if (any && used < outsz)
        snprintf(out + used, outsz - used, ")");
    return out;
}

const char *nccl_describe_name(const char *name, char *out, size_t outsz)
{
    struct nccl_kernel k;
    if (nccl_decode(name, &k))
        return NULL;
    return nccl_describe(&k, out, outsz);
}
