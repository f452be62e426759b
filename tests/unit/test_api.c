/* Unit test: include/culprit.h. Without the library every call says CULPRIT_ENOTLOADED and changes nothing;
 * with it preloaded (argv[1] == "loaded") push/pop nest, restore the previous mode and refuse bad input. */
#include "culprit.h"
#include "check.h"

#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "loaded")) {
    CHECK(culprit_loaded());
    CHECK(culprit_mode() == CULPRIT_RECORD);
    CHECK(culprit_push(CULPRIT_BLOCKING, "*softmax*") == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_BLOCKING);
    CHECK(culprit_push(CULPRIT_OFF, NULL) == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_OFF);
    CHECK(culprit_pop() == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_BLOCKING);
    CHECK(culprit_pop() == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_RECORD);
    CHECK(culprit_pop() == CULPRIT_ESTACK);
    CHECK(culprit_push((enum culprit_mode)7, NULL) == CULPRIT_EINVAL);
    CHECK(culprit_push_window(CULPRIT_BLOCKING, NULL, 5, 4) == CULPRIT_EINVAL);
    int pushed = 0;
    while (culprit_push(CULPRIT_RECORD, NULL) == CULPRIT_OK) pushed++;
    CHECK(pushed == 64);
    while (pushed--) CHECK(culprit_pop() == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_RECORD);
    CHECK(culprit_last_report() == NULL);
    /* Many scopes over a long run: the frames behind the stack are recycled, never while pushed. */
    CHECK(culprit_push(CULPRIT_BLOCKING, "*outer*") == CULPRIT_OK);
    for (int i = 0; i < 1000; i++) {
      CHECK(culprit_push(CULPRIT_OFF, NULL) == CULPRIT_OK);
      CHECK(culprit_pop() == CULPRIT_OK);
    }
    CHECK(culprit_mode() == CULPRIT_BLOCKING);
    CHECK(culprit_pop() == CULPRIT_OK);
    CHECK(culprit_mode() == CULPRIT_RECORD);
    CHECK(culprit_push(CULPRIT_PRECISE, NULL) == CULPRIT_OK && culprit_mode() == CULPRIT_PRECISE);
    CHECK(culprit_pop() == CULPRIT_OK);
  } else if (argc > 1 && !strcmp(argv[1], "disabled")) {
    CHECK(!culprit_loaded());
    CHECK(culprit_mode() == CULPRIT_EDISABLED);
    CHECK(culprit_push(CULPRIT_BLOCKING, NULL) == CULPRIT_EDISABLED);
  } else {
    CHECK(!culprit_loaded());
    CHECK(culprit_mode() == CULPRIT_ENOTLOADED);
    CHECK(culprit_push(CULPRIT_BLOCKING, NULL) == CULPRIT_ENOTLOADED);
    CHECK(culprit_pop() == CULPRIT_ENOTLOADED);
    CHECK(culprit_last_report() == NULL);
  }
  return CHECK_DONE();
}
