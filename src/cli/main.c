/* Entry point of the `culprit` command: picks the verb. The verbs live in run.c, report_cmd.c, trace_cmd.c and
 * demo.c, their help in help.c. */
#include "cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    const char *verb = argc > 1 ? argv[1] : NULL;

    if (!verb) {
        cli_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(verb, "run") == 0)
        return cli_run_main(argc - 1, argv + 1);
    if (strcmp(verb, "report") == 0)
        return cli_report_main(argc - 1, argv + 1);
    if (strcmp(verb, "demo") == 0)
        return cli_demo_main(argc - 1, argv + 1);
    if (strcmp(verb, "trace") == 0)
        return cli_trace_main(argc - 1, argv + 1);
    if (strcmp(verb, "version") == 0 || strcmp(verb, "--version") == 0) {
        printf("culprit %s\n", CULPRIT_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(verb, "help") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
        if (argc > 2 && strcmp(verb, "help") == 0) {
            if (cli_help_verb(stdout, argv[2]) != 0) {
                cli_err("there is no command '%s'; run 'culprit help' for the list", argv[2]);
                return CLI_EXIT_USAGE;
            }
            return CLI_EXIT_OK;
        }
        cli_usage(stdout);
        return CLI_EXIT_OK;
    }
    cli_err("unknown command '%s'; run 'culprit help' for the list", verb);
    return CLI_EXIT_USAGE;
}
