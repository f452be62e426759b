/* Unit test of the GPU core dump post-mortem (src/evidence/coredump.c): cuda-gdb's batch output as recorded on an
 * H200 (CUDA 13.0, driver 580: cuda-gdb 13.0 printed the exception, then died of an internal error), the focus
 * and backtrace lines it prints when it goes on, and tying a dump to a report: the one candidate that runs the
 * faulting kernel (with a grid that holds its block) becomes the culprit, never one the dump does not single out. */
#include "../../src/evidence/coredump.h"
#include "../../src/evidence/coredump_elf.h"
#include "../fakecuda/fc_dumpfile.h"
#include "../../src/render/json.h"
#include "check.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Recorded: cuda-gdb -batch -ex "target cudacore core.vm.588.nvcudmp" ..., a write_oob kernel built -lineinfo. */
static const char recorded[] =
    "Opening GPU coredump: /tmp/run/core.vm.588.nvcudmp\n"
    "\n"
    "CUDA Exception: Warp Illegal Address\n"
    "The exception was triggered at PC 0x7f2af77a0ae0  write_oob(int*, int)  (oob.cu:8)\n"
    "terminate called after throwing an instance of 'std::out_of_range'\n"
    "  what():  vector::_M_range_check: __n (which is 4294967294) >= this->size() (which is 64)\n"
    "\n"
    "\n"
    "Fatal signal: Aborted\n"
    "----- Backtrace -----\n"
    "0x545d9b _Z22gdb_internal_backtracev\n"
    "A fatal error internal to GDB has been detected, further\n"
    "debugging is not possible.  GDB will now terminate.\n";

/* The lines cuda-gdb prints after the exception when it does not die (the documented focus format). */
static const char focused[] =
    "CUDA Exception: Warp Illegal Address\n"
    "The exception was triggered at PC 0x555555a0ae0  at::native::index_kernel(long*, int)  "
    "(/src/Index.cu:42)\n"
    "\n"
    "Thread 1 \"python3\" received signal CUDA_EXCEPTION_14, Warp Illegal Address.\n"
    "[Current focus set to CUDA kernel 0, grid 6, block (81,0,0), thread (44,0,0), device 0, sm 7, warp 1, "
    "lane 12]\n"
    "#0  0x0000555555a0ae0 in at::native::index_kernel(long*, int)<<<(96,1,1),(128,1,1)>>> () at "
    "/src/Index.cu:42\n";

/* Recorded on the H200: a device assert and a __trap() under a core dump (no "CUDA Exception" line there). */
static const char recorded_assert[] =
    "Opening GPU coredump: /tmp/run/gpucore-vm-1794.nvcudmp\n"
    "[Current focus set to CUDA kernel 0, grid 6, block (3,0,0), thread (232,0,0), device 0, sm 127, warp 5, "
    "lane 8]\n"
    "\n"
    "Assertion failed.\n"
    "#0  0x00007f776f7a0cf0 in histogram_checked<<<(16,1,1),(256,1,1)>>> () at /opt/culprit/tests/gpu/assert.cu:27\n"
    "27\t  assert(b >= 0 && b < kBuckets);\n";
static const char recorded_trap[] =
    "Opening GPU coredump: /tmp/run/gpucore-vm-1731.nvcudmp\n"
    "[Current focus set to CUDA kernel 0, grid 5, block (4,0,0), thread (1,0,0), device 0, sm 124, warp 0, lane 1]\n"
    "Program terminated with signal SIGTRAP, Trace/breakpoint trap.\n"
    "#0  0x00007f5bcf7a0bf0 in check_weights<<<(8,1,1),(256,1,1)>>> () at /opt/culprit/tests/gpu/trap.cu:16\n";

/* Recorded on the H200 (CUDA 13.0, driver 580.159, cuda-gdb 13.0; bench/coredump_study.sh), abridged: `x/i
 * $errorpc` and `info registers` after the exception. A misaligned store: the focus is the faulting lane (7),
 * stopped just after the store, whose address register pair R2:R3 plus 2 is the misaligned address. */
static const char recorded_misaligned[] =
    "Opening GPU coredump: /tmp/run/misaligned-env.nvcudmp\n"
    "[Current focus set to CUDA kernel 0, grid 5, block (3,0,0), thread (7,0,0), device 0, sm 131, warp 0, lane 7]\n"
    "\n"
    "CUDA Exception: Warp Misaligned Address\n"
    "The exception was triggered at PC 0x7fcb7f7a0c40  bad_align(float*, int)  (coredump_study.cu:54)\n"
    "#0  0x00007fcb7f7a0c50 in bad_align<<<(8,1,1),(128,1,1)>>> () at /opt/culprit/bench/coredump_study.cu:54\n"
    "54\t    *(float *)((char *)p + 2) = 1.0f; // the misaligned store\n"
    "*> 0x7fcb7f7a0c40 <_Z9bad_alignPfi+320>:\tSTG.E desc[UR4][R2.64+0x2],R5\n"
    "pc             0x7fcb7f7a0c50      0x7fcb7f7a0c50 <bad_align(float*, int)+336>\n"
    "errorpc        0x7fcb7f7a0c40      0x7fcb7f7a0c40 <bad_align(float*, int)+320>\n"
    "R0             0x0                 0\n"
    "R1             0xfffc60            16776288\n"
    "R2             0x71e00000          1910505472\n"
    "R3             0x7fcb              32715\n"
    "R4             0x0                 0\n"
    "R5             0x3f800000          1065353216\n"
    "UR4            0x0                 0\n"
    "UR5            0x7fdb              32731\n";

/* An out-of-bounds store (lane 7 stored 2^34 floats past its buffer): the exception is the warp's, and the focus
 * lane 0 is elsewhere in the kernel (its pc before the error PC), its R2:R3 its own, in-bounds address. */
static const char recorded_oob[] =
    "[Current focus set to CUDA kernel 0, grid 5, block (3,0,0), thread (0,0,0), device 0, sm 131, warp 0, lane 0]\n"
    "\n"
    "CUDA Exception: Warp Illegal Address\n"
    "The exception was triggered at PC 0x7f7d7f7a0c90  bad_store(float*, int, long long)  (coredump_study.cu:46)\n"
    "#0  bad_store<<<(8,1,1),(128,1,1)>>> () at /opt/culprit/bench/coredump_study.cu:47\n"
    "*> 0x7f7d7f7a0c90 <_Z9bad_storePfix+400>:\tSTG.E desc[UR8][R2.64],R5\n"
    "pc             0x7f7d7f7a0b90      0x7f7d7f7a0b90 <bad_store(float*, int, long long)+144>\n"
    "errorpc        0x7f7d7f7a0c90      0x7f7d7f7a0c90 <bad_store(float*, int, long long)+400>\n"
    "R2             0x77e00600          2011170304\n"
    "R3             0x7f7d              32637\n";

static const char recorded_oob_converged[] =
    "[Current focus set to CUDA kernel 0, grid 11, block (0,0,0), thread (96,0,0), device 0, sm 124, warp 2, "
    "lane 0]\n"
    "CUDA Exception: Warp Illegal Address\n"
    "The exception was triggered at PC 0x7f6947a0e20  scatter_grad(float*, long const*, int, int)  (oob.cu:37)\n"
    "*> 0x7f6947a0e20 <_Z12scatter_gradPfPKlii+288>:\tLDG.E R0,desc[UR4][R6.64]\n"
    "pc             0x7f6947a0e30      0x7f6947a0e30 <scatter_grad(float*, long const*, int, int)+304>\n"
    "errorpc        0x7f6947a0e20      0x7f6947a0e20 <scatter_grad(float*, long const*, int, int)+288>\n"
    "R6             0x1be0580c          467687436\n"
    "R7             0x7f69              32617\n";

/* A device assert: no error PC, so no faulting access to speak of. */
static const char recorded_assert_regs[] =
    "[Current focus set to CUDA kernel 0, grid 5, block (3,0,0), thread (7,0,0), device 0, sm 131, warp 0, lane 7]\n"
    "Assertion failed.\n"
    "#0  bad_assert<<<(8,1,1),(128,1,1)>>> () at /opt/culprit/bench/coredump_study.cu:62\n"
    "value is not available\n"
    "pc             0x7f3a6f7a0cd0      0x7f3a6f7a0cd0 <bad_assert(float const*, int)+464>\n"
    "errorpc        <unavailable>\n"
    "R2             0x80                128\n";

static void test_faulting_access(void) {
  struct coredump_info ci;
  CHECK(coredump_parse(recorded_misaligned, &ci) == 0);
  CHECK(ci.insn && !strcmp(ci.insn, "STG.E desc[UR4][R2.64+0x2],R5"), "insn %s", ci.insn);
  CHECK(ci.access && !strcmp(ci.access, "store") && !strcmp(ci.space, "global") && ci.access_size == 4);
  CHECK(ci.have_address && ci.address == 0x7fcb71e00002ull, "address %llx", ci.address);
  struct json *o = NULL;
  char text[] = "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"exact\", \"reason\": \"r\"}, "
                "\"culprit\": {\"seq\": 3, \"kernel\": \"bad_align(float*, int)\", \"grid\": [8,1,1]}}";
  int changed = 0;
  CHECK(json_parse(text, strlen(text), &o, NULL) == 0 && coredump_attach(o, &ci, "d", &changed) == 0);
  const struct json *cd = json_get(o, "coredump");
  CHECK(!strcmp(json_get_str(cd, "address"), "0x7fcb71e00002") && json_get_int(cd, "access_size", 0) == 4 &&
            json_get_int(cd, "alignment", 0) == 4 && !strcmp(json_get_str(cd, "access"), "store"),
        "coredump object of a misaligned store");
  json_free(o);
  coredump_free(&ci);

  CHECK(coredump_parse(recorded_oob, &ci) == 0);
  CHECK(ci.access && !strcmp(ci.access, "store") && ci.access_size == 4);
  CHECK(!ci.have_address, "the focus lane's own address taken for the faulting one");
  CHECK(ci.address_unknown && strstr(ci.address_unknown, "which of its lanes made the faulting access"), "why: %s",
        ci.address_unknown);
  coredump_free(&ci);

  /* The same exception where the whole warp ran the faulting load together (H200, tests/gpu/oob.cu): the focus
   * lane 0 stopped just after it, its address in bounds; lane 27's was not. No address either. */
  CHECK(coredump_parse(recorded_oob_converged, &ci) == 0);
  CHECK(ci.access && !strcmp(ci.access, "load") && !ci.have_address && ci.address_unknown,
        "a converged warp's focus lane taken for the faulting one");
  coredump_free(&ci);

  CHECK(coredump_parse(recorded_assert_regs, &ci) == 0);
  CHECK(!ci.access && !ci.have_address && !ci.address_unknown, "an assert has no faulting access");
  coredump_free(&ci);
}

/* A file of tests/unit/fixtures, read whole (NULL when it cannot be). */
static char *fixture(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  char *text = f ? calloc(1, 1 << 16) : NULL;
  if (text) fread(text, 1, (1 << 16) - 1, f);
  if (f) fclose(f);
  return text;
}

/* A misaligned store with the lanes shown: lane 0 stored aligned, lane 3 had moved on (its pc elsewhere: not
 * read), lane 7 (the focus, "CUDA focus unchanged.") stored at R2:R3 + 2, misaligned: lane 7 is the faulting one. */
static const char misaligned_lanes[] =
    "[Current focus set to CUDA kernel 0, grid 5, block (3,0,0), thread (7,0,0), device 0, sm 131, warp 0, lane 7]\n"
    "CUDA Exception: Warp Misaligned Address\n"
    "The exception was triggered at PC 0x7fcb7f7a0c40  bad_align(float*, int)  (coredump_study.cu:54)\n"
    "*> 0x7fcb7f7a0c40 <_Z9bad_alignPfi+320>:\tSTG.E desc[UR4][R2.64+0x2],R5\n"
    "pc             0x7fcb7f7a0c50      0x7fcb7f7a0c50 <bad_align(float*, int)+336>\n"
    "errorpc        0x7fcb7f7a0c40      0x7fcb7f7a0c40 <bad_align(float*, int)+320>\n"
    "R2             0x71e00000          1910505472\n"
    "R3             0x7fcb              32715\n"
    "[Switching focus to CUDA kernel 0, grid 5, block (3,0,0), thread (0,0,0), device 0, sm 131, warp 0, lane 0]\n"
    "pc             0x7fcb7f7a0c50      0x7fcb7f7a0c50 <bad_align(float*, int)+336>\n"
    "errorpc        0x7fcb7f7a0c40      0x7fcb7f7a0c40 <bad_align(float*, int)+320>\n"
    "R2             0x71e00102          1910505730\n"
    "R3             0x7fcb              32715\n"
    "[Switching focus to CUDA kernel 0, grid 5, block (3,0,0), thread (3,0,0), device 0, sm 131, warp 0, lane 3]\n"
    "pc             0x7fcb7f7a0b00      0x7fcb7f7a0b00 <bad_align(float*, int)+0>\n"
    "R2             0x71e00001          1910505473\n"
    "R3             0x7fcb              32715\n"
    "CUDA focus unchanged.\n"
    "pc             0x7fcb7f7a0c50      0x7fcb7f7a0c50 <bad_align(float*, int)+336>\n"
    "errorpc        0x7fcb7f7a0c40      0x7fcb7f7a0c40 <bad_align(float*, int)+320>\n"
    "R2             0x71e00000          1910505472\n"
    "R3             0x7fcb              32715\n"
    "Invalid coordinates requested. CUDA focus unchanged.\n"
    "pc             0x7fcb7f7a0c50      0x7fcb7f7a0c50 <bad_align(float*, int)+336>\n"
    "R2             0x71e00000          1910505472\n"
    "R3             0x7fcb              32715\n";

/* Every lane of the warp (`cuda lane N`, `info registers`), as cuda-gdb 13.0 showed them on the H200
 * (tests/unit/fixtures, trimmed to a few lanes and the registers that matter). */
static void test_lanes(const char *dir) {
  struct coredump_info ci;
  char *oob = fixture(dir, "coredump-oob-lanes.txt"), *mis = fixture(dir, "coredump-misaligned-lanes.txt");
  CHECK(oob && mis, "fixtures in %s", dir);
  if (!oob || !mis) return;

  /* tests/gpu/oob.cu: the whole warp at `LDG.E R0,desc[UR4][R6.64]` (it wrote R0, not its address R6:R7); lane 27,
   * thread (123,0,0), loaded 2^40 floats past the gradient, the others inside it. Which lane is bad is the
   * allocation table's to say (test_addr.c): here every lane's address is read, none is chosen. */
  CHECK(coredump_parse(oob, &ci) == 0);
  CHECK(ci.lanes && ci.lanes_read == 5, "lanes read: %d", ci.lanes_read);
  CHECK(ci.lanes && ci.lanes[27].have_address && ci.lanes[27].address == 0x835b7fe05ec0ull &&
            ci.lanes[27].thread[0] == 123 && ci.lanes[27].block[0] == 0,
        "lane 27: %llx", ci.lanes ? ci.lanes[27].address : 0);
  CHECK(ci.lanes && ci.lanes[0].have_address && ci.lanes[0].address == 0x7f5b7fe0580cull && ci.lanes[0].thread[0] == 96,
        "lane 0, the focus (\"CUDA focus unchanged.\"): %llx", ci.lanes ? ci.lanes[0].address : 0);
  CHECK(ci.lanes && !ci.lanes[5].seen, "a lane not shown is not read");
  CHECK(!ci.have_address && ci.address_unknown && strstr(ci.address_unknown, "only the allocation table can tell"),
        "an illegal address: %s", ci.address_unknown);
  struct json *doc = NULL;
  char text[] = "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"exact\", \"reason\": \"r\"}, "
                "\"culprit\": {\"seq\": 9, \"kernel\": \"scatter_grad(float*, long const*, int, int)\"}}";
  int changed = 0;
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0 && coredump_attach(doc, &ci, "d", &changed) == 0);
  const struct json *lanes = json_get(json_get(doc, "coredump"), "lanes");
  CHECK(json_len(lanes) == 5 && json_get_int(json_at(lanes, 3), "lane", -1) == 27 &&
            !strcmp(json_get_str(json_at(lanes, 3), "address"), "0x835b7fe05ec0"),
        "coredump.lanes");
  long long tx = -1;
  CHECK(json_int(json_at(json_get(json_at(lanes, 3), "thread"), 0), &tx) == 0 && tx == 123, "lane 27's thread");
  CHECK(!json_get(json_get(doc, "coredump"), "address"), "no address before the table chose a lane");
  json_free(doc);
  coredump_free(&ci);

  /* tests/gpu/misaligned.cu: `LDG.E R5,desc[UR4][R4.64]` wrote R5, the high half of its own address: no lane's
   * registers give the address any more, and the rule's words say so. */
  CHECK(coredump_parse(mis, &ci) == 0);
  CHECK(ci.lanes && ci.lanes[2].seen && ci.lanes_read == 0 && !ci.have_address, "lanes read %d", ci.lanes_read);
  CHECK(ci.address_unknown && strstr(ci.address_unknown, "wrote over a register its address is made of"), "why: %s",
        ci.address_unknown);
  /* R4, the low half, is intact: it still says each lane's access was misaligned (render/addr.c names the lane) */
  CHECK(ci.lanes_low32 >= 2 && ci.lanes[0].have_low32 && ci.lanes[0].low32 == 0x63e00006u && ci.lanes[2].have_low32 &&
            ci.lanes[2].low32 == 0x63e00026u,
        "low halves: %d lanes, lane 0 %x", ci.lanes_low32, ci.lanes ? ci.lanes[0].low32 : 0);
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0 && coredump_attach(doc, &ci, "d", &changed) == 0);
  lanes = json_get(json_get(doc, "coredump"), "lanes");
  CHECK(json_len(lanes) == (size_t)ci.lanes_low32 && json_get_str(json_at(lanes, 0), "address_low32") &&
            !strcmp(json_get_str(json_at(lanes, 0), "address_low32"), "0x63e00006") &&
            !json_get(json_at(lanes, 0), "address"),
        "coredump.lanes holds the low halves");
  json_free(doc);
  coredump_free(&ci);

  /* A misaligned store: the first misaligned lane is the faulting one; a lane elsewhere in the kernel is not read,
   * nor a lane the debugger could not switch to (the focus lane's registers follow it). */
  CHECK(coredump_parse(misaligned_lanes, &ci) == 0);
  CHECK(ci.lanes_read == 2 && ci.have_address && ci.address == 0x7fcb71e00002ull && ci.address_lane == 7,
        "read %d, lane %ld at %llx", ci.lanes_read, ci.address_lane, ci.address);
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0 && coredump_attach(doc, &ci, "d", &changed) == 0);
  CHECK(json_get_int(json_get(doc, "coredump"), "address_lane", -1) == 7 &&
            !strcmp(json_get_str(json_get(doc, "coredump"), "address"), "0x7fcb71e00002"),
        "coredump.address_lane");
  json_free(doc);
  coredump_free(&ci);

  /* tests/gpu/after_free.cu on the H200: `LDG.E R3,desc[UR4][R2.64]` loads into R3, the high half of its own
   * address, and the lanes ran on past it: the overwrite is said, whatever the lanes' pc. A load that leaves its
   * address alone, with the lanes 0x30 bytes on: their registers may have changed since, and that is said. */
  static const char ran_on[] = "[Current focus set to CUDA kernel 0, grid 3, block (0,0,0), thread (0,0,0), device 0, "
                               "sm 124, warp 3, lane 0]\n"
                               "CUDA Exception: Warp Illegal Address\n"
                               "*> 0x7f00000000b0 <_Z7consumePKfPfi+176>:\tLDG.E R3,desc[UR4][R2.64]\n"
                               "CUDA focus unchanged.\n"
                               "pc             0x7f00000000e0      0x7f00000000e0 <consume+224>\n"
                               "errorpc        0x7f00000000b0      0x7f00000000b0 <consume+176>\n"
                               "R2             0x4000              16384\n"
                               "R3             0x0                 0\n";
  CHECK(coredump_parse(ran_on, &ci) == 0 && ci.lanes_read == 0 && ci.address_unknown &&
            strstr(ci.address_unknown, "wrote over a register its address is made of"),
        "overwritten, lanes ran on: %s", ci.address_unknown);
  coredump_free(&ci);
  char other[sizeof ran_on + 8];
  snprintf(other, sizeof other, "%s", ran_on);
  char *r3 = strstr(other, "LDG.E R3,");
  if (r3) r3[7] = '8'; /* LDG.E R8,desc[UR4][R2.64] */
  CHECK(coredump_parse(other, &ci) == 0 && ci.lanes_read == 0 && ci.address_unknown &&
            strstr(ci.address_unknown, "(lane 0 is 48 bytes from it)"),
        "lanes ran on: %s", ci.address_unknown);
  coredump_free(&ci);

  /* "CUDA focus unchanged." without a focus line: whose registers follow is not known, and they are no lane's,
   * nor the focus lane's */
  CHECK(coredump_parse("CUDA Exception: Warp Illegal Address\n"
                       "*> 0x1000 <k+16>:\tSTG.E desc[UR4][R2.64],R5\n"
                       "CUDA focus unchanged.\n"
                       "pc             0x1010      0x1010 <k+32>\n"
                       "R2             0x10                16\n",
                       &ci) == 0);
  CHECK(!ci.have_pc && ci.nregs == 0 && ci.lanes_read == 0, "registers of no known lane were kept");
  coredump_free(&ci);
  free(oob);
  free(mis);
}

/* A synthetic dump of n tables (type SHT_LOUSER + t[i].type, entries, entsize) at path, in the simulated
 * driver's file shape. */
struct fake_table {
  unsigned type;
  unsigned entries, entsize;
};
static int write_dump(const char *path, const struct fake_table *t, int n, int extended) {
  static struct fc_dump_table tables[4096];
  if (n > 4096) return -1;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  for (int i = 0; i < n; i++)
    tables[i] =
        (struct fc_dump_table){SHT_LOUSER + t[i].type, (unsigned long long)t[i].entries * t[i].entsize, t[i].entsize};
  int rc = fc_dumpfile_write(fd, NULL, 0, tables, n, extended);
  return close(fd) || rc ? -1 : 0;
}

/* The dump's own tables: a dump written after the faulting kernel had finished (as the H200 wrote one for every
 * out-of-bounds store: empty grid and CTA tables, no warp table) says why no thread or address can come from it;
 * a dump with warps leaves the debugger's answer alone; files that are not dumps are refused, not misread. */
static void test_census(const char *recorded_crash) {
  char dir[] = "/tmp/culprit-census-XXXXXX", path[256], other[256];
  struct coredump_census cs;
  struct coredump_info ci;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/gpucore-h-1.nvcudmp", dir);
  /* devices, contexts, the SM table, then per SM an empty CTA table (132 SMs) and the empty grid table */
  struct fake_table finished[140] = {{9, 1, 88}, {10, 1, 40}, {12, 0, 136}, {11, 132, 48}};
  for (int i = 4; i < 136; i++) finished[i] = (struct fake_table){13, 0, 56};
  CHECK(write_dump(path, finished, 136, 0) == 0);
  CHECK(coredump_census(path, &cs) == 0, "census: %s", strerror(errno));
  CHECK(cs.devices == 1 && cs.grids == 0 && cs.blocks == 0 && cs.warps == 0 && cs.lanes == 0, "%ld %ld %ld %ld",
        cs.devices, cs.grids, cs.blocks, cs.warps);
  CHECK(coredump_parse(recorded_crash, &ci) == 0 && ci.warps_in_dump == -1);
  coredump_note_census(&ci, &cs);
  CHECK(ci.warps_in_dump == 0 && ci.address_unknown && strstr(ci.address_unknown, "no warp of any kernel") &&
            strstr(ci.address_unknown, "faulting store"),
        "why: %s", ci.address_unknown);
  struct json *o = coredump_json(&ci, path);
  CHECK(o && json_get_int(o, "warps_in_dump", -1) == 0 && json_get_str(o, "address_unknown") &&
        json_is(json_get(o, "debugger_crashed"), JSON_BOOL));
  json_free(o);
  coredump_free(&ci);

  /* more sections than one read of the headers takes (a busy GPU's dump has one per lane's registers) */
  static struct fake_table many[3000];
  many[0] = (struct fake_table){9, 1, 88};
  for (int i = 1; i < 3000; i++) many[i] = (struct fake_table){i % 2 ? 14 : 15, 1, 40};
  CHECK(write_dump(path, many, 3000, 1) == 0 && coredump_census(path, &cs) == 0);
  CHECK(cs.devices == 1 && cs.warps == 1500 && cs.lanes == 1499, "%ld warps %ld lanes", cs.warps, cs.lanes);

  /* the grid still resident but its warps gone; extended section numbering */
  struct fake_table resident[] = {{9, 2, 88}, {12, 1, 136}, {13, 0, 56}};
  CHECK(write_dump(path, resident, 3, 1) == 0 && coredump_census(path, &cs) == 0);
  CHECK(cs.devices == 2 && cs.grids == 1 && cs.warps == 0);
  CHECK(coredump_parse(recorded_crash, &ci) == 0);
  coredump_note_census(&ci, &cs);
  CHECK(ci.address_unknown && strstr(ci.address_unknown, "the faulting warps had exited"), "why: %s",
        ci.address_unknown);
  coredump_free(&ci);

  /* warps, but the debugger found none of them faulting (no focus, as on the H200 for streams4's store) */
  struct fake_table live[] = {{9, 1, 88}, {12, 1, 136}, {13, 1, 56}, {14, 2, 40}, {15, 64, 48}};
  CHECK(write_dump(path, live, 5, 0) == 0 && coredump_census(path, &cs) == 0);
  CHECK(cs.blocks == 1 && cs.warps == 2 && cs.lanes == 64);
  CHECK(coredump_parse(recorded_crash, &ci) == 0);
  coredump_note_census(&ci, &cs);
  CHECK(ci.warps_in_dump == 2 && ci.address_unknown &&
            strstr(ci.address_unknown, "the dump holds 2 warps, none of them the faulting one"),
        "why: %s", ci.address_unknown);
  coredump_free(&ci);
  /* the faulting warp found (a focus): what the debugger said stands (here: no instruction shown) */
  CHECK(coredump_parse(focused, &ci) == 0);
  coredump_note_census(&ci, &cs);
  CHECK(ci.warps_in_dump == 2 && ci.address_unknown &&
            strstr(ci.address_unknown, "the debugger did not show the instruction at the error PC"),
        "why: %s", ci.address_unknown);
  coredump_free(&ci);
  /* an assert has no faulting access to explain */
  CHECK(coredump_parse(recorded_assert, &ci) == 0);
  coredump_note_census(&ci, &cs);
  CHECK(!ci.address_unknown, "why: %s", ci.address_unknown);
  coredump_free(&ci);

  /* not a dump: text, an ELF file without a device table, one cut short, a link, a FIFO, nothing */
  FILE *f = fopen(path, "w");
  CHECK(f && fputs("Opening GPU coredump\n", f) >= 0 && fclose(f) == 0);
  CHECK(coredump_census(path, &cs) == -1 && errno == ENOEXEC, "text: %s", strerror(errno));
  struct fake_table nodev[] = {{12, 1, 136}};
  CHECK(write_dump(path, nodev, 1, 0) == 0 && coredump_census(path, &cs) == -1 && errno == ENOEXEC);
  CHECK(write_dump(path, live, 5, 0) == 0 && truncate(path, 64 + 100) == 0);
  CHECK(coredump_census(path, &cs) == -1 && errno == ENOEXEC, "cut short: %s", strerror(errno));
  snprintf(other, sizeof other, "%s/link.nvcudmp", dir);
  CHECK(write_dump(path, live, 5, 0) == 0 && symlink(path, other) == 0);
  CHECK(coredump_census(other, &cs) == -1 && errno == ELOOP, "a link is not followed: %s", strerror(errno));
  unlink(other);
  CHECK(mkfifo(other, 0600) == 0);
  CHECK(coredump_census(other, &cs) == -1 && errno == ENOEXEC, "a FIFO is refused without waiting: %s",
        strerror(errno));
  unlink(other);
  unlink(path);
  CHECK(coredump_census(path, &cs) == -1 && errno == ENOENT);
  rmdir(dir);
}

static struct json *report_with(const char *cands) {
  char text[4096];
  struct json *doc = NULL;
  snprintf(text, sizeof text,
           "{\"kind\": \"fault\", \"process\": {\"pid\": 588}, \"verdict\": {\"certainty\": \"candidates\", "
           "\"reason\": \"one of 2 launches\"}, \"culprit\": null, \"candidates\": [%s]}",
           cands);
  return json_parse(text, strlen(text), &doc, NULL) == 0 ? doc : NULL;
}

int main(int argc, char **argv) {
  struct coredump_info ci;
  test_faulting_access();
  test_lanes(argc > 1 ? argv[1] : "tests/unit/fixtures");
  CHECK(coredump_parse(recorded, &ci) == 0);
  CHECK(ci.exception && !strcmp(ci.exception, "Warp Illegal Address"));
  CHECK(ci.pc && !strcmp(ci.pc, "0x7f2af77a0ae0"));
  CHECK(ci.kernel && !strcmp(ci.kernel, "write_oob(int*, int)"), "kernel %s", ci.kernel);
  CHECK(ci.file && !strcmp(ci.file, "oob.cu") && ci.line == 8);
  CHECK(ci.debugger_crashed && ci.block[0] == -1 && ci.warp == -1);
  CHECK(ci.debugger_error && !strcmp(ci.debugger_error, "std::out_of_range: vector::_M_range_check: __n (which is "
                                                        "4294967294) >= this->size() (which is 64)"),
        "what the debugger said of its death: %s", ci.debugger_error);
  test_census(recorded);

  /* Two candidates, one runs write_oob: it becomes the culprit and the line inside the kernel is kept. */
  struct json *doc = report_with(
      "{\"seq\": 5, \"kernel\": \"fill(float*, int)\", \"mangled\": \"_Z4fillPfi\", \"grid\": [16,1,1]},"
      "{\"seq\": 6, \"kernel\": \"write_oob(int*, int)\", \"mangled\": \"_Z9write_oobPii\", \"grid\": [8,1,1]}");
  int changed = 0;
  CHECK(doc && coredump_attach(doc, &ci, "/r/gpucore-vm-588.nvcudmp", &changed) == 0 && changed);
  const struct json *v = json_get(doc, "verdict");
  CHECK(!strcmp(json_get_str(v, "certainty"), "exact"));
  CHECK(json_get_int(json_get(doc, "culprit"), "seq", -1) == 6);
  CHECK(strstr(json_get_str(v, "reason"), "the GPU core dump says write_oob(int*, int) faulted at oob.cu:8") != NULL,
        "reason: %s", json_get_str(v, "reason"));
  CHECK(json_get_int(json_get(doc, "coredump"), "source_line", -1) == 8);
  CHECK(json_len(json_get(doc, "candidates_before_coredump")) == 1);
  json_free(doc);

  /* Both candidates run it: the dump does not single one out, the verdict stays and says why. */
  doc = report_with("{\"seq\": 5, \"kernel\": \"write_oob(int*, int)\", \"grid\": [16,1,1]},"
                    "{\"seq\": 6, \"kernel\": \"write_oob(int*, int)\", \"grid\": [8,1,1]}");
  CHECK(doc && coredump_attach(doc, &ci, "d", &changed) == 0);
  v = json_get(doc, "verdict");
  CHECK(!strcmp(json_get_str(v, "certainty"), "candidates"));
  CHECK(strstr(json_get_str(v, "reason"), "which more than one candidate runs") != NULL);
  json_free(doc);
  coredump_free(&ci);

  /* The focus line: block 81 fits only the first grid of two index_kernel launches. */
  CHECK(coredump_parse(focused, &ci) == 0);
  CHECK(ci.block[0] == 81 && ci.thread[0] == 44 && ci.sm == 7 && ci.warp == 1 && ci.lane == 12 && ci.device == 0);
  CHECK(!ci.debugger_crashed && ci.file && !strcmp(ci.file, "/src/Index.cu") && ci.line == 42);
  doc = report_with("{\"seq\": 11, \"kernel\": \"void at::native::index_kernel(long*, int)\", \"grid\": [96,1,1]},"
                    "{\"seq\": 12, \"kernel\": \"void at::native::index_kernel(long*, int)\", \"grid\": [8,1,1]}");
  CHECK(doc && coredump_attach(doc, &ci, "d", &changed) == 0);
  CHECK(json_get_int(json_get(doc, "culprit"), "seq", -1) == 11);
  json_free(doc);

  /* An exact verdict is kept; the reason says whether the dump agrees. */
  char text[] = "{\"kind\": \"fault\", \"verdict\": {\"certainty\": \"exact\", \"reason\": \"r\"}, \"culprit\": "
                "{\"seq\": 3, \"kernel\": \"step(float*, int)\", \"grid\": [4,1,1]}, \"candidates\": []}";
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0 && coredump_attach(doc, &ci, "d", &changed) == 0);
  CHECK(strstr(json_get_str(json_get(doc, "verdict"), "reason"), "names another kernel") != NULL);
  CHECK(json_get_int(json_get(doc, "culprit"), "seq", -1) == 3);
  json_free(doc);
  coredump_free(&ci);

  /* The assert: its launch is the one with the backtrace's grid and block (16 x 256), not the other
   * histogram_checked launch (8 x 256), although both grids hold block 3. */
  CHECK(coredump_parse(recorded_assert, &ci) == 0);
  CHECK(ci.exception && !strcmp(ci.exception, "Assertion failed"));
  CHECK(ci.kernel && !strcmp(ci.kernel, "histogram_checked"));
  CHECK(ci.line == 27 && ci.block[0] == 3 && ci.thread[0] == 232 && ci.grid[0] == 16 && ci.block_dim[0] == 256);
  doc =
      report_with("{\"seq\": 4, \"kernel\": \"histogram_checked(int const*, unsigned int*, int)\", \"grid\": [8,1,1], "
                  "\"block\": [256,1,1]},"
                  "{\"seq\": 6, \"kernel\": \"histogram_checked(int const*, unsigned int*, int)\", \"grid\": [16,1,1], "
                  "\"block\": [256,1,1]}");
  CHECK(doc && coredump_attach(doc, &ci, "d", &changed) == 0);
  CHECK(json_get_int(json_get(doc, "culprit"), "seq", -1) == 6);
  json_free(doc);
  coredump_free(&ci);
  CHECK(coredump_parse(recorded_trap, &ci) == 0);
  CHECK(ci.exception && !strcmp(ci.exception, "SIGTRAP (Trace/breakpoint trap)"), "%s", ci.exception);
  CHECK(ci.kernel && !strcmp(ci.kernel, "check_weights") && ci.line == 16 && ci.grid[0] == 8);
  coredump_free(&ci);

  CHECK(coredump_parse("Opening GPU coredump: x\nno such file\n", &ci) == -1);
  coredump_free(&ci);
  return CHECK_DONE();
}
