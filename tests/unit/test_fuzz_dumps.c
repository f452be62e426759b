/* A bounded fuzz test of what reads a GPU fault's evidence after a run (the report readers have their own,
 * test_fuzz_reports.c): the debugger's output for a GPU core dump (coredump.c's parser, then the report's
 * "coredump" object and the sentence of where it faulted), the instructions it disassembles (sass.c: the access,
 * the address from the lane's registers), the dump file's own section tables (coredump_elf.c), and the lines of
 * the kernel's log (kernlog.c). Seeds are the recorded debugger outputs of tests/unit/fixtures, instructions and
 * Xid lines as GPUs print them, and dumps the simulated driver's way; they are mutated (bytes flipped, text cut,
 * numbers made huge or negative, tokens spliced in) with a fixed seed. Nothing may crash or overflow (built with
 * ASan and UBSan where the compiler has them: any report ends the test), a kernel-log line kept is fit for a
 * terminal, and the JSON made of a dump parses back. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "evidence/coredump.h"
#include "evidence/coredump_elf.h"
#include "evidence/kernlog.h"
#include "evidence/sass.h"
#include "render/json.h"
#include "base/jsonw.h"
#include "../fakecuda/fc_dumpfile.h"
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_SEED
#define FUZZ_SEED 0x51c3a0d97e2b6f14ULL /* fixed: every run tries the same mutations */
#endif
#ifndef FUZZ_ROUNDS
#define FUZZ_ROUNDS 400 /* mutations per seed */
#endif

#include "fuzz_rand.h"

/* Tokens a mutation splices in: the numbers and operand pieces that reach arithmetic. */
static const char *const tokens[] = {
    "0x8000000000000000",
    "-0x8000000000000000",
    "+0x7fffffffffffffff",
    "0xffffffffffffffff",
    "-",
    "18446744073709551616",
    "99999999999999999999",
    "-1",
    "0x",
    "R2.64",
    "UR4.64",
    "R255",
    "UR63",
    "RZ",
    "[",
    "]",
    "desc[UR4]",
    ".64",
    ".128",
    ".U32",
    "+",
    "(",
    ")",
    ",",
    "<<<(",
    ")>>>",
    "2147483648",
    "4294967296",
    "faulted @ 0x",
    "_",
    "pid=",
    "name=",
    "ACCESS_TYPE_VIRT_",
    "FAULT_",
    "\n",
    "\x1b[2J",
    "\xff\xfe",
    "lane ",
    "block (",
    "thread (",
    "Ln",
    "*>",
    "CUDA focus unchanged.",
    "errorpc",
    "pc ",
    "R9999999",
    "(oob.cu:",
};

/* A mutated copy of s[0..n) (malloc'd, NUL-terminated; *len its length). */
static char *mutate(const char *s, size_t n, size_t *len) {
  size_t cap = n + 256, m = n;
  char *out = malloc(cap + 1);
  if (!out) return NULL;
  memcpy(out, s, n);
  int steps = 1 + (int)fuzz_below(4);
  for (int k = 0; k < steps; k++) {
    switch (fuzz_below(5)) {
    case 0: /* flip a byte */
      if (m) out[fuzz_below(m)] = (char)fuzz_rand();
      break;
    case 1: /* cut short */
      m = fuzz_below(m + 1);
      break;
    case 2:
    case 3: { /* splice a token in */
      const char *t = tokens[fuzz_below(sizeof tokens / sizeof tokens[0])];
      size_t tl = strlen(t), at = fuzz_below(m + 1);
      if (m + tl > cap) break;
      memmove(out + at + tl, out + at, m - at);
      memcpy(out + at, t, tl);
      m += tl;
      break;
    }
    default: { /* a digit run made long */
      size_t at = fuzz_below(m + 1), add = 1 + fuzz_below(24);
      if (m + add > cap) break;
      memmove(out + at + add, out + at, m - at);
      for (size_t i = 0; i < add; i++) out[at + i] = (char)('0' + fuzz_below(10));
      m += add;
      break;
    }
    }
  }
  out[m] = '\0';
  *len = m;
  return out;
}

/* Registers for sass_address: every name has a value, from a few that reach the ends of the arithmetic. */
static int any_reg(void *arg, const char *name, uint64_t *v) {
  static const uint64_t vals[] = {0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff0, 0x7fcb};
  (void)name;
  if (fuzz_below(16) == 0) return -1; /* now and then a register the dump does not have */
  *v = vals[(*(unsigned *)arg)++ % (sizeof vals / sizeof vals[0])];
  return 0;
}

static const char *const insns[] = {
    "STG.E desc[UR4][R2.64+0x2],R5",
    "@P0 LDG.E.64.CONSTANT R4, desc[UR6][R2.64+0x10]",
    "LDG.E.128 R8, desc[UR6][R6.64-0x20]",
    "LDG.E.S16 R0, desc[UR6][R2.64+UR4.64]",
    "RED.E.ADD.STRONG.GPU desc[UR6][R2.64+0x8], R5",
    "STS [R4+0x10], R5",
    "STL.64 [R1+0x8], R4",
    "LD.E R0, [R2.64]",
    "STG.E [RZ+0x40], R5",
    "LDG.E R5,desc[UR4][R4.64+0x2]",
    "STG.E desc[UR4][R2.64-0x8000000000000000],R5", /* once a signed overflow */
    "STG.E desc[UR4][R2.64+0x7fffffffffffffff+0x7fffffffffffffff],R5",
    "LDG.E R2, desc[UR4][R2.64+-0x10+UR5]",
};

static void fuzz_sass(void) {
  for (size_t i = 0; i < sizeof insns / sizeof insns[0]; i++)
    for (int r = 0; r <= FUZZ_ROUNDS; r++) {
      size_t len;
      char *t = r ? mutate(insns[i], strlen(insns[i]), &len) : strdup(insns[i]);
      struct sass_access a;
      uint64_t addr;
      uint32_t low;
      unsigned at = (unsigned)fuzz_below(7);
      CHECK(t != NULL);
      if (sass_parse(t, &a) == 0) {
        CHECK(a.kind != SASS_NONE && a.size >= 1 && a.size <= 16 && memchr(a.base, 0, sizeof a.base) &&
                  memchr(a.uniform, 0, sizeof a.uniform) && memchr(a.dest, 0, sizeof a.dest),
              "a parsed access is whole: %s", t);
        sass_address(&a, any_reg, &at, &addr);
        sass_address_low32(&a, any_reg, &at, &low);
        CHECK(sass_kind_name(a.kind) && sass_space_name(a.space));
      } else {
        CHECK(a.kind == SASS_NONE, "a refused instruction says so: %s", t);
      }
      free(t);
    }
}

/* The debugger's output, parsed, made into the report's object and said as a sentence. */
static void fuzz_one_output(const char *text) {
  struct coredump_info ci;
  char where[512];
  struct coredump_census cs = {.devices = 1, .grids = (long)fuzz_below(3), .warps = (long)fuzz_below(3)};
  memset(&ci, 0, sizeof ci);
  if (coredump_parse(text, &ci) == 0) {
    coredump_note_census(&ci, &cs);
    coredump_where(&ci, where, sizeof where);
    CHECK(memchr(where, 0, sizeof where) != NULL);
    struct json *o = coredump_json(&ci, "/tmp/gpucore-host-1.nvcudmp");
    if (o) {
      struct jw jw;
      struct json *back = NULL;
      jw_init(&jw);
      CHECK(json_dump(o, &jw) == JSON_OK && !jw.err && json_parse(jw.buf, jw.len, &back, NULL) == 0,
            "the dump's JSON parses back");
      json_free(back);
      jw_free(&jw);
      json_free(o);
    }
  }
  coredump_free(&ci);
}

static const char builtin_output[] =
    "CUDA Exception: Warp Misaligned Address\n"
    "The exception was triggered at PC 0x7f2af77a0ae0  write_oob(int*, int)  (oob.cu:12)\n"
    "[Current focus set to CUDA kernel 0, grid 3, block (1,0,0), thread (5,0,0), device 0, sm 7, warp 1, lane 5]\n"
    "#0  0x00007f2af77a0af0 in write_oob<<<(4,1,1),(256,1,1)>>> () at oob.cu:12\n"
    "*> 0x7f2af77a0ae0 <_Z9write_oobPii+224>:\tSTG.E desc[UR4][R2.64+0x2],R5\n"
    "pc             0x7f2af77a0af0      0x7f2af77a0af0 <write_oob(int*, int)+240>\n"
    "errorpc        0x7f2af77a0ae0      0x7f2af77a0ae0 <write_oob(int*, int)+224>\n"
    "R2             0x71e00001          1910505473\n"
    "R3             0x7fcb              32715\n"
    "[Switching focus to CUDA kernel 0, grid 3, block (1,0,0), thread (6,0,0), device 0, sm 7, warp 1, lane 6]\n"
    "pc             0x7f2af77a0af0      0x7f2af77a0af0 <write_oob(int*, int)+240>\n"
    "R2             0xffffffff          -1\n"
    "R3             0x8000000000000000  -9223372036854775808\n";

static void fuzz_outputs(const char *dir) {
  char *seeds[16];
  size_t nseeds = 0;
  seeds[nseeds++] = strdup(builtin_output);
  DIR *d = dir ? opendir(dir) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && nseeds < sizeof seeds / sizeof seeds[0]) {
    char path[4096];
    if (strncmp(e->d_name, "coredump-", 9) != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    char *buf = malloc(1 << 20);
    size_t n = f && buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    if (f) fclose(f);
    if (buf && n) {
      buf[n] = '\0';
      seeds[nseeds++] = buf;
    } else {
      free(buf);
    }
  }
  if (d) closedir(d);
  CHECK(nseeds >= 2, "the recorded outputs of %s were read", dir ? dir : "(none given)");
  for (size_t i = 0; i < nseeds; i++) {
    fuzz_one_output(seeds[i]);
    for (int r = 0; r < FUZZ_ROUNDS / 4; r++) {
      size_t len;
      char *t = mutate(seeds[i], strlen(seeds[i]), &len);
      CHECK(t != NULL);
      fuzz_one_output(t);
      free(t);
    }
    free(seeds[i]);
  }
}

/* Dump files: one the simulated driver's way, then its header and section table bytes mutated. */
static void fuzz_census(void) {
  char dir[] = "/tmp/culprit-fuzz-dumps-XXXXXX", path[256];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/gpucore.nvcudmp", dir);
  static const struct fc_dump_table t[] = {
      {SHT_LOUSER + 9, 2 * 64, 64},  /* devices */
      {SHT_LOUSER + 12, 3 * 32, 32}, /* grids */
      {SHT_LOUSER + 14, 1 * 48, 48}, /* warps */
      {SHT_LOUSER + 15, 4 * 16, 16}, /* lanes */
  };
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  CHECK(fd >= 0 && fc_dumpfile_write(fd, "note", 4, t, 4, 0) == 0);
  off_t size = lseek(fd, 0, SEEK_END);
  char *orig = malloc((size_t)size);
  CHECK(orig && pread(fd, orig, (size_t)size, 0) == size);
  close(fd);
  struct coredump_census cs;
  CHECK(coredump_census(path, &cs) == 0, "the seed is a dump");
  static const uint64_t big[] = {0, 1, 0x7fffffffffffffffull, 0x8000000000000000ull, 0xffffffffffffffffull, 64};
  for (int r = 0; r < FUZZ_ROUNDS; r++) {
    char *b = malloc((size_t)size);
    CHECK(b != NULL);
    memcpy(b, orig, (size_t)size);
    for (int k = 1 + (int)fuzz_below(4); k > 0; k--) {
      size_t at = fuzz_below((size_t)size);
      if (fuzz_below(2)) {
        b[at] = (char)fuzz_rand();
      } else { /* an 8-byte field made huge: e_shoff, sh_size, sh_entsize, ... */
        at &= ~(size_t)7;
        if (at + 8 <= (size_t)size) memcpy(b + at, &big[fuzz_below(sizeof big / sizeof big[0])], 8);
      }
    }
    size_t keep = fuzz_below(8) ? (size_t)size : fuzz_below((size_t)size + 1);
    fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    CHECK(fd >= 0 && write(fd, b, keep) == (ssize_t)keep);
    close(fd);
    memset(&cs, 0, sizeof cs);
    if (coredump_census(path, &cs) == 0)
      CHECK(cs.devices > 0 && cs.grids >= 0 && cs.blocks >= 0 && cs.warps >= 0 && cs.lanes >= 0, "counts are counts");
    free(b);
  }
  free(orig);
  unlink(path);
  rmdir(dir);
}

static const char *const xids[] = {
    "3,812,30597899,-;NVRM: Xid (PCI:0000:00:06): 31, pid=504, name=gpu_oob_static, channel 0x0000000a, intr "
    "00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x83ae_8fe05000. Fault is of type FAULT_PDE "
    "ACCESS_TYPE_VIRT_READ\n SUBSYSTEM=pci\n",
    "[   31.793543] NVRM: Xid (PCI:0000:00:06): 31, pid=519, name=gpu_threads8_st, channel 0x0000000a, intr "
    "00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ 0x8338_ec80a000. Fault is of type FAULT_PDE "
    "ACCESS_TYPE_VIRT_WRITE",
    "Dec  3 20:22:30 node7 kernel: [   30.59] NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python, Ch 00000010, "
    "intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 faulted @ 0x7f12_34560000. Fault is of type FAULT_PTE "
    "ACCESS_TYPE_ATOMIC",
    "NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): Misaligned Address",
    "NVRM: Xid (PCI:0000:00:06): 43, pid='<unknown>', name=<unknown>, channel 0x0000000a",
};

static void fuzz_kernlog(void) {
  for (size_t i = 0; i < sizeof xids / sizeof xids[0]; i++)
    for (int r = 0; r <= FUZZ_ROUNDS; r++) {
      size_t len = strlen(xids[i]);
      char *t = r ? mutate(xids[i], len, &len) : strdup(xids[i]);
      struct kernlog_xid x;
      CHECK(t != NULL);
      if (kernlog_parse(t, len, &x)) {
        size_t n = strnlen(x.line, sizeof x.line);
        CHECK(n < sizeof x.line && strnlen(x.name, sizeof x.name) < sizeof x.name &&
                  strnlen(x.access, sizeof x.access) < sizeof x.access &&
                  strnlen(x.fault_type, sizeof x.fault_type) < sizeof x.fault_type,
              "fields end inside their arrays");
        for (size_t k = 0; k < n; k++)
          CHECK((unsigned char)x.line[k] >= 0x20 && (unsigned char)x.line[k] < 0x7f, "a kept line is terminal-safe");
        CHECK(!x.has_address || (x.address & 0xfff) == 0, "an address is a page");
      }
      free(t);
    }
}

int main(int argc, char **argv) {
  fuzz_sass();
  fuzz_outputs(argc > 1 ? argv[1] : NULL);
  fuzz_census();
  fuzz_kernlog();
  return CHECK_DONE();
}
