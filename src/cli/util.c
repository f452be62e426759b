/* Helpers shared by the verbs of the `culprit` command: messages (made terminal-safe), where the executable and
 * the preload library live, directory creation and report listing. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cli.h"
#include "../render/render.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* "culprit: " + the message + newline on out, as one terminal-safe line. */
static void cli_vsay(FILE *out, const char *fmt, va_list ap)
{
    char *msg = NULL, *safe = NULL;
    int n = vasprintf(&msg, fmt, ap);
    /* a path, a command or a report's text may hold a newline or an escape sequence */
    if (n >= 0)
        safe = render_safe(msg, (size_t)n, 0);
    fprintf(out, "culprit: %s\n", safe ? safe : "(out of memory formatting a message)");
    free(safe);
    free(msg);
}

void cli_say(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vsay(out, fmt, ap);
    va_end(ap);
}

void cli_err(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    va_start(ap, fmt);
    cli_vsay(stderr, fmt, ap);
    va_end(ap);
}

int cli_exe_dir(char *out, size_t outsz)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    char *slash;
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    if ((size_t)snprintf(out, outsz, "%s", buf[0] ? buf : "/") >= outsz)
        return -1;
    return 0;
}

static int cli_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Reads the ELF header of the file open at fd; 0 or -1. */
static int cli_elf_header(int fd, Elf64_Ehdr *eh)
{
    return pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 ? 0 : -1;
}

/* Whether path is a shared library the dynamic loader can preload into programs like this one: an ELF shared
 * object of this machine's class, byte order and architecture whose loadable segments lie inside the file (a
 * truncated copy would crash the loader in every program it is preloaded into). Returns 0, or -1 with the reason
 * in why. */
static int cli_check_library(const char *path, char *why, size_t whylen)
{
    Elf64_Ehdr eh, self;
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC), me, rc = -1;

    if (fd < 0) {
        snprintf(why, whylen, "cannot be read (%s)", strerror(errno));
        return -1;
    }
    me = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fstat(fd, &sb) != 0 || cli_elf_header(fd, &eh) != 0) {
        snprintf(why, whylen, "is not an ELF shared library");
    } else if (me >= 0 && cli_elf_header(me, &self) == 0 &&
               (eh.e_ident[EI_CLASS] != self.e_ident[EI_CLASS] || eh.e_ident[EI_DATA] != self.e_ident[EI_DATA] ||
                eh.e_machine != self.e_machine)) {
        snprintf(why, whylen, "is %s ELF file for another machine than culprit's (%s)",
                 eh.e_ident[EI_CLASS] == ELFCLASS32 ? "a 32-bit" : "an",
                 self.e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "32-bit");
    } else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN) {
        snprintf(why, whylen, "is not an ELF shared library (an executable or an object file)");
    } else {
        rc = 0;
        for (unsigned i = 0; i < eh.e_phnum && rc == 0; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) != (ssize_t)sizeof ph)
                rc = -1;
            else if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > (Elf64_Off)sb.st_size)
                rc = -1;
            else if (ph.p_type == PT_INTERP)
                rc = -2; /* a program (a position-independent executable), which the loader does not preload */
        }
        if (rc)
            snprintf(why, whylen,
                     rc == -2 ? "is a program, not a shared library"
                              : "is cut short: its segments run past the end of the file");
        rc = rc ? -1 : 0;
    }
    close(fd);
    if (me >= 0)
        close(me);
    return rc;
}

int cli_find_lib(char *out, size_t outsz)
{
    char why[200];
    const char *env = getenv("CULPRIT_LIB");
    char dir[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32], real[PATH_MAX];

    if (env && *env) {
        if (!cli_is_file(env) || !realpath(env, real)) {
            cli_err("CULPRIT_LIB names %s, which is not a file", env);
            return CLI_EXIT_USAGE;
        }
        goto found;
    }
    if (cli_exe_dir(dir, sizeof dir) != 0) {
        cli_err("cannot tell where the culprit executable lives, so libculprit.so cannot be found; "
                "set CULPRIT_LIB to its path");
        return CLI_EXIT_USAGE;
    }
    snprintf(a, sizeof a, "%s/../lib/libculprit.so", dir);
    snprintf(b, sizeof b, "%s/libculprit.so", dir);
    if (cli_is_file(a) && realpath(a, real))
        goto found;
    if (cli_is_file(b) && realpath(b, real))
        goto found;
    cli_err("cannot find libculprit.so (looked for %s and %s); set CULPRIT_LIB to its path", a, b);
    return CLI_EXIT_USAGE;
found:
    if ((size_t)snprintf(out, outsz, "%s", real) >= outsz) {
        cli_err("the path of libculprit.so is too long");
        return CLI_EXIT_USAGE;
    }
    /* the dynamic loader splits LD_PRELOAD at ':' and ' ', so such a path cannot be preloaded */
    if (strpbrk(out, ": ")) {
        cli_err("libculprit.so lies at %s, and a path with ':' or ' ' cannot go into LD_PRELOAD; "
                "set CULPRIT_LIB to a copy elsewhere",
                out);
        return CLI_EXIT_USAGE;
    }
    /* the loader would only say "cannot be preloaded ... ignored" in the program, and culprit would be off there */
    if (cli_check_library(out, why, sizeof why) != 0) {
        if (env && *env)
            cli_err("CULPRIT_LIB names %s, which %s, so it cannot be preloaded; set CULPRIT_LIB to libculprit.so", out,
                    why);
        else
            cli_err("libculprit.so at %s %s, so it cannot be preloaded; build culprit again, or set CULPRIT_LIB to "
                    "a good copy",
                    out, why);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Whether dir holds culprit's Python package with its start-up hook; out gets <dir>/culprit/_boot. */
static int cli_boot_in(const char *dir, char *out, size_t outsz)
{
    char hook[PATH_MAX + 64], real[PATH_MAX];
    snprintf(hook, sizeof hook, "%s/culprit/_boot/sitecustomize.py", dir);
    if (!cli_is_file(hook) || !realpath(hook, real))
        return 0;
    *strrchr(real, '/') = '\0';
    return (size_t)snprintf(out, outsz, "%s", real) < outsz;
}

int cli_find_boot(char *out, size_t outsz, int quiet)
{
    const char *env = getenv("CULPRIT_PYTHON");
    char dir[PATH_MAX], cand[PATH_MAX + 32];
    /* CMake's build and install tree keep the package in lib/python; a wheel puts the executable in
     * culprit/_native/bin of the package itself */
    static const char *const rel[] = {"../lib/python", "../../.."};

    if (env && *env) {
        if (cli_boot_in(env, out, outsz))
            return 0;
        if (!quiet)
            cli_err("CULPRIT_PYTHON names %s, which does not hold culprit's Python package "
                    "(culprit/_boot/sitecustomize.py)",
                    env);
        return CLI_EXIT_USAGE;
    }
    if (cli_exe_dir(dir, sizeof dir) == 0) {
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
            if (cli_boot_in(cand, out, outsz))
                return 0;
        }
    }
    if (!quiet)
        cli_err("cannot find culprit's Python package beside the culprit executable (%s/../lib/python); set "
                "CULPRIT_PYTHON to the directory that holds its culprit/ folder",
                dir);
    return CLI_EXIT_USAGE;
}

int cli_mkdirs(const char *path, mode_t leaf_mode, int *created_leaf)
{
    char buf[PATH_MAX];
    size_t len = strlen(path), i;
    struct stat sb;

    *created_leaf = 0;
    if (len == 0 || len >= sizeof buf)
        return ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    for (i = 1; i <= len; i++) {
        int last = i == len;
        if (buf[i] != '/' && !last)
            continue;
        if (!last)
            buf[i] = '\0';
        if (mkdir(buf, last ? leaf_mode : 0777) == 0) {
            if (last)
                *created_leaf = 1;
        } else if (errno != EEXIST) {
            return errno;
        } else if (stat(buf, &sb) != 0) {
            return errno;
        } else if (!S_ISDIR(sb.st_mode)) {
            return ENOTDIR;
        }
        if (!last)
            buf[i] = '/';
    }
    return 0;
}

int cli_random(void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((char *)buf + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        got += (size_t)r;
    }
    return 0;
}

static int cli_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cli_free_list(char **list, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

int cli_list_reports(const char *dir, char ***paths, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **list = NULL;
    size_t cnt = 0, cap = 0;
    int rc = 0;

    *paths = NULL;
    *n = 0;
    if (!d)
        return errno;
    while ((de = readdir(d)) != NULL) {
        char *p;
        if (fnmatch("culprit-*.json", de->d_name, FNM_PERIOD) != 0)
            continue;
        if (cnt == cap) {
            char **nl;
            cap = cap ? cap * 2 : 16;
            nl = realloc(list, cap * sizeof *nl);
            if (!nl) {
                rc = ENOMEM;
                goto out;
            }
            list = nl;
        }
        if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name) < 0) {
            rc = ENOMEM;
            goto out;
        }
        list[cnt++] = p;
    }
    if (cnt)
        qsort(list, cnt, sizeof *list, cli_cmp_str);
out:
    closedir(d);
    if (rc) {
        cli_free_list(list, cnt);
        return rc;
    }
    *paths = list;
    *n = cnt;
    return 0;
}

int cli_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    long long v;
    if (!s || !*s || *s == '+' || *s == '-' || *s == ' ')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_triple(const char **p, long v[3], char open, char close)
{
    const char *s = *p;
    char *end;
    if (*s++ != open)
        return -1;
    for (int i = 0; i < 3; i++) {
        while (*s == ' ')
            s++;
        if (!isdigit((unsigned char)*s))
            return -1;
        v[i] = strtol(s, &end, 10);
        s = end;
        while (*s == ' ')
            s++;
        if (*s++ != (i < 2 ? ',' : close))
            return -1;
    }
    *p = s;
    return 0;
}
