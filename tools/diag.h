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

/*
 * A warning that may come once per record (--keep-going skipping bad
 * records, a writer's note on each trace): the first DIAG_REPEAT_SHOWN with
 * the same cause (the message with its numbers taken out) from the same
 * input are printed as diag() prints them, the rest only counted, with the
 * first and last place. diag_repeat_summary() then prints one line per
 * cause with hidden ones: `N more warnings like "<the first hidden>"
 * (lines A to B) not shown`. A corrupt block that makes thousands of bad
 * records so makes a handful of lines. At most DIAG_REPEAT_CAUSES causes
 * are told apart; further ones share one count.
 */
#define DIAG_REPEAT_SHOWN 3
#define DIAG_REPEAT_CAUSES 32
/* Show up to n per cause instead (--max-warnings N); 0: all of them. */
void diag_repeat_limit(unsigned long long n);
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void diag_repeat(const char *input, const src_loc *loc, const char *fmt, ...);
/* A bad record: an error, or with keep_going (--keep-going, the record is
 * passed over) a warning through diag_repeat(). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void diag_bad(int keep_going, const char *name, const src_loc *loc, const char *fmt, ...);
/* Print the counts of the warnings diag_repeat() held back, and forget
 * them (each reader calls it when its input ends). */
void diag_repeat_summary(void);

/*
 * Progress of long work (-v/--progress), as xz -v shows it: while an input
 * is read, a line on stderr with its name, how far it is (of a regular
 * file), the bytes read (compressed bytes for xz input) and records, and
 * both per second, updated twice a second; at its end the same as a last
 * line. Nothing unless progress_enable(1) was called and stderr is a
 * terminal. A message (diag()) erases the line first (progress_done()).
 */
struct input;
void progress_enable(int on);
void progress_begin(const struct input *in);
void progress_tick(unsigned long long records);
void progress_end(void);
void progress_done(void);

#endif
