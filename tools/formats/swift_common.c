/* What the swift and swift-crashlog formats share (swift_common.h). */
#include "swift_common.h"

#include <string.h>

const char *swift_default_arch(unsigned word_bits)
{
    return word_bits == 64 ? "x86_64" : word_bits == 32 ? "i386" : "msp430";
}

unsigned swift_arch_word_bits(const char *arch)
{
    static const struct {
        const char *name;
        unsigned bits;
    } known[] = {{"x86_64", 64}, {"arm64", 64}, {"i386", 32}, {"arm", 32}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(arch, known[i].name) == 0)
            return known[i].bits;
    return 0;
}
