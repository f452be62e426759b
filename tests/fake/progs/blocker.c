/* A library whose constructor never returns on its own: loaded with dlopen by progs/hang's loader-lock variant,
 * it keeps that thread inside the dynamic loader, holding its lock, until a signal ends the process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void blocker_start(void)
{
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
    const char *ready = "ready\n";
    ssize_t w = write(1, ready, strlen(ready));
    (void)w;
    for (;;)
        pause();
}
