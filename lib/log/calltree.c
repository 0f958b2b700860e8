/* The call tree of a trace log segment: nodes, stack numbers and the
 * writer's (parent, frame) -> child index. */
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "table_alloc.h"

static uint64_t mix(uint32_t parent, btp_frame f)
{
    uint64_t h = f.value * 0x9E3779B97F4A7C15ull ^ ((uint64_t)parent << 2 | (unsigned)f.kind);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

static int grow(void **p, uint32_t *cap, size_t elem, uint32_t need)
{
    if (need <= *cap)
        return 1;
    uint32_t c = *cap ? *cap : 1024;
    while (c < need) {
        if (c > UINT32_MAX / 2)
            return 0;
        c *= 2;
    }
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

btp_status calltree_init(calltree *t, int with_index)
{
    memset(t, 0, sizeof *t);
    t->with_index = with_index;
    if (!grow((void **)&t->nodes, &t->cap_nodes, sizeof *t->nodes, 1))
        return BTP_E_OUT_OF_MEMORY;
    if (with_index) {
        uint32_t c = 0;
        if (!grow((void **)&t->node_stack, &c, sizeof *t->node_stack, t->cap_nodes))
            return BTP_E_OUT_OF_MEMORY;
        t->child_cap = 2048;
        t->child = log_table_calloc(t->child_cap, sizeof *t->child);
        if (!t->child)
            return BTP_E_OUT_OF_MEMORY;
    }
    calltree_reset(t);
    return BTP_OK;
}

void calltree_reset(calltree *t)
{
    t->n_nodes = 1;
    t->nodes[0] = (calltree_node){0, 0, 0, 0, 1};
    t->n_stacks = 0;
    if (t->with_index) {
        t->node_stack[0] = 0;
        memset(t->child, 0, (size_t)t->child_cap * sizeof *t->child);
    }
}

void calltree_free(calltree *t)
{
    free(t->nodes);
    free(t->stack_node);
    free(t->node_stack);
    free(t->child);
    memset(t, 0, sizeof *t);
}

static uint32_t child_lookup(const calltree *t, uint32_t parent, btp_frame f)
{
    uint32_t mask = t->child_cap - 1;
    for (uint32_t i = (uint32_t)mix(parent, f) & mask;; i = (i + 1) & mask) {
        uint32_t id = t->child[i];
        if (id == 0)
            return 0;
        const calltree_node *n = &t->nodes[id];
        if (n->parent == parent && n->value == f.value && n->kind == (uint8_t)f.kind)
            return id;
    }
}

static void child_insert(calltree *t, uint32_t id)
{
    const calltree_node *n = &t->nodes[id];
    btp_frame f = {n->value, (btp_frame_kind)n->kind};
    uint32_t mask = t->child_cap - 1;
    uint32_t i = (uint32_t)mix(n->parent, f) & mask;
    while (t->child[i])
        i = (i + 1) & mask;
    t->child[i] = id;
}

uint32_t calltree_find(const calltree *t, const btp_frame *frames, size_t n, size_t *matched)
{
    uint32_t node = 0;
    size_t m = 0;
    while (m < n) {
        uint32_t c = child_lookup(t, node, frames[n - 1 - m]);
        if (!c)
            break;
        node = c;
        m++;
    }
    *matched = m;
    return node;
}

btp_status calltree_add(calltree *t, uint32_t parent, btp_frame f, int known, uint32_t *id)
{
    if (t->n_nodes == UINT32_MAX)
        return BTP_E_OUT_OF_MEMORY;
    uint32_t old_cap = t->cap_nodes;
    if (!grow((void **)&t->nodes, &t->cap_nodes, sizeof *t->nodes, t->n_nodes + 1))
        return BTP_E_OUT_OF_MEMORY;
    if (t->with_index) {
        if (!grow((void **)&t->node_stack, &old_cap, sizeof *t->node_stack, t->cap_nodes))
            return BTP_E_OUT_OF_MEMORY;
        /* keep the child table at most half full */
        if ((uint64_t)(t->n_nodes + 1) * 2 > t->child_cap) {
            uint32_t nc = t->child_cap * 2;
            uint32_t *c = log_table_calloc(nc, sizeof *c);
            if (!c)
                return BTP_E_OUT_OF_MEMORY;
            free(t->child);
            t->child = c;
            t->child_cap = nc;
            for (uint32_t i = 1; i < t->n_nodes; i++)
                child_insert(t, i);
        }
    }
    uint32_t n = t->n_nodes++;
    const calltree_node *p = &t->nodes[parent];
    t->nodes[n] = (calltree_node){f.value, parent, (uint16_t)(p->depth + 1), (uint8_t)f.kind,
                                  (uint8_t)(known && p->known)};
    if (t->with_index) {
        t->node_stack[n] = 0;
        child_insert(t, n);
    }
    *id = n;
    return BTP_OK;
}

btp_status calltree_add_stack(calltree *t, uint32_t node, uint32_t *stack)
{
    if (!grow((void **)&t->stack_node, &t->cap_stacks, sizeof *t->stack_node, t->n_stacks + 1))
        return BTP_E_OUT_OF_MEMORY;
    t->stack_node[t->n_stacks] = node;
    if (t->with_index && node != UINT32_MAX)
        t->node_stack[node] = t->n_stacks + 1;
    *stack = t->n_stacks++;
    return BTP_OK;
}

size_t calltree_frames(const calltree *t, uint32_t node, btp_frame *out, size_t max)
{
    if (node >= t->n_nodes || !t->nodes[node].known)
        return (size_t)-1;
    size_t n = 0;
    while (node != 0 && n < max) {
        const calltree_node *c = &t->nodes[node];
        out[n++] = (btp_frame){c->value, (btp_frame_kind)c->kind};
        node = c->parent;
    }
    return n;
}
