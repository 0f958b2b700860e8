#include "cli.h"
#include "heap_cmd.h"
int heap_map(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return EXIT_USAGE;
}
