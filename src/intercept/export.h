/* What marks a symbol of libculprit as exported (exports.map lists the names). Only src/intercept defines
 * exported symbols: the driver's entry points, dlsym, sigaction and signal, and the public API. */
#ifndef CULPRIT_EXPORT_H
#define CULPRIT_EXPORT_H

#define CP_EXPORT __attribute__((visibility("default")))

#endif
