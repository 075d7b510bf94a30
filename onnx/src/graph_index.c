/* SPDX-License-Identifier: MIT */
/*
 * graph_index.c - the graph's two indexes (issue #27, "[runtime-ir]" deliverable 6).
 *
 *   - name -> value: an open-addressing hash table (linear probing, FNV-1a, at most half full) that
 *     onnx_value_add() fills, so resolving a node's input names is O(1) and loading is linear in the
 *     node count (the linear scans made a 20 000-node chain take 17 s).  The first value of a name
 *     wins, as the scans it replaces did (the loader refuses duplicates; a fusion's synthetic names,
 *     "(folded BatchNormalization bias)", may repeat and are never looked up).
 *   - use-def: for every value, the nodes that write it and the nodes that read it (one entry per input
 *     slot), built once after the load (onnx_graph_index) and kept current by the only two ways a pass
 *     rewires a node, onnx_node_set_inputs() and onnx_node_set_out().  The lists are raw: a folded or
 *     load-time-evaluated node stays in them, each pass filters by the flags it cares about, so setting
 *     a flag needs no update.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* Slot of name (holding its value) or of the empty slot where it would go; the table is never full. */
static unsigned name_slot(const struct onnx_model *m, const char *name)
{
	unsigned mask = m->names.cap - 1, i = name_hash(name) & mask;

	while (m->names.slot[i] >= 0 && strcmp(m->vals[m->names.slot[i]].name, name))
		i = (i + 1) & mask;
	return i;
}

int onnx_value_find(const struct onnx_model *m, const char *name)
{
	if (!m->names.cap || !name)
		return -1;
	return m->names.slot[name_slot(m, name)];
}

static int names_grow(struct onnx_model *m)
{
	unsigned cap = m->names.cap ? 2 * m->names.cap : 256;
	int *old = m->names.slot;
	unsigned old_cap = m->names.cap;

	m->names.slot = malloc(cap * sizeof(int));
	if (!m->names.slot) {
		m->names.slot = old;
		return -ENOMEM;
	}
	memset(m->names.slot, 0xff, cap * sizeof(int));	/* -1: empty */
	m->names.cap = cap;
	for (unsigned i = 0; i < old_cap; i++)
		if (old[i] >= 0)
			m->names.slot[name_slot(m, m->vals[old[i]].name)] = old[i];
	free(old);
	return 0;
}

int onnx_name_index_add(struct onnx_model *m, int v)
{
	unsigned s;

	if (2 * (m->names.n + 1) > m->names.cap && names_grow(m))
		return -ENOMEM;
	s = name_slot(m, m->vals[v].name);
	if (m->names.slot[s] < 0) {
		m->names.slot[s] = v;
		m->names.n++;
	}
	return 0;
}

static int ilist_push(struct onnx_ilist *l, int x)
{
	if (l->n == l->cap) {
		unsigned cap = l->cap ? 2 * l->cap : 2;
		int *p = realloc(l->v, cap * sizeof(int));

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = x;
	return 0;
}

/* Removes one occurrence of x; the last entry takes its place (the lists are unordered). */
static void ilist_drop(struct onnx_ilist *l, int x)
{
	for (unsigned i = l->n; i-- > 0;)
		if (l->v[i] == x) {
			l->v[i] = l->v[--l->n];
			return;
		}
}

static void refs_free(struct onnx_vrefs *r, unsigned n)
{
	for (unsigned v = 0; v < n; v++) {
		free(r[v].prod.v);
		free(r[v].cons.v);
	}
	free(r);
}

void onnx_graph_index_free(struct onnx_model *m)
{
	refs_free(m->refs, m->cap_refs);
	m->refs = NULL;
	m->cap_refs = 0;
	free(m->names.slot);
	m->names.slot = NULL;
	m->names.cap = m->names.n = 0;
}

/* Room in the use-def index for every value (onnx_value_add calls it once the index exists). */
int onnx_graph_index_fit(struct onnx_model *m)
{
	struct onnx_vrefs *r;

	if (m->cap_refs >= m->cap_vals)
		return 0;
	r = realloc(m->refs, m->cap_vals * sizeof(*r));
	if (!r)
		return -ENOMEM;
	memset(&r[m->cap_refs], 0, (m->cap_vals - m->cap_refs) * sizeof(*r));
	m->refs = r;
	m->cap_refs = m->cap_vals;
	return 0;
}

int onnx_graph_index(struct onnx_model *m)
{
	int ret = 0;

	refs_free(m->refs, m->cap_refs);
	m->refs = NULL;
	m->cap_refs = 0;
	m->refs = calloc(m->cap_vals ? m->cap_vals : 1, sizeof(*m->refs));
	if (!m->refs)
		return onnx_seterr(m, -ENOMEM, "out of memory");
	m->cap_refs = m->cap_vals ? m->cap_vals : 1;
	for (unsigned i = 0; i < m->n_nodes && !ret; i++) {
		const struct onnx_node *n = &m->nodes[i];

		for (unsigned k = 0; k < n->n_in && !ret; k++)
			if (n->in[k] >= 0)
				ret = ilist_push(&m->refs[n->in[k]].cons, (int)i);
		for (unsigned k = 0; k < n->n_out && !ret; k++)
			if (n->out[k] >= 0)
				ret = ilist_push(&m->refs[n->out[k]].prod, (int)i);
	}
	for (unsigned o = 0; o < m->n_outputs; o++)
		m->refs[m->outputs[o]].n_graph_out++;
	return ret ? onnx_seterr(m, ret, "out of memory") : 0;
}

int onnx_node_set_inputs(struct onnx_model *m, struct onnx_node *n, unsigned n_in, const int *in)
{
	int idx = (int)(n - m->nodes);
	int copy[ONNX_MAX_NODE_IO];

	memcpy(copy, in, n_in * sizeof(int));	/* in may be n->in itself */
	for (unsigned k = 0; m->refs && k < n->n_in; k++)
		if (n->in[k] >= 0)
			ilist_drop(&m->refs[n->in[k]].cons, idx);
	n->n_in = n_in;
	for (unsigned k = 0; k < n_in; k++) {
		n->in[k] = copy[k];
		if (m->refs && copy[k] >= 0 && ilist_push(&m->refs[copy[k]].cons, idx))
			return onnx_seterr(m, -ENOMEM, "out of memory");
	}
	return 0;
}

int onnx_node_set_out(struct onnx_model *m, struct onnx_node *n, unsigned k, int v)
{
	int idx = (int)(n - m->nodes);

	if (m->refs && n->out[k] >= 0)
		ilist_drop(&m->refs[n->out[k]].prod, idx);
	n->out[k] = v;
	if (m->refs && v >= 0 && ilist_push(&m->refs[v].prod, idx))
		return onnx_seterr(m, -ENOMEM, "out of memory");
	return 0;
}

const int *onnx_producers(const struct onnx_model *m, int v, unsigned *n)
{
	*n = v >= 0 && m->refs ? m->refs[v].prod.n : 0;
	return *n ? m->refs[v].prod.v : NULL;
}

const int *onnx_consumers(const struct onnx_model *m, int v, unsigned *n)
{
	*n = v >= 0 && m->refs ? m->refs[v].cons.n : 0;
	return *n ? m->refs[v].cons.v : NULL;
}

unsigned onnx_graph_output_uses(const struct onnx_model *m, int v)
{
	return v >= 0 && m->refs ? m->refs[v].n_graph_out : 0;
}
