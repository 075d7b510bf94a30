/* SPDX-License-Identifier: MIT */
/*
 * graph_index.c - the graph's two indexes and its verifier (issue #27, "[runtime-ir]" deliverable 6).
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
 *   - onnx_graph_verify(): the invariants every pass keeps, checked after each load-time pass when
 *     ONNX_VERIFY is set to anything but "0" (opt-in in every build type: it roughly doubles the load
 *     time of a large graph; the unit tests, the sim conformance and model-zoo runs and the fuzzers
 *     turn it on).
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

	if (n_in)
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

bool onnx_graph_verify_enabled(void)
{
	const char *e = getenv("ONNX_VERIFY");

	/* opt-in whatever NDEBUG says: debugoptimized and the Debian builds leave NDEBUG unset */
	return e && *e && strcmp(e, "0") != 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The index's list for one value against a fresh scan's (fresh is in node order, hence sorted). */
static bool list_agrees(const struct onnx_ilist *have, const int *fresh, unsigned n_fresh, int *scratch)
{
	if (have->n != n_fresh)
		return false;
	if (!n_fresh)
		return true;	/* (an empty list may have no array: no memcpy/memcmp of NULL) */
	memcpy(scratch, have->v, n_fresh * sizeof(int));
	qsort(scratch, n_fresh, sizeof(int), cmp_int);
	return !memcmp(scratch, fresh, n_fresh * sizeof(int));
}

/*
 * Every node's inputs and outputs name existing values (an output may be -1 only past the first);
 * every value has at most one producer among the nodes that still run (!folded) and no graph input has
 * one; a running node reads only constants, graph inputs and values a running node before it wrote
 * (ONNX's topological order, kept by every fusion); the use-def index, when built, lists exactly what a
 * fresh scan finds.  A violation is a bug in the pass named by after: -EINVAL with the value's name.
 */
int onnx_graph_verify(struct onnx_model *m, const char *after)
{
	unsigned nv = m->n_vals, *start = NULL, *fill = NULL, total = 0, total_out = 0;
	int *live_prod = NULL, *flat = NULL, *scratch = NULL, ret = 0;

#define BAD(...) do { ret = onnx_seterr(m, -EINVAL, __VA_ARGS__); goto out; } while (0)
	live_prod = malloc((nv + 1) * sizeof(int));
	if (!live_prod)
		return onnx_seterr(m, -ENOMEM, "out of memory");
	for (unsigned v = 0; v < nv; v++)
		live_prod[v] = -1;
	for (unsigned i = 0; i < m->n_nodes; i++) {
		const struct onnx_node *n = &m->nodes[i];

		for (unsigned k = 0; k < n->n_in; k++)
			if (n->in[k] < -1 || n->in[k] >= (int)nv)
				BAD("graph check after %s: node %u (%s) input %u is value %d of %u", after, i,
				    onnx_op_name(n->op), k, n->in[k], nv);
		if (!n->n_out || n->out[0] < 0)
			BAD("graph check after %s: node %u (%s) has no first output", after, i, onnx_op_name(n->op));
		for (unsigned k = 0; k < n->n_out; k++)
			if (n->out[k] < -1 || n->out[k] >= (int)nv)
				BAD("graph check after %s: node %u (%s) output %u is value %d of %u", after, i,
				    onnx_op_name(n->op), k, n->out[k], nv);
		total += n->n_in;
		total_out += n->n_out;
	}
	for (unsigned i = 0; i < m->n_nodes; i++) {
		const struct onnx_node *n = &m->nodes[i];

		if (n->folded)
			continue;
		for (unsigned k = 0; k < n->n_in; k++) {
			int v = n->in[k];

			if (v >= 0 && !m->vals[v].is_const && !m->vals[v].is_input && live_prod[v] < 0)
				BAD("graph check after %s: node %u (%s) reads '%s' before any node writes it", after, i,
				    onnx_op_name(n->op), m->vals[v].name);
		}
		for (unsigned k = 0; k < n->n_out; k++) {
			int v = n->out[k];

			if (v < 0)
				continue;
			if (live_prod[v] >= 0)
				BAD("graph check after %s: value '%s' is produced twice (nodes %d and %u)", after,
				    m->vals[v].name, live_prod[v], i);
			if (m->vals[v].is_input)
				BAD("graph check after %s: graph input '%s' is produced by node %u", after, m->vals[v].name, i);
			live_prod[v] = (int)i;
		}
	}
	for (unsigned o = 0; o < m->n_outputs; o++)
		if (m->outputs[o] < 0 || m->outputs[o] >= (int)nv)
			BAD("graph check after %s: graph output %u is value %d of %u", after, o, m->outputs[o], nv);
	if (!m->refs)
		goto out;
	if (m->cap_refs < nv)
		BAD("graph check after %s: the use-def index has %u values of %u", after, m->cap_refs, nv);
	/* a fresh consumer index (counting sort by value: lists in node order) */
	start = calloc(nv + 1, sizeof(unsigned));
	fill = calloc(nv + 1, sizeof(unsigned));
	flat = malloc((total + 1) * sizeof(int));
	scratch = malloc(((total > total_out ? total : total_out) + 1) * sizeof(int));
	if (!start || !fill || !flat || !scratch) {
		ret = onnx_seterr(m, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < m->n_nodes; i++)
		for (unsigned k = 0; k < m->nodes[i].n_in; k++)
			if (m->nodes[i].in[k] >= 0)
				start[m->nodes[i].in[k] + 1]++;
	for (unsigned v = 0; v < nv; v++)
		start[v + 1] += start[v];
	for (unsigned i = 0; i < m->n_nodes; i++)
		for (unsigned k = 0; k < m->nodes[i].n_in; k++) {
			int v = m->nodes[i].in[k];

			if (v >= 0)
				flat[start[v] + fill[v]++] = (int)i;
		}
	for (unsigned v = 0; v < nv; v++)
		if (!list_agrees(&m->refs[v].cons, &flat[start[v]], start[v + 1] - start[v], scratch))
			BAD("graph check after %s: the use-def index's readers of '%s' (%u) differ from the graph's (%u)",
			    after, m->vals[v].name, m->refs[v].cons.n, start[v + 1] - start[v]);
	/* the same for the writers */
	memset(start, 0, (nv + 1) * sizeof(unsigned));
	memset(fill, 0, (nv + 1) * sizeof(unsigned));
	for (unsigned i = 0; i < m->n_nodes; i++)
		for (unsigned k = 0; k < m->nodes[i].n_out; k++)
			if (m->nodes[i].out[k] >= 0)
				start[m->nodes[i].out[k] + 1]++;
	for (unsigned v = 0; v < nv; v++)
		start[v + 1] += start[v];
	free(flat);
	flat = malloc((start[nv] + 1) * sizeof(int));
	if (!flat) {
		ret = onnx_seterr(m, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < m->n_nodes; i++)
		for (unsigned k = 0; k < m->nodes[i].n_out; k++) {
			int v = m->nodes[i].out[k];

			if (v >= 0)
				flat[start[v] + fill[v]++] = (int)i;
		}
	for (unsigned v = 0; v < nv; v++)
		if (!list_agrees(&m->refs[v].prod, &flat[start[v]], start[v + 1] - start[v], scratch))
			BAD("graph check after %s: the use-def index's writers of '%s' (%u) differ from the graph's (%u)",
			    after, m->vals[v].name, m->refs[v].prod.n, start[v + 1] - start[v]);
	memset(fill, 0, (nv + 1) * sizeof(unsigned));
	for (unsigned o = 0; o < m->n_outputs; o++)
		fill[m->outputs[o]]++;
	for (unsigned v = 0; v < nv; v++)
		if (fill[v] != m->refs[v].n_graph_out)
			BAD("graph check after %s: the use-def index counts '%s' as graph output %u times, the graph %u",
			    after, m->vals[v].name, m->refs[v].n_graph_out, fill[v]);
out:
#undef BAD
	free(live_prod);
	free(start);
	free(fill);
	free(flat);
	free(scratch);
	return ret;
}
