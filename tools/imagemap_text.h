/* Image maps the CLI reads from text (crash records' `image` and `map`
 * lines, a log's stored maps) and writes (a log's `images`), owning their
 * storage: the library parsers fill caller-provided arrays, this grows
 * them. */
#ifndef BTPACK_TOOLS_IMAGEMAP_TEXT_H
#define BTPACK_TOOLS_IMAGEMAP_TEXT_H

#include <btpack/btpack.h>

#include "strbuf.h"

typedef struct owned_map {
    btp_image_map map;   /* points into buf once complete */
    btp_image_buf buf;
} owned_map;

/* Forget the images (keeps the storage). */
void owned_map_clear(owned_map *m, unsigned word_bits);
void owned_map_free(owned_map *m);

/* /proc/PID/maps text (btp_image_map_from_procmaps) replacing the content.
 * Returns its status; *err_off the offset of a bad field. */
btp_status owned_map_procmaps(owned_map *m, const char *text, size_t len, unsigned word_bits,
                              size_t *err_off);

/* Append one `image` line (btp_image_line_parse). Strings of earlier images
 * stay valid. */
btp_status owned_map_image_line(owned_map *m, const char *line, size_t len, size_t *err_off);

/* Every line of text that starts with "image " (others are skipped). */
btp_status owned_map_image_lines(owned_map *m, const char *text, size_t len, unsigned word_bits,
                                 size_t *err_off);

/* The image map a trace log stores: its `images` metadata (image lines
 * with build IDs), else its `maps` (/proc/PID/maps text, no build IDs), of
 * every such block the reader has seen so far (a recording stores the
 * images again when libraries are loaded or unloaded). Newest first: an
 * image of an older block that overlaps a newer one is left out, so an
 * address is placed by the newest block that holds it. BTP_END when the
 * log has neither (the map is then empty); a bad block's status, with
 * *err_off in that block, leaves the map empty. */
btp_status owned_map_from_log(owned_map *m, btp_log_reader *lr, size_t *err_off);

/* The `image` lines of the images of /proc/PID/maps text, each with the
 * build ID of the file now at its path (none when it cannot be read),
 * appended to out. Returns BTP_OK or the parse error (*err_off). */
btp_status image_lines_from_procmaps(const char *text, size_t len, unsigned word_bits,
                                     strbuf *out, size_t *err_off);

#endif
