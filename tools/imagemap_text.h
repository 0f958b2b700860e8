/* Image maps the CLI reads from text (crash records' `image` and `map`
 * lines, a log's stored maps) and writes (a log's `images`), owning their
 * storage: the library parsers fill caller-provided arrays, this grows
 * them. */
#ifndef BTPACK_TOOLS_IMAGEMAP_TEXT_H
#define BTPACK_TOOLS_IMAGEMAP_TEXT_H

#include <btpack/btpack.h>

#include "strbuf.h"

typedef struct owned_map {
    btp_image_map map;   /* points into buf (and platform) once complete */
    btp_image_buf buf;
    char *platform;      /* map.platform's storage, or NULL */
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

/* Every line of text that starts with "image " and the last that starts
 * with "platform " (others are skipped). */
btp_status owned_map_image_lines(owned_map *m, const char *text, size_t len, unsigned word_bits,
                                 size_t *err_off);

/*
 * The image map a trace log stores, taken from its metadata as it streams
 * by (the reader may release each item once it is taken): its `images`
 * items (image lines with build IDs), else its `maps` items (/proc/PID/maps
 * text, no build IDs). A recording stores the images again when libraries
 * are loaded or unloaded, so every item counts, newest over older: an image
 * that overlaps an image of a later item is left out, and the images of
 * older items nothing later overlaps stay (the records written before a
 * library was unloaded still find it). After each item the map is the one
 * in effect there, so a record is placed by the items written before it;
 * once the log is read, by all of them.
 *
 * Work per item is linear in the item and the map so far (times a log);
 * the map is at most LOG_MAP_MAX_BYTES of images and strings
 * (BTP_E_META_LIMIT beyond). A bad item (its status, *err_off in it)
 * leaves the map empty: from then on items of that kind are not used,
 * except that `images` items still replace a map that came from `maps`.
 */
#define LOG_MAP_MAX_BYTES ((size_t)64 << 20)

typedef struct log_map {
    owned_map maps[3]; /* the map so far, the one last handed out, a spare */
    owned_map item;    /* scratch: the item being taken */
    int cur;           /* maps[cur]: the map so far */
    int given;         /* maps[given]: the one log_map_get() returned last, or -1 */
    int from;          /* 0: no item yet, 1: maps items, 2: images items */
    btp_status st;     /* BTP_END before the first item used; BTP_OK; or a bad
                          item's status */
    size_t err_off;    /* with a bad item: the offset in it */
} log_map;

void log_map_init(log_map *lm, unsigned word_bits);
void log_map_free(log_map *lm);

/* Take one metadata item. Returns BTP_OK when the map changed, BTP_END
 * when the item was not used (another key, `maps` once there are images,
 * or a kind a bad item stopped), else the bad item's status (also in
 * lm->st; the map is then empty). */
btp_status log_map_take(log_map *lm, const char *key, const void *data, size_t len);

/* The map in effect, or NULL (no item taken yet, or a bad one). A map that
 * changed comes at another address, and the one returned before stays
 * as it was until this is called again: a user that compares the map it
 * is given with the one it was given last (sym_set_map) sees every change
 * and never a freed map. */
const btp_image_map *log_map_get(log_map *lm);

/* One image as its `image` line (btp_image_line_format) and a newline,
 * appended to out (out->oom says when memory ran out). */
void image_line_append(strbuf *out, const btp_image *im);

/* A platform (CIF's, "Linux (Debian GNU/Linux 12 (bookworm))") as a
 * `platform` line of a log's `images`: "platform " and the text escaped as
 * an image line escapes a path, and a newline, appended to out. */
void platform_line_append(strbuf *out, const char *platform);

/* The `image` lines of the images of /proc/PID/maps text, each with the
 * build ID of the file now at its path when that file is the one the text
 * mapped (the same device and inode; none when it is not, or cannot be
 * read), appended to out. Returns BTP_OK or the parse error (*err_off). */
btp_status image_lines_from_procmaps(const char *text, size_t len, unsigned word_bits,
                                     strbuf *out, size_t *err_off);

/* The file-naming lines of /proc/PID/maps text, read once (the text must
 * outlive the index), to ask whether a file on this machine is the one a
 * process mapped. NULL when memory ran out. */
typedef struct maps_index maps_index;
maps_index *maps_index_new(const char *text, size_t len);

/* Whether the file with st_dev dev and st_ino ino is the one the text's
 * first line naming path mapped: 1 yes (that inode, on that device; where
 * st_dev is an anonymous device, major 0, as on overlayfs, btrfs, NFS and
 * FUSE, the maps line shows another device and the inode decides alone),
 * 0 another file, -1 no line names path or shows an inode. */
int maps_index_same_file(const maps_index *x, const char *path, uint64_t dev, uint64_t ino);
void maps_index_free(maps_index *x);

#endif
