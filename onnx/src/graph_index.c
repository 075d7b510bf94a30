/* SPDX-License-Identifier: MIT */
/*
 * graph_index.c - the graph's indexes (issue #27, "[runtime-ir]" deliverable 6).
 *
 *   - name -> value: an open-addressing hash table (linear probing, FNV-1a, at most half full) that
 *     onnx_value_add() fills, so resolving a node's input names is O(1) and loading is linear in the
 *     node count (the linear scans made a 20 000-node chain take 17 s).  The first value of a name
 *     wins, as the scans it replaces did (the loader refuses duplicates; a fusion's synthetic names,
 *     "(folded BatchNormalization bias)", may repeat and are never looked up).
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

void onnx_graph_index_free(struct onnx_model *m)
{
	free(m->names.slot);
	m->names.slot = NULL;
	m->names.cap = m->names.n = 0;
}
