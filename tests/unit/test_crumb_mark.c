/* The launch number a breadcrumb slot holds (crumb_slot_value, src/core/crumb.h): the 64-bit word as it is for
 * CULPRIT_MARK=write; for memset, whose mark is the low 32 bits, the number at or below the last launch with those
 * bits, across the 2^32 boundary. */
#include <stdint.h>

#include "check.h"
#include "core/crumb.h"

int crumb_mark32; /* crumb.c's, set by CULPRIT_MARK; this test sets it itself */

int main(void) {
  const uint64_t G = (uint64_t)1 << 32;
  volatile uint64_t slot;

  crumb_mark32 = 0;
  slot = 5 * G + 7;
  CHECK(crumb_slot_value(&slot, 6 * G) == 5 * G + 7, "write: the word as it is");

  crumb_mark32 = 1;
  slot = 7;
  CHECK(crumb_slot_value(&slot, 10) == 7);
  CHECK(crumb_slot_value(&slot, 7) == 7, "the last launch itself completed");
  slot = G - 3; /* launch 2^32 - 3 wrote its low bits */
  CHECK(crumb_slot_value(&slot, G + 5) == G - 3, "across the boundary: %llu",
        (unsigned long long)crumb_slot_value(&slot, G + 5));
  slot = 3; /* launch 2^32 + 3 */
  CHECK(crumb_slot_value(&slot, G + 5) == G + 3);
  slot = 12345;
  CHECK(crumb_slot_value(&slot, 7 * G + 20000) == 7 * G + 12345);
  CHECK(crumb_slot_value(&slot, 7 * G + 100) == 6 * G + 12345, "a mark above the low bits of ref is from before");
  slot = 0;
  CHECK(crumb_slot_value(&slot, 3 * G + 9) == 0, "nothing written yet");
  return CHECK_DONE();
}
