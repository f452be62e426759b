/* Unit test of the memory operand decoder (src/evidence/sass.c): access kind, space and size from the opcode, the
 * address from the operand and the registers, over instruction forms cuda-gdb prints for Hopper; what is not a
 * memory access, or an operand the decoder does not know, is said to be none, never guessed. */
#include "../../src/evidence/sass.h"
#include "check.h"

#include <string.h>

struct reg {
  const char *name;
  uint64_t value;
};

static int lookup(void *arg, const char *name, uint64_t *value) {
  for (const struct reg *r = arg; r->name; r++)
    if (!strcmp(r->name, name)) {
      *value = r->value;
      return 0;
    }
  return -1;
}

static void expect(const char *insn, enum sass_kind kind, enum sass_space space, unsigned size, uint64_t addr) {
  static const struct reg regs[] = {{"R2", 0x71e00000}, {"R3", 0x7fcb}, {"R4", 0x100},    {"UR4", 0x40}, {"UR5", 0x1},
                                    {"R6", 0xfffffff0}, {"R7", 0x7f00}, {"R1", 0xfffc60}, {NULL, 0}};
  struct sass_access a;
  uint64_t got = 0;
  CHECK(sass_parse(insn, &a) == 0, "%s: not read as an access", insn);
  CHECK(a.kind == kind && a.space == space && a.size == size, "%s: %s %s %u", insn, sass_kind_name(a.kind),
        sass_space_name(a.space), a.size);
  CHECK(sass_address(&a, lookup, (void *)regs, &got) == 0 && got == addr, "%s: address %llx, wanted %llx", insn,
        (unsigned long long)got, (unsigned long long)addr);
}

int main(void) {
  expect("STG.E desc[UR4][R2.64+0x2],R5", SASS_STORE, SASS_GLOBAL, 4, 0x7fcb71e00002ull);
  expect("STG.E desc[UR8][R2.64],R5", SASS_STORE, SASS_GLOBAL, 4, 0x7fcb71e00000ull);
  expect("@P0 LDG.E.64.CONSTANT R4, desc[UR6][R2.64+0x10]", SASS_LOAD, SASS_GLOBAL, 8, 0x7fcb71e00010ull);
  expect("LDG.E.128 R8, desc[UR6][R6.64-0x20]", SASS_LOAD, SASS_GLOBAL, 16, 0x7f00ffffffd0ull);
  expect("LDG.E.U8 R0, desc[UR6][R2.64+UR4]", SASS_LOAD, SASS_GLOBAL, 1, 0x7fcb71e00040ull);
  expect("LDG.E.S16 R0, desc[UR6][R2.64+UR4.64]", SASS_LOAD, SASS_GLOBAL, 2, 0x7fcc71e00040ull);
  expect("ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, R0, desc[UR6][R2.64], R5", SASS_ATOMIC, SASS_GLOBAL, 4,
         0x7fcb71e00000ull);
  expect("RED.E.ADD.STRONG.GPU desc[UR6][R2.64+0x8], R5", SASS_ATOMIC, SASS_GLOBAL, 4, 0x7fcb71e00008ull);
  expect("STS [R4+0x10], R5", SASS_STORE, SASS_SHARED, 4, 0x110);
  expect("LDS.U16 R0, [R4]", SASS_LOAD, SASS_SHARED, 2, 0x100);
  expect("STL.64 [R1+0x8], R4", SASS_STORE, SASS_LOCAL, 8, 0xfffc68);
  expect("LD.E R0, [R2.64]", SASS_LOAD, SASS_GENERIC, 4, 0x7fcb71e00000ull);
  expect("STG.E [RZ+0x40], R5", SASS_STORE, SASS_GLOBAL, 4, 0x40);
  /* immediates add as the GPU's 64-bit addresses do, modulo 2^64, even where no signed value holds them */
  expect("STG.E desc[UR4][R2.64-0x8000000000000000],R5", SASS_STORE, SASS_GLOBAL, 4, 0x80007fcb71e00000ull);
  expect("STG.E desc[UR4][R2.64+0x7fffffffffffffff+0x7fffffffffffffff+0x2],R5", SASS_STORE, SASS_GLOBAL, 4,
         0x7fcb71e00000ull);

  /* a load into its own address register (recorded on the H200: a misaligned LDG whose destination R5 is the
   * high half of its address R4:R5): the registers no longer give the address */
  struct sass_access a;
  uint64_t got;
  static const struct reg regs[] = {{"R4", 0x3fe00006}, {"R5", 0x7060504}, {NULL, 0}};
  CHECK(sass_parse("LDG.E R5,desc[UR4][R4.64]", &a) == 0 && !strcmp(a.dest, "R5") && a.ndest == 1 &&
            sass_address(&a, lookup, (void *)regs, &got) == -2,
        "a load that overwrote its address register");
  /* its low half, R4, is intact: the low 32 bits still say the access was misaligned */
  uint32_t low = 0;
  CHECK(sass_parse("LDG.E R5,desc[UR4][R4.64+0x2]", &a) == 0 &&
            sass_address_low32(&a, lookup, (void *)regs, &low) == 0 && low == 0x3fe00008u,
        "the low half of a load that overwrote the high one: %x", low);
  CHECK(sass_parse("LDG.E.64 R4, desc[UR4][R4.64]", &a) == 0 &&
            sass_address_low32(&a, lookup, (void *)regs, &low) == -2,
        "a load over the low half too: nothing");
  CHECK(sass_parse("LDG.E.64 R2, desc[UR4][R4.64]", &a) == 0 && a.ndest == 2 &&
            sass_address(&a, lookup, (void *)regs, &got) == 0 && got == 0x070605043fe00006ull,
        "a 64-bit load into R2:R3 leaves R4:R5 alone");
  CHECK(sass_parse("LDG.E.64 R4, desc[UR4][R4.64]", &a) == 0 && sass_address(&a, lookup, (void *)regs, &got) == -2,
        "a 64-bit load into its own address pair");
  CHECK(sass_parse("STG.E desc[UR4][R4.64],R5", &a) == 0 && !a.dest[0] &&
            sass_address(&a, lookup, (void *)regs, &got) == 0 && got == 0x070605043fe00006ull,
        "a store reads R5, it does not write it");
  /* tests/gpu/oob.cu on the H200: lane 27's registers give the wild address, lane 0's its own in the buffer; the
   * load wrote R0, not its address R6:R7 */
  static const struct reg lane27[] = {{"R0", 0}, {"R6", 0x7fe05ec0}, {"R7", 0x835b}, {NULL, 0}};
  static const struct reg lane0[] = {{"R0", 0}, {"R6", 0x7fe0580c}, {"R7", 0x7f5b}, {NULL, 0}};
  CHECK(sass_parse("LDG.E R0,desc[UR4][R6.64]", &a) == 0 && !strcmp(a.dest, "R0") && !strcmp(a.base, "R6") && a.wide &&
            !a.uniform[0] && sass_address(&a, lookup, (void *)lane27, &got) == 0 && got == 0x835b7fe05ec0ull,
        "lane 27's wild load");
  CHECK(sass_address(&a, lookup, (void *)lane0, &got) == 0 && got == 0x7f5b7fe0580cull, "lane 0's load");
  CHECK(sass_parse("FFMA R0, R1, R2, R3", &a) == -1 && a.kind == SASS_NONE, "an arithmetic instruction");
  CHECK(sass_parse("ISETP.GE.AND P0, PT, R5, UR4, PT", &a) == -1, "a comparison");
  CHECK(sass_parse("LDC.64 R2, c[0x0][0x210]", &a) == -1, "a constant-bank load is not a memory access here");
  CHECK(sass_parse("STG.E desc[UR4][R2.64+something],R5", &a) == -1 && a.kind == SASS_NONE, "an unknown operand");
  CHECK(sass_parse("", &a) == -1 && sass_parse(NULL, &a) == -1, "nothing");
  static const struct reg none[] = {{NULL, 0}};
  CHECK(sass_parse("STG.E desc[UR4][R2.64],R5", &a) == 0 && sass_address(&a, lookup, (void *)none, &got) == -1,
        "a register the dump lacks gives no address");
  return CHECK_DONE();
}
