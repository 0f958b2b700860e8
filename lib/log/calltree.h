/* The call tree of a trace log segment (spec/log.md "Dictionary").
 *
 * Node 0 is the root (the empty stack). Every other node is one frame whose
 * parent is the frame that called it, so a stack is the path from a node up
 * to the root, innermost frame first, and stacks that share their outer
 * frames share nodes. A stack that a record used gets a stack number; the
 * records refer to stacks by that number. */
#ifndef BTPACK_CALLTREE_H
#define BTPACK_CALLTREE_H

#include <btpack/btpack.h>

typedef struct calltree_node {
    uint64_t value;
    uint32_t parent;
    uint16_t depth;  /* frames from the root (root 0) */
    uint8_t kind;    /* btp_frame_kind */
    uint8_t known;   /* 0 when the node was defined in a lost block */
} calltree_node;

typedef struct calltree {
    calltree_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *stack_node;   /* stack number -> node */
    uint32_t n_stacks, cap_stacks;
    uint32_t *node_stack;   /* node -> stack number + 1 (0: none); writer only */
    /* child index (writer only): open addressing on (parent, frame) */
    uint32_t *child;
    uint32_t child_cap;     /* power of two */
    int with_index;
} calltree;

/* with_index: keep the lookup tables the writer needs. */
btp_status calltree_init(calltree *t, int with_index);
void calltree_reset(calltree *t);  /* back to just the root */
void calltree_free(calltree *t);

/* Writer: find the deepest node matching the outer frames of
 * frames[0..n) (innermost first). Returns the node and sets *matched to
 * the number of outer frames matched (the new frames are frames[0..n-matched)). */
uint32_t calltree_find(const calltree *t, const btp_frame *frames, size_t n, size_t *matched);

/* Append a child of `parent` (BTP_OK or BTP_E_OUT_OF_MEMORY). *id gets the node. */
btp_status calltree_add(calltree *t, uint32_t parent, btp_frame f, int known, uint32_t *id);

/* Give `node` the next stack number (BTP_OK or BTP_E_OUT_OF_MEMORY). */
btp_status calltree_add_stack(calltree *t, uint32_t node, uint32_t *stack);

/* Writer: the stack number of `node` + 1, or 0 if it is not a stack yet. */
static inline uint32_t calltree_stack_of(const calltree *t, uint32_t node)
{
    return t->node_stack[node];
}

/* Frames of stack `node` into out[0..max), innermost first; returns the
 * count, or (size_t)-1 when a node on the path is unknown. */
size_t calltree_frames(const calltree *t, uint32_t node, btp_frame *out, size_t max);

#endif
