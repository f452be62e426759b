/* Unit test: the text of hang reports (render.c's "kind": "hang" branch): what stopped the process, the launch in
 * flight with its launch site, what is queued behind it, each stream, each thread where it waits; the window and
 * the precise rerun in record mode; idle; a timeout; the one-line form. */
#include "../../src/render/render.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

#define FRAME_USER(fn, line)                                                                                           \
  "{\"pc\":\"0x401000\",\"module\":\"/x/app\",\"offset\":\"0x1000\",\"function\":\"" fn "\","                          \
  "\"file\":\"/x/app.c\",\"line\":" #line "}"
#define FRAME_LIB(fn, mod) "{\"pc\":\"0x7f00\",\"module\":\"/lib/" mod "\",\"offset\":\"0x10\",\"function\":\"" fn "\"}"
#define LAUNCH(seq)                                                                                                    \
  "{\"seq\":" #seq ",\"api\":\"cuLaunchKernel\",\"kind\":\"kernel\",\"kernel\":\"step(float*, int)\","                 \
  "\"grid\":[4,1,1],\"block\":[64,1,1],\"shared_mem\":0,\"stream\":\"0x0\",\"stream_kind\":\"legacy\","                \
  "\"device\":0,\"thread\":42,\"stack\":[" FRAME_USER("launch_steps", 74) "]}"

static const char exact[] =
    "{\"schema\":\"culprit.report/1\",\"kind\":\"hang\",\"process\":{\"pid\":42,\"argv\":[\"./app\",\"20\"]},"
    "\"config\":{\"mode\":\"precise\"},"
    "\"hang\":{\"trigger\":\"SIGTERM\",\"signal\":15,\"sender_pid\":7,\"stalled_ms\":2500},"
    "\"verdict\":{\"certainty\":\"exact\",\"reason\":\"stream 0x0 completed launch #17\","
    "\"window\":{\"first\":18,\"last\":18}},"
    "\"culprit\":" LAUNCH(18) ",\"candidates\":[],\"queued\":[" LAUNCH(19) "," LAUNCH(
        20) "],"
            "\"streams\":[{\"stream\":\"0x0\",\"kind\":\"legacy\",\"device\":0,\"launches\":20,\"last_completed\":"
            "17,"
            "\"pending\":true,\"in_flight\":18,\"queued\":2},"
            "{\"stream\":\"0x5\",\"kind\":\"created\",\"device\":0,\"launches\":2,\"last_completed\":2,\"pending\":"
            "false}],"
            "\"threads\":[{\"tid\":42,\"name\":\"app\",\"state\":\"S\",\"signal_handler\":true,\"stack\":"
            "[" FRAME_LIB("nanosleep", "libc.so.6") "," FRAME_LIB("cuCtxSynchronize", "libcuda.so.1") "," FRAME_LIB(
                "cuCtxSynchronize",
                "libculprit.so") "," FRAME_USER("main", 90) "]},"
                                                            "{\"tid\":43,\"name\":\"worker\",\"state\":\"D\","
                                                            "\"stack_note\":\"the thread blocks the signal\"}]}";

static const char window[] =
    "{\"kind\":\"hang\",\"process\":{\"pid\":42,\"argv\":[\"./app\",\"20\"]},\"config\":{\"mode\":\"record\"},"
    "\"hang\":{\"trigger\":\"timeout\",\"timeout_s\":2,\"stalled_ms\":2125},"
    "\"verdict\":{\"certainty\":\"candidates\",\"reason\":\"one of them\",\"window\":{\"first\":17,\"last\":18}},"
    "\"culprit\":null,\"candidates\":[" LAUNCH(17) "," LAUNCH(
        18) "],\"queued\":[],"
            "\"streams\":[{\"stream\":\"0x0\",\"kind\":\"legacy\",\"device\":0,\"launches\":18,\"last_completed\":16,"
            "\"pending\":true,\"in_flight_window\":{\"first\":17,\"last\":18},\"queued\":0}],"
            "\"threads\":[{\"tid\":42,\"name\":\"app\",\"state\":\"S\",\"stack\":[" FRAME_USER(
                "main", 90) "],"
                            "\"python\":[{\"file\":\"/x/train.py\",\"function\":\"step\",\"line\":12}]}]}";

static const char idle[] =
    "{\"kind\":\"hang\",\"process\":{\"pid\":42},\"hang\":{\"trigger\":\"SIGUSR1\",\"signal\":10,\"stalled_ms\":10},"
    "\"verdict\":{\"certainty\":\"idle\",\"reason\":\"no recorded launch was unfinished\"},"
    "\"culprit\":null,\"candidates\":[],\"queued\":[],\"streams\":[],\"threads\":[]}";

static char *render(const char *doc, int brief) {
  struct render_opts o = {.brief = brief, .path = "r/culprit-42-hang.json"};
  char *t = render_text_opts(doc, strlen(doc), &o, NULL, 0);
  CHECK(t != NULL, "render failed: %s", render_error());
  return t ? t : calloc(1, 1);
}

static void has(const char *text, const char *want) {
  CHECK(strstr(text, want) != NULL, "missing %s in\n%s", want, text);
}

int main(void) {
  char *t = render(exact, 0);
  has(t, "culprit: hang report: SIGTERM (sent by pid 7) stopped the process; no progress for 2.5 s\n");
  has(t, "culprit: the launch in flight: step(float*, int)\n");
  has(t, "culprit:   launch #18 via cuLaunchKernel\n");
  has(t, "culprit:   how culprit knows: stream 0x0 completed launch #17\n");
  has(t, "culprit:     #0 launch_steps at /x/app.c:74\n");
  has(t, "culprit: queued behind it on stream 0x0 (oldest first):\n");
  has(t, "culprit:   #19..#20 step(float*, int)  grid [4,1,1] block [64,1,1]\n");
  has(t, "culprit:     #18 in flight, 2 queued behind it (its breadcrumb shows #17 completed)\n");
  has(t, "culprit:   stream 0x5 (created stream), device 0, 2 launches: all its work completed\n");
  has(t, "culprit:   thread 42 \"app\" (the main thread), where the signal found it:\n");
  /* the driver's entry point, not culprit's wrapper of it */
  has(t, "culprit:     waits in cuCtxSynchronize (libcuda.so.1), at nanosleep (libc.so.6)\n");
  has(t, "culprit:     #3 main at /x/app.c:90\n");
  has(t, "culprit:   thread 43 \"worker\", waiting uninterruptibly:\n");
  has(t, "culprit:     the thread blocks the signal\n");
  has(t, "culprit: report: r/culprit-42-hang.json\n");
  CHECK(!strstr(t, "precise"), "no rerun is offered in precise mode");
  free(t);

  t = render(exact, 1);
  CHECK(!strcmp(t, "culprit: hang report (SIGTERM): launch #18 step(float*, int) was in flight; report: "
                   "r/culprit-42-hang.json\n"),
        "%s", t);
  free(t);

  t = render(window, 0);
  has(t, "culprit: hang report: no progress for 2.1 s with work unfinished (--hang-timeout 2)");
  has(t, "culprit: culprit could not tell which of these 2 launches is the one in flight:\n");
  has(t, "culprit:   #17..#18 step(float*, int)");
  has(t, "culprit:   why: one of them\n");
  has(t, "culprit:   culprit run --mode precise -- ./app 20\n");
  has(t, "culprit:     one of #17..#18 in flight, nothing queued behind them (its breadcrumb shows #16 completed)\n");
  has(t, "culprit:     /x/train.py:12 in step\n");
  free(t);
  t = render(window, 1);
  has(t, "culprit: hang report (no progress for 2.1 s): one of 2 launches (#17..#18) was in flight");
  free(t);

  t = render(idle, 0);
  has(t, "culprit: hang report: SIGUSR1 asked for it, and the process carries on\n");
  has(t, "culprit: no launch was in flight: no recorded launch was unfinished\n");
  CHECK(!strstr(t, "no progress for"), "under a second of stall is not worth saying");
  free(t);
  t = render(idle, 1);
  has(t, "culprit: hang report (SIGUSR1): no launch was in flight; report: r/culprit-42-hang.json\n");
  free(t);
  return CHECK_DONE();
}
