/* Unit test of the kernel's log of GPU faults (src/evidence/kernlog.c): the Xid lines the H200's driver wrote, in the
 * three shapes a log comes in (a /dev/kmsg record, dmesg, a syslog file), and older drivers' words; lines that are
 * no Xid or whose address is no page; and which report a line is tied to (its pid, else its name alone, never
 * another host's report, never one of several of the same name), read from a file as `culprit run` reads it. */
#include "../../src/evidence/kernlog.h"
#include "../../src/render/json.h"
#include "check.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The H200's lines (driver 580.159.04), as /dev/kmsg gave them after tests/gpu/oob.cu and threads8.cu. */
static const char oob[] = "3,812,30597899,-;NVRM: Xid (PCI:0000:00:06): 31, pid=504, name=gpu_oob_static, channel "
                          "0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ "
                          "0x83ae_8fe05000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n SUBSYSTEM=pci\n";
static const char threads8[] = "[   31.793543] NVRM: Xid (PCI:0000:00:06): 31, pid=519, name=gpu_threads8_st, channel "
                               "0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 GPCCLIENT_T1_8 faulted @ "
                               "0x8338_ec80a000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE";
/* with the GPU core dump on */
static const char garbled[] = "NVRM: Xid (PCI:0000:00:06): 31, pid=2720, name=gpu_threads8_st, channel 0x0000000a, "
                              "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC1 UNRECOGNIZED_CLIENT faulted @ "
                              "0x1827d7_000984dc. Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE";

static void parse_tests(void) {
  struct kernlog_xid x;
  CHECK(kernlog_parse(oob, strlen(oob), &x) == 1);
  CHECK(x.xid == 31 && x.pid == 504 && !strcmp(x.name, "gpu_oob_static") && x.has_address &&
            x.address == 0x83ae8fe05000ull && !strcmp(x.access, "read") && !strcmp(x.fault_type, "FAULT_PDE"),
        "%d %lld %s %llx %s %s", x.xid, x.pid, x.name, (unsigned long long)x.address, x.access, x.fault_type);
  CHECK(strncmp(x.line, "NVRM: Xid", 9) == 0 && !strchr(x.line, '\n') && strstr(x.line, "VIRT_READ"),
        "the message alone, without the record's prefix or its dictionary: %s", x.line);
  CHECK(kernlog_parse(threads8, strlen(threads8), &x) == 1 && x.pid == 519 && !strcmp(x.name, "gpu_threads8_st") &&
            x.address == 0x8338ec80a000ull && !strcmp(x.access, "write"),
        "dmesg's shape");
  static const char syslog[] = "Dec  3 20:22:30 node7 kernel: [   30.59] NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, "
                               "name=python, Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_3 "
                               "faulted @ 0x7f12_34560000. Fault is of type FAULT_PTE ACCESS_TYPE_ATOMIC";
  CHECK(kernlog_parse(syslog, strlen(syslog), &x) == 1 && x.pid == 1234 && !strcmp(x.name, "python") &&
            x.address == 0x7f1234560000ull && !strcmp(x.access, "atomic") && !strcmp(x.fault_type, "FAULT_PTE"),
        "an older driver's words in a syslog file: %s %s", x.access, x.fault_type);
  CHECK(kernlog_parse(garbled, strlen(garbled), &x) == 1 && x.pid == 2720 && !x.has_address,
        "a fault of no known type gives no page");
  static const char xid13[] = "NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0): "
                              "Misaligned Address";
  CHECK(kernlog_parse(xid13, strlen(xid13), &x) == 1 && x.xid == 13 && x.pid == -1 && !x.name[0] && !x.has_address);
  static const char unknown[] = "NVRM: Xid (PCI:0000:00:06): 43, pid='<unknown>', name=<unknown>, channel 0x0000000a";
  CHECK(kernlog_parse(unknown, strlen(unknown), &x) == 1 && x.xid == 43 && x.pid == -1 && !x.name[0]);
  static const char other[] = "NVRM: GPU at PCI:0000:00:06: GPU-c90db821-2d10-7613-4d27-0662601906eb";
  CHECK(kernlog_parse(other, strlen(other), &x) == 0, "not an Xid line");
  static const char cut[] = "NVRM: Xid (PCI:0000:00:06): ";
  CHECK(kernlog_parse(cut, strlen(cut), &x) == 0, "an Xid line cut before its number");
  static const char esc[] = "NVRM: Xid (PCI:0000:00:06): 31, pid=5, name=a\x1b[2Jb, channel 0. MMU Fault: faulted @ "
                            "0x1000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE";
  CHECK(kernlog_parse(esc, strlen(esc), &x) == 1 && !strchr(x.line, '\x1b') && x.address == 0x1000,
        "an escape in the line is not kept: %s", x.line);
}

/* A report of process pid on this host (or another), named name. */
static struct json *report(long long pid, const char *comm, const char *host, int code) {
  char me[256] = "", text[1024];
  gethostname(me, sizeof me - 1);
  snprintf(text, sizeof text,
           "{\"kind\":\"fault\",\"error\":{\"code\":%d},\"process\":{\"pid\":%lld,\"comm\":\"%s\","
           "\"exe\":\"/opt/bin/%s\",\"argv\":[\"./%s\"],\"hostname\":\"%s\"}}",
           code, pid, comm, comm, comm, host ? host : me);
  struct json *doc = NULL;
  CHECK(json_parse(text, strlen(text), &doc, NULL) == 0);
  return doc;
}

/* A log file holding text, read as a run that wrote it after it began. */
static void log_of(struct kernlog *k, const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK(write(fd,
              "before the run: NVRM: Xid (PCI:0): 31, pid=7, name=trainer, x. MMU Fault: faulted @ 0x5000. "
              "Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n",
              123) == 123);
  setenv("CULPRIT_KERNEL_LOG", path, 1);
  kernlog_begin(k);
  CHECK(k->fd >= 0 && k->is_file && !k->why[0], "%s", k->why);
  CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  kernlog_end(k);
}

static const char *attached(const struct kernlog *k, struct json *doc, const char *key) {
  int added = 0;
  CHECK(kernlog_attach(k, doc, &added) == 0);
  const struct json *g = json_get(doc, "gpu_fault_log");
  return added && g ? json_get_str(g, key) : NULL;
}

static void attach_tests(const char *dir) {
  char path[4096];
  struct kernlog k;
  snprintf(path, sizeof path, "%s/kern.log", dir);
  log_of(&k, path,
         "NVRM: Xid (PCI:0): 31, pid=7, name=trainer, x. MMU Fault: faulted @ 0x7000. Fault is of type FAULT_PDE "
         "ACCESS_TYPE_VIRT_WRITE\n"
         "NVRM: Xid (PCI:0): 31, pid=8, name=trainer, x. MMU Fault: faulted @ 0x8000. Fault is of type FAULT_PDE "
         "ACCESS_TYPE_VIRT_READ\n"
         "NVRM: Xid (PCI:0): 31, pid=9, name=loader, x. MMU Fault: faulted @ 0x9000. Fault is of type FAULT_PDE "
         "ACCESS_TYPE_VIRT_READ\n"
         "NVRM: Xid (PCI:0): 31, pid=7, name=trainer, x. MMU Fault: faulted @ 0xa000. Fault is of type FAULT_PDE "
         "ACCESS_TYPE_VIRT_READ"); /* the last line has no newline: it is read all the same */
  CHECK(k.n == 3, "the lines the run added, not the one before it, and of pid 7 its first alone: %zu", k.n);
  k.host_pids = 0; /* as in a container: the log's pids are the host's, not the reports' */
  struct json *doc = report(7, "trainer", NULL, 700);
  const char *a = attached(&k, doc, "address");
  CHECK(a && !strcmp(a, "0x7000"), "the first line of its pid: %s", a ? a : "none");
  CHECK(!strcmp(json_get_str(json_get(doc, "gpu_fault_log"), "matched"), "pid") &&
        json_get_int(json_get(doc, "gpu_fault_log"), "granule", 0) == KERNLOG_PAGE);
  json_free(doc);
  doc = report(99, "loader", NULL, 700);
  a = attached(&k, doc, "address");
  CHECK(a && !strcmp(a, "0x9000") && !strcmp(json_get_str(json_get(doc, "gpu_fault_log"), "matched"), "name"),
        "another pid namespace: the only line of its name");
  json_free(doc);
  doc = report(99, "trainer", NULL, 700);
  CHECK(attached(&k, doc, "address") == NULL &&
            strstr(json_get_str(json_get(doc, "gpu_fault_log"), "unknown"), "2 processes named trainer"),
        "several of its name, none of its pid: none chosen");
  json_free(doc);
  doc = report(7, "trainer", "another-host", 700);
  CHECK(attached(&k, doc, "address") == NULL && !json_get(doc, "gpu_fault_log"), "another host's report");
  json_free(doc);
  doc = report(12, "solver", NULL, 700);
  CHECK(attached(&k, doc, "unknown") && strstr(json_get_str(json_get(doc, "gpu_fault_log"), "unknown"),
                                               "logged no memory fault (Xid 31) of this process"));
  json_free(doc);
  k.host_pids = 1; /* in the host's pid namespace a line of another pid is another process's, whatever its name */
  doc = report(99, "loader", NULL, 700);
  CHECK(attached(&k, doc, "address") == NULL &&
            strstr(json_get_str(json_get(doc, "gpu_fault_log"), "unknown"), "logged no memory fault"),
        "no line by name alone");
  json_free(doc);
  doc = report(7, "trainer", NULL, 700);
  CHECK(attached(&k, doc, "address") != NULL, "its own pid's line all the same");
  json_free(doc);
  doc = report(12, "solver", NULL, 710);
  CHECK(attached(&k, doc, "unknown") == NULL && !json_get(doc, "gpu_fault_log"), "an assert: nothing to say");
  json_free(doc);
  /* an assert (710) or a misaligned address (716) logs no Xid 31: a line of its pid, or of its name in another pid
   * namespace, is another fault's (or another process's), never this report's */
  for (int ns = 0; ns < 2; ns++) {
    k.host_pids = ns;
    for (int code = 710; code <= 716; code += 6) {
      doc = report(ns ? 7 : 99, ns ? "trainer" : "loader", NULL, code);
      CHECK(attached(&k, doc, "address") == NULL && !json_get(doc, "gpu_fault_log"),
            "error %d (%s): no Xid 31 line tied to it", code, ns ? "by pid" : "by name");
      json_free(doc);
    }
  }
  CHECK(kernlog_code_logs_page(700) && !kernlog_code_logs_page(710) && !kernlog_code_logs_page(716) &&
        !kernlog_code_logs_page(715) && !kernlog_code_logs_page(-1));
  kernlog_free(&k);

  /* the keep limit counts the lines a report may be given: another process faulting over and over, and other
   * Xids, do not push this process's first fault out */
  {
    size_t cap = 700 * 2 * 200, used = 0;
    char *text = malloc(cap);
    CHECK(text != NULL);
    for (int i = 0; i < 2 * KERNLOG_KEEP; i++) {
      used += (size_t)snprintf(text + used, cap - used,
                               "NVRM: Xid (PCI:0): 31, pid=4000, name=busy, x. MMU Fault: faulted @ 0x%x000. Fault is "
                               "of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n",
                               i + 1);
      used += (size_t)snprintf(text + used, cap - used,
                               "NVRM: Xid (PCI:0): 13, pid=4001, name=busy, Graphics SM Warp Exception\n");
    }
    snprintf(text + used, cap - used,
             "NVRM: Xid (PCI:0): 31, pid=42, name=mine, x. MMU Fault: faulted @ 0xb000. Fault is of type FAULT_PDE "
             "ACCESS_TYPE_VIRT_WRITE\n");
    log_of(&k, path, text);
    free(text);
    CHECK(k.n == 2 && k.dropped == 0, "kept %zu, dropped %zu", k.n, k.dropped);
    doc = report(42, "mine", NULL, 700);
    a = attached(&k, doc, "address");
    CHECK(a && !strcmp(a, "0xb000"), "the process's line after a busy one's: %s", a ? a : "none");
    json_free(doc);
    kernlog_free(&k);
  }

  /* a log that grew past the read's cap: the line beyond it is not seen, and the report says culprit stopped
   * reading rather than that the kernel logged nothing */
  {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    setenv("CULPRIT_KERNEL_LOG", path, 1);
    kernlog_begin(&k);
    CHECK(ftruncate(fd, (off_t)(64ll << 20) + 4096) == 0); /* sparse: 64 MiB of NUL bytes, no line */
    CHECK(lseek(fd, 0, SEEK_END) > 0);
    static const char late[] = "NVRM: Xid (PCI:0): 31, pid=7, name=trainer, x. MMU Fault: faulted @ 0x7000. Fault "
                               "is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE\n";
    CHECK(write(fd, late, strlen(late)) == (ssize_t)strlen(late));
    close(fd);
    kernlog_end(&k);
    doc = report(7, "trainer", NULL, 700);
    const char *cut = attached(&k, doc, "unknown");
    CHECK(k.cut > 0 && cut && strstr(cut, "stopped reading") && strstr(cut, "64 MiB") && !strstr(cut, "logged no"),
          "%s", cut ? cut : "none");
    json_free(doc);
    kernlog_free(&k);
  }

  log_of(&k, path, garbled);
  doc = report(2720, "gpu_threads8_st", NULL, 700);
  const char *why = attached(&k, doc, "unknown");
  CHECK(why && strstr(why, "without a usable address") && strstr(why, "UNRECOGNIZED_FAULT"), "%s", why ? why : "");
  json_free(doc);
  kernlog_free(&k);

  setenv("CULPRIT_KERNEL_LOG", "off", 1);
  kernlog_begin(&k);
  doc = report(7, "trainer", NULL, 700);
  CHECK(k.off && k.fd < 0 && attached(&k, doc, "unknown") == NULL && !json_get(doc, "gpu_fault_log"), "off");
  json_free(doc);
  kernlog_free(&k);

  snprintf(path, sizeof path, "%s/no-such-log", dir);
  setenv("CULPRIT_KERNEL_LOG", path, 1);
  kernlog_begin(&k);
  kernlog_end(&k);
  doc = report(7, "trainer", NULL, 700);
  why = attached(&k, doc, "unknown");
  CHECK(why && strstr(why, "cannot be opened"), "%s", why ? why : "");
  json_free(doc);
  kernlog_free(&k);

  setenv("CULPRIT_KERNEL_LOG", dir, 1); /* a directory is no log */
  kernlog_begin(&k);
  CHECK(k.fd < 0 && strstr(k.why, "neither a file"), "%s", k.why);
  kernlog_free(&k);
  unsetenv("CULPRIT_KERNEL_LOG"); /* the kernel's own log, where this machine lets it be read: from its end, and
                                   * its end reached without waiting for more */
  kernlog_begin(&k);
  if (k.fd >= 0) {
    CHECK(!k.is_file && !k.why[0] && !strcmp(k.path, "/dev/kmsg"), "%s", k.why);
    kernlog_end(&k);
    CHECK(k.fd < 0, "read to its end and closed");
  } else {
    CHECK(k.why[0] != '\0', "an unreadable log says why");
  }
  kernlog_free(&k);
  /* /proc/kmsg gives each message to one reader: reading it would take them from the system's logger. It is
   * refused when it opens (as root), not read; another file of /proc is no log either. */
  static const char *const procs[] = {"/proc/kmsg", "/proc/self/status"};
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
    setenv("CULPRIT_KERNEL_LOG", procs[i], 1);
    kernlog_begin(&k);
    CHECK(k.fd < 0 && (strstr(k.why, "a file of /proc") || (i == 0 && strstr(k.why, "cannot be opened"))), "%s: %s",
          procs[i], k.why);
    CHECK(i != 0 || getuid() != 0 || strstr(k.why, "system's logger"), "%s", k.why);
    kernlog_free(&k);
  }
  setenv("CULPRIT_KERNEL_LOG", "/dev/zero", 1); /* a device that never ends is no log either */
  kernlog_begin(&k);
  CHECK(k.fd < 0 && strstr(k.why, "neither a file"), "%s", k.why);
  kernlog_free(&k);
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/culprit-kernlog-XXXXXX";
  (void)argc;
  (void)argv;
  parse_tests();
  CHECK(mkdtemp(dir) != NULL);
  attach_tests(dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/kern.log", dir);
  unlink(path);
  rmdir(dir);
  return CHECK_DONE();
}
