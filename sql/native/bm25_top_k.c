/*
 * forum.bm25_native_top_k: the exact BM25 top-k of sql/010_bm25.sql, as one C function; the module
 * of the atlas_bm25 extension (atlas_bm25.control, atlas_bm25--*.sql, built by this folder's PGXS
 * Makefile; `atlas db install-kernel` builds and installs it).
 *
 * The PL/pgSQL search pays ~1.5 us of executor work per posting (unnest, expression, hash
 * aggregate); a query of six terms over 100k chunks touches ~30k postings. Here each posting
 * costs a few nanoseconds, so every posting of every query term is read and no pruning (with
 * its bounds and floating-point margins) is needed: the result is exact by construction.
 *
 * Same per-posting formula, in the same operation order, as forum.bm25_search_maxscore; a
 * chunk's contributions are summed in the order of the terms given, so its score is
 * deterministic. Ties: lower chunk_id first.
 */
#include "postgres.h"

/* The result set is materialised with InitMaterializedSRF, new in PostgreSQL 15. */
#if PG_VERSION_NUM < 150000
#error "atlas_bm25 needs PostgreSQL 15 or later (it uses InitMaterializedSRF, new in 15)"
#endif

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(atlas_bm25_top_k);

#define EMPTY_SLOT PG_INT64_MIN

typedef struct Accumulator
{
	int64	   *ids;
	double	   *scores;
	uint64		mask;			/* capacity - 1; capacity is a power of two */
	uint64		used;
} Accumulator;

typedef struct Hit
{
	int64		id;
	double		score;
} Hit;

static void
accumulator_init(Accumulator *acc, uint64 capacity)
{
	uint64		size = 1024;

	while (size < capacity)
		size <<= 1;
	acc->ids = MemoryContextAllocHuge(CurrentMemoryContext, size * sizeof(int64));
	acc->scores = MemoryContextAllocHuge(CurrentMemoryContext, size * sizeof(double));
	for (uint64 i = 0; i < size; i++)
		acc->ids[i] = EMPTY_SLOT;
	acc->mask = size - 1;
	acc->used = 0;
}

static inline uint64
slot_of(int64 id, uint64 mask)
{
	return ((uint64) id * UINT64CONST(0x9E3779B97F4A7C15)) >> 17 & mask;
}

static void accumulator_add(Accumulator *acc, int64 id, double value);

static void
accumulator_grow(Accumulator *acc)
{
	Accumulator bigger;

	accumulator_init(&bigger, (acc->mask + 1) * 2);
	for (uint64 i = 0; i <= acc->mask; i++)
		if (acc->ids[i] != EMPTY_SLOT)
			accumulator_add(&bigger, acc->ids[i], acc->scores[i]);
	pfree(acc->ids);
	pfree(acc->scores);
	*acc = bigger;
}

static void
accumulator_add(Accumulator *acc, int64 id, double value)
{
	uint64		slot = slot_of(id, acc->mask);

	while (acc->ids[slot] != EMPTY_SLOT && acc->ids[slot] != id)
		slot = (slot + 1) & acc->mask;
	if (acc->ids[slot] == id)
	{
		acc->scores[slot] += value;
		return;
	}
	acc->ids[slot] = id;
	acc->scores[slot] = value;
	if (++acc->used * 2 > acc->mask + 1)
		accumulator_grow(acc);
}

/* Result order: higher score first, then lower chunk id. */
static inline bool
ranks_before(const Hit *a, const Hit *b)
{
	return a->score > b->score || (a->score == b->score && a->id < b->id);
}

static int
compare_hits(const void *a, const void *b)
{
	return ranks_before(a, b) ? -1 : ranks_before(b, a) ? 1 : 0;
}

static int
compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return (x > y) - (x < y);
}

/* Min-heap on rank order: the root is the worst of the k best seen so far. */
static void
heap_sift_down(Hit *heap, int size, int i)
{
	for (;;)
	{
		int			worst = i;
		int			left = 2 * i + 1;
		int			right = left + 1;
		Hit			swap;

		if (left < size && ranks_before(&heap[worst], &heap[left]))
			worst = left;
		if (right < size && ranks_before(&heap[worst], &heap[right]))
			worst = right;
		if (worst == i)
			return;
		swap = heap[i];
		heap[i] = heap[worst];
		heap[worst] = swap;
		i = worst;
	}
}

static void
heap_sift_up(Hit *heap, int i)
{
	while (i > 0)
	{
		int			parent = (i - 1) / 2;
		Hit			swap;

		if (!ranks_before(&heap[parent], &heap[i]))
			return;
		swap = heap[i];
		heap[i] = heap[parent];
		heap[parent] = swap;
		i = parent;
	}
}

static ArrayType *
plain_array(Datum value, Oid element_type, const char *what)
{
	ArrayType  *array = DatumGetArrayTypeP(value);

	if (ARR_ELEMTYPE(array) != element_type || ARR_NDIM(array) > 1 || ARR_HASNULL(array))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("bm25_native_top_k: %s must be a one-dimensional array without NULLs", what)));
	return array;
}

static int
array_length_1d(ArrayType *array)
{
	return ARR_NDIM(array) == 0 ? 0 : ARR_DIMS(array)[0];
}

/*
 * forum.bm25_native_top_k(terms text[], weights float8[], k integer, k1 float8, b float8,
 *                         avgdl float8, allowed bigint[] or NULL)
 *   RETURNS TABLE (chunk_id bigint, score float8), best first.
 */
Datum
atlas_bm25_top_k(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *terms;
	ArrayType  *weight_array;
	float8	   *weights;
	int			term_count;
	int32		k;
	float8		k1,
				b,
				avgdl;
	int64	   *allowed = NULL;
	int			allowed_count = 0;
	Accumulator acc;
	Hit		   *heap;
	int			heap_size = 0;
	Oid			arg_types[1] = {TEXTARRAYOID};
	Datum		arg_values[1];
	int			ret;

	for (int i = 0; i < 6; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("bm25_native_top_k: only the allowed-chunks argument may be NULL")));
	terms = PG_GETARG_ARRAYTYPE_P(0);
	weight_array = plain_array(PG_GETARG_DATUM(1), FLOAT8OID, "weights");
	k = PG_GETARG_INT32(2);
	k1 = PG_GETARG_FLOAT8(3);
	b = PG_GETARG_FLOAT8(4);
	avgdl = PG_GETARG_FLOAT8(5);
	term_count = array_length_1d(weight_array);
	weights = (float8 *) ARR_DATA_PTR(weight_array);
	if (k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bm25_native_top_k: k must be a positive integer, got %d", k)));
	if (ARR_NDIM(terms) > 1 || array_length_1d(terms) != term_count)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bm25_native_top_k: terms and weights must be one-dimensional arrays of equal length")));
	if (!PG_ARGISNULL(6))
	{
		ArrayType  *allowed_array = plain_array(PG_GETARG_DATUM(6), INT8OID, "allowed");

		allowed_count = array_length_1d(allowed_array);
		allowed = palloc(sizeof(int64) * Max(allowed_count, 1));
		memcpy(allowed, ARR_DATA_PTR(allowed_array), sizeof(int64) * allowed_count);
		qsort(allowed, allowed_count, sizeof(int64), compare_int64);
	}

	InitMaterializedSRF(fcinfo, 0);
	if (term_count == 0 || (allowed != NULL && allowed_count == 0))
		return (Datum) 0;

	accumulator_init(&acc, 4096);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "bm25_native_top_k: SPI_connect failed");
	arg_values[0] = PointerGetDatum(terms);
	/* Terms in the caller's order, blocks in chunk order: the summation order is fixed. */
	ret = SPI_execute_with_args(
		"SELECT w.i::integer, b.chunk_ids, b.tfs, b.doc_lens"
		"  FROM unnest($1) WITH ORDINALITY AS w(term, i)"
		"  JOIN forum.bm25_postings b ON b.term = w.term COLLATE \"C\""
		" ORDER BY w.i, b.first_chunk",
		1, arg_types, arg_values, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "bm25_native_top_k: reading postings failed (SPI code %d)", ret);

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		term_index = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
		ArrayType  *ids = plain_array(SPI_getbinval(tuple, desc, 2, &isnull), INT8OID, "chunk_ids");
		ArrayType  *tfs = plain_array(SPI_getbinval(tuple, desc, 3, &isnull), INT4OID, "tfs");
		ArrayType  *lens = plain_array(SPI_getbinval(tuple, desc, 4, &isnull), INT4OID, "doc_lens");
		int			n = array_length_1d(ids);
		const int64 *id_data = (const int64 *) ARR_DATA_PTR(ids);
		const int32 *tf_data = (const int32 *) ARR_DATA_PTR(tfs);
		const int32 *len_data = (const int32 *) ARR_DATA_PTR(lens);
		float8		weight = weights[term_index - 1];

		CHECK_FOR_INTERRUPTS();
		if (array_length_1d(tfs) != n || array_length_1d(lens) != n)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("bm25_native_top_k: a posting block has arrays of different lengths")));
		for (int i = 0; i < n; i++)
		{
			float8		tf = tf_data[i];

			accumulator_add(&acc, id_data[i],
							weight * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * len_data[i] / avgdl))));
		}
	}

	/* A huge k costs no more memory than the chunks found. */
	k = (int32) Min((uint64) k, Max(acc.used, 1));
	heap = palloc(sizeof(Hit) * k);
	for (uint64 slot = 0; slot <= acc.mask; slot++)
	{
		Hit			hit;

		if (acc.ids[slot] == EMPTY_SLOT)
			continue;
		hit.id = acc.ids[slot];
		hit.score = acc.scores[slot];
		if (allowed != NULL &&
			bsearch(&hit.id, allowed, allowed_count, sizeof(int64), compare_int64) == NULL)
			continue;
		if (heap_size < k)
		{
			heap[heap_size] = hit;
			heap_sift_up(heap, heap_size++);
		}
		else if (ranks_before(&hit, &heap[0]))
		{
			heap[0] = hit;
			heap_sift_down(heap, heap_size, 0);
		}
	}
	qsort(heap, heap_size, sizeof(Hit), compare_hits);
	for (int i = 0; i < heap_size; i++)
	{
		Datum		values[2] = {Int64GetDatum(heap[i].id), Float8GetDatum(heap[i].score)};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
