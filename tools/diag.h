/* The one place messages are printed:
 *   btpack: <input>:<line>: <cause>
 *   btpack: <input>: byte offset N: <cause>
 *   btpack: <input>:<line>: byte offset N: <cause>   (inside a line's CBF)
 */
#ifndef BTPACK_TOOLS_DIAG_H
#define BTPACK_TOOLS_DIAG_H

#include "trace.h"

enum { DIAG_ERROR, DIAG_WARNING };

/* loc may be NULL; input may be NULL (a message about the tool itself). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void diag(int level, const char *input, const src_loc *loc, const char *fmt, ...);

/* Progress on stderr when it is a terminal: "btpack: N traces" every so
 * often, erased by progress_done(). */
void progress_tick(unsigned long long count, const char *what);
void progress_done(void);

#endif
