/*
 * forum.bm25_native_top_k: the exact BM25 top-k of forum.bm25_search_maxscore, as one C function; the
 * module of the atlas_bm25 extension (atlas_bm25.control, atlas_bm25--*.sql, built by this folder's
 * PGXS Makefile; `atlas db install-kernel` builds and installs it).
 *
 * The PL/pgSQL search pays ~1.5 us of executor work per posting; here a posting costs a few
 * nanoseconds, but reading every posting of every query term still grows with the corpus (a common
 * term of a 1M-chunk corpus has ~100k postings, in TOASTed blocks). So the kernel prunes as the
 * PL/pgSQL search does (MaxScore, Turtle & Flood 1995): terms are read in the order given, which the
 * caller makes decreasing in their bound (the largest contribution the term can add to any chunk);
 * once the k-th best partial score exceeds the unread terms' bound sum, no chunk outside the
 * candidates can reach the top k, and only the candidates that still can ("survivors") are followed:
 * later terms' postings add to them alone (which raises the k-th score and thins them out again),
 * until completing them from the forward index forum.bm25_forward is cheaper than reading the next
 * posting list. The bounds carry the same floating-point margin as the PL/pgSQL search's, so the
 * result is exact: the same chunks, in the same order, as reading everything.
 *
 * Same per-posting formula, in the same operation order, as forum.bm25_search_maxscore. A chunk's
 * contributions are always summed in the order of the terms given (left to right, absent terms
 * skipped), whether they come from postings or from the forward index: its score does not depend
 * on when pruning set in. Ties: lower chunk_id first.
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
#include "utils/memutils.h"
#include "utils/tuplestore.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(atlas_bm25_top_k_maxscore);
PG_FUNCTION_INFO_V1(atlas_bm25_top_k);

#define EMPTY_SLOT PG_INT64_MIN

/*
 * What following the survivors costs, in nanoseconds (measured on the 100k bench corpus, warm): a
 * forward-index row per survivor (an index probe and a heap page, ~5 us), against the next term's
 * postings (~50 ns each, mostly decompressing TOASTed blocks; every block is read, survivors or not).
 */
#define FORWARD_ROW_COST 5000.0
#define POSTING_COST 50.0

typedef struct Accumulator
{
	MemoryContext context;		/* where the slots live (postings are read in a shorter one) */
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

/* One call's arguments. */
typedef struct SearchQuery
{
	int			term_count;
	Datum	   *terms;			/* text, in summation (and reading) order */
	const float8 *weights;		/* qtf * idf */
	const float8 *bounds;		/* weight * the term's largest saturated tf; NULL: none (1.0) */
	const int32 *dfs;			/* postings per term; NULL with bounds */
	int32		k;
	float8		k1,
				b,
				avgdl;
	int64	   *allowed;		/* sorted chunk ids a filter admits, or NULL for all */
	int			allowed_count;
} SearchQuery;

static void
accumulator_init(Accumulator *acc, MemoryContext context, uint64 capacity)
{
	uint64		size = 1024;

	while (size < capacity)
		size <<= 1;
	acc->context = context;
	acc->ids = MemoryContextAllocHuge(context, size * sizeof(int64));
	acc->scores = MemoryContextAllocHuge(context, size * sizeof(double));
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

	accumulator_init(&bigger, acc->context, (acc->mask + 1) * 2);
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

/* The slot holding id, or -1. */
static inline int64
accumulator_find(const Accumulator *acc, int64 id)
{
	uint64		slot = slot_of(id, acc->mask);

	while (acc->ids[slot] != EMPTY_SLOT)
	{
		if (acc->ids[slot] == id)
			return (int64) slot;
		slot = (slot + 1) & acc->mask;
	}
	return -1;
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

/* The k best entries of acc into heap (a min-heap: heap[0] is the k-th best); returns how many. */
static int
top_k(const Accumulator *acc, Hit *heap, int k)
{
	int			size = 0;

	for (uint64 slot = 0; slot <= acc->mask; slot++)
	{
		Hit			hit;

		if (acc->ids[slot] == EMPTY_SLOT)
			continue;
		hit.id = acc->ids[slot];
		hit.score = acc->scores[slot];
		if (size < k)
		{
			heap[size] = hit;
			heap_sift_up(heap, size++);
		}
		else if (ranks_before(&hit, &heap[0]))
		{
			heap[0] = hit;
			heap_sift_down(heap, size, 0);
		}
	}
	return size;
}

/* One posting's contribution: the expression (and operation order) of forum.bm25_term_score. */
static inline float8
contribution(const SearchQuery *q, float8 weight, float8 tf, int32 doc_len)
{
	return weight * (tf * (q->k1 + 1) / (tf + q->k1 * (1 - q->b + q->b * doc_len / q->avgdl)));
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
 * Adds term t's postings to acc. With only_existing, a posting counts only for a chunk acc already
 * holds (completing survivors); otherwise for every chunk the filter admits. Returns the postings read.
 */
static uint64
read_term(const SearchQuery *q, SPIPlanPtr plan, int t, Accumulator *acc, bool only_existing,
		  MemoryContext scratch)
{
	Datum		arg[1] = {q->terms[t]};
	float8		weight = q->weights[t];
	uint64		read = 0;
	int			ret = SPI_execute_plan(plan, arg, NULL, true, 0);
	MemoryContext caller;

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "bm25_native_top_k: reading postings failed (SPI code %d)", ret);
	/* Detoasted blocks go to scratch, reset after each term (SPI returns in its own context). */
	caller = MemoryContextSwitchTo(scratch);
	/* Blocks in chunk order: each chunk gets at most one posting per term. */
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		ArrayType  *ids = plain_array(SPI_getbinval(tuple, desc, 1, &isnull), INT8OID, "chunk_ids");
		ArrayType  *tfs = plain_array(SPI_getbinval(tuple, desc, 2, &isnull), INT4OID, "tfs");
		ArrayType  *lens = plain_array(SPI_getbinval(tuple, desc, 3, &isnull), INT4OID, "doc_lens");
		int			n = array_length_1d(ids);
		const int64 *id_data = (const int64 *) ARR_DATA_PTR(ids);
		const int32 *tf_data = (const int32 *) ARR_DATA_PTR(tfs);
		const int32 *len_data = (const int32 *) ARR_DATA_PTR(lens);

		CHECK_FOR_INTERRUPTS();
		if (array_length_1d(tfs) != n || array_length_1d(lens) != n)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("bm25_native_top_k: a posting block has arrays of different lengths")));
		read += n;
		for (int i = 0; i < n; i++)
		{
			if (only_existing)
			{
				int64		slot = accumulator_find(acc, id_data[i]);

				if (slot >= 0)
					acc->scores[slot] += contribution(q, weight, tf_data[i], len_data[i]);
			}
			else if (q->allowed == NULL ||
					 bsearch(&id_data[i], q->allowed, q->allowed_count, sizeof(int64), compare_int64) != NULL)
				accumulator_add(acc, id_data[i], contribution(q, weight, tf_data[i], len_data[i]));
		}
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	MemoryContextReset(scratch);
	return read;
}

/*
 * Completes the survivors' scores with terms first..term_count-1 from their forward-index rows, in
 * term order, as read_term would have added them.
 */
static void
complete_from_forward(const SearchQuery *q, int first, Accumulator *survivors, MemoryContext scratch)
{
	Oid			arg_types[1] = {INT8ARRAYOID};
	Datum		arg[1];
	Datum	   *ids = palloc(sizeof(Datum) * survivors->used);
	int			n = 0;
	int			ret;
	MemoryContext caller;

	for (uint64 slot = 0; slot <= survivors->mask; slot++)
		if (survivors->ids[slot] != EMPTY_SLOT)
			ids[n++] = Int64GetDatum(survivors->ids[slot]);
	arg[0] = PointerGetDatum(construct_array(ids, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	ret = SPI_execute_with_args("SELECT chunk_id, doc_len, terms, tfs FROM forum.bm25_forward"
								" WHERE chunk_id = ANY ($1)", 1, arg_types, arg, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "bm25_native_top_k: reading the forward index failed (SPI code %d)", ret);
	caller = MemoryContextSwitchTo(scratch);
	if (SPI_processed != (uint64) n)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("bm25_native_top_k: forum.bm25_forward holds %llu of %d searchable chunks asked for",
						(unsigned long long) SPI_processed, n)));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(tuple, desc, 1, &isnull));
		int32		doc_len = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
		ArrayType  *terms = plain_array(SPI_getbinval(tuple, desc, 3, &isnull), TEXTOID, "forward terms");
		ArrayType  *tfs = plain_array(SPI_getbinval(tuple, desc, 4, &isnull), INT4OID, "forward tfs");
		const int32 *tf_data = (const int32 *) ARR_DATA_PTR(tfs);
		int64		slot = accumulator_find(survivors, id);
		Datum	   *chunk_terms;
		int			chunk_term_count;

		deconstruct_array(terms, TEXTOID, -1, false, TYPALIGN_INT, &chunk_terms, NULL, &chunk_term_count);
		if (array_length_1d(tfs) != chunk_term_count || slot < 0)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("bm25_native_top_k: a forward-index row does not match the query")));
		for (int t = first; t < q->term_count; t++)
		{
			text	   *term = DatumGetTextPP(q->terms[t]);
			int			term_len = VARSIZE_ANY_EXHDR(term);

			/* Terms compare bytewise (COLLATE "C"): equal bytes, equal terms. */
			for (int i = 0; i < chunk_term_count; i++)
			{
				text	   *chunk_term = (text *) DatumGetPointer(chunk_terms[i]);

				if (VARSIZE_ANY_EXHDR(chunk_term) == term_len &&
					memcmp(VARDATA_ANY(chunk_term), VARDATA_ANY(term), term_len) == 0)
				{
					survivors->scores[slot] += contribution(q, q->weights[t], tf_data[i], doc_len);
					break;
				}
			}
		}
	}
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(caller);
	MemoryContextReset(scratch);
}

/* Keeps the entries of *acc whose score + rest_bound reaches theta; frees the rest. */
static void
accumulator_keep_reaching(Accumulator *acc, float8 rest_bound, float8 theta)
{
	Accumulator kept;

	accumulator_init(&kept, acc->context, 1024);
	for (uint64 slot = 0; slot <= acc->mask; slot++)
		if (acc->ids[slot] != EMPTY_SLOT && acc->scores[slot] + rest_bound >= theta)
			accumulator_add(&kept, acc->ids[slot], acc->scores[slot]);
	pfree(acc->ids);
	pfree(acc->scores);
	*acc = kept;
}

/*
 * The top k of the query, best first, into *result; returns how many. Reads the terms in order; after
 * each, once the k-th best partial score (theta) exceeds the unread terms' bound sum, only the
 * candidates within that sum of theta stay ("survivors": no other chunk can reach the top k). Each
 * later term then only adds to survivors, which raises theta and shrinks the survivors again, until
 * completing them from the forward index costs less than reading the next term's postings.
 */
static int
search(const SearchQuery *q, Hit **result)
{
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "bm25_native_top_k postings",
												  ALLOCSET_DEFAULT_SIZES);
	Oid			arg_types[1] = {TEXTOID};
	SPIPlanPtr	plan;
	Accumulator acc;			/* every chunk read so far; once pruning set in, the survivors */
	bool		monotone;
	bool		pruned = false;
	int			full_terms = 0,
				survivor_terms = 0,
				forward_terms = 0;
	uint64		postings_read = 0;
	Hit		   *heap = NULL;
	int			size;

	/*
	 * Without bounds (1.0's signature) nothing can be pruned. A negative weight (the idf floor can be
	 * negative) lowers scores: bounds prove nothing then either.
	 */
	monotone = q->bounds != NULL;
	for (int t = 0; t < q->term_count; t++)
		monotone = monotone && q->weights[t] >= 0;
	accumulator_init(&acc, CurrentMemoryContext, 4096);
	plan = SPI_prepare("SELECT chunk_ids, tfs, doc_lens FROM forum.bm25_postings"
					   " WHERE term = $1 COLLATE \"C\" ORDER BY first_chunk", 1, arg_types);
	if (plan == NULL)
		elog(ERROR, "bm25_native_top_k: preparing the postings query failed (SPI code %d)", SPI_result);

	for (int t = 0; t < q->term_count; t++)
	{
		float8		rest_bound = 0;

		postings_read += read_term(q, plan, t, &acc, pruned, scratch);
		if (pruned)
			survivor_terms++;
		else
			full_terms++;
		if (t == q->term_count - 1 || !monotone || acc.used < (uint64) q->k)
			continue;
		for (int u = t + 1; u < q->term_count; u++)
			rest_bound += q->bounds[u];
		/* The margin, far above rounding error, keeps the pruning exact in floating point. */
		rest_bound = rest_bound * (1 + 1e-9) + 1e-12;
		if (heap == NULL)
			heap = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Hit) * q->k);	/* k <= chunks found */
		top_k(&acc, heap, q->k);
		if (!(rest_bound < heap[0].score))
			continue;
		accumulator_keep_reaching(&acc, rest_bound, heap[0].score);
		pruned = true;
		if (FORWARD_ROW_COST * acc.used <= POSTING_COST * q->dfs[t + 1])
		{
			complete_from_forward(q, t + 1, &acc, scratch);
			forward_terms = q->term_count - t - 1;
			break;
		}
	}
	elog(DEBUG1, "bm25_native_top_k: %d of %d terms read in full, %d for survivors only, %d from the forward "
		 "index; %llu postings read, %llu chunks kept", full_terms, q->term_count, survivor_terms, forward_terms,
		 (unsigned long long) postings_read, (unsigned long long) acc.used);
	/* A huge k costs no more memory than the chunks found. */
	if (heap == NULL)
		heap = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Hit) * Min((uint64) q->k, Max(acc.used, 1)));
	size = top_k(&acc, heap, q->k);
	qsort(heap, size, sizeof(Hit), compare_hits);
	*result = heap;
	return size;
}

/*
 * Both entry points: with_bounds for 1.1's signature (bounds and dfs after the weights), else 1.0's,
 * which has neither and so reads every posting.
 */
static Datum
top_k_call(FunctionCallInfo fcinfo, bool with_bounds)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			shift = with_bounds ? 2 : 0;	/* the arguments after weights move by two */
	ArrayType  *terms;
	ArrayType  *weights;
	SearchQuery q;
	Hit		   *heap;
	int			size;

	for (int i = 0; i < 6 + shift; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("bm25_native_top_k: only the allowed-chunks argument may be NULL")));
	memset(&q, 0, sizeof(q));
	terms = plain_array(PG_GETARG_DATUM(0), TEXTOID, "terms");
	weights = plain_array(PG_GETARG_DATUM(1), FLOAT8OID, "weights");
	q.term_count = array_length_1d(terms);
	q.weights = (const float8 *) ARR_DATA_PTR(weights);
	if (array_length_1d(weights) != q.term_count)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bm25_native_top_k: terms, weights, bounds and dfs must be arrays of equal length")));
	if (with_bounds)
	{
		ArrayType  *bounds = plain_array(PG_GETARG_DATUM(2), FLOAT8OID, "bounds");
		ArrayType  *dfs = plain_array(PG_GETARG_DATUM(3), INT4OID, "dfs");

		if (array_length_1d(bounds) != q.term_count || array_length_1d(dfs) != q.term_count)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bm25_native_top_k: terms, weights, bounds and dfs must be arrays of equal length")));
		q.bounds = (const float8 *) ARR_DATA_PTR(bounds);
		q.dfs = (const int32 *) ARR_DATA_PTR(dfs);
	}
	q.k = PG_GETARG_INT32(2 + shift);
	q.k1 = PG_GETARG_FLOAT8(3 + shift);
	q.b = PG_GETARG_FLOAT8(4 + shift);
	q.avgdl = PG_GETARG_FLOAT8(5 + shift);
	if (q.k < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bm25_native_top_k: k must be a positive integer, got %d", q.k)));
	deconstruct_array(terms, TEXTOID, -1, false, TYPALIGN_INT, &q.terms, NULL, &q.term_count);
	if (!PG_ARGISNULL(6 + shift))
	{
		ArrayType  *allowed = plain_array(PG_GETARG_DATUM(6 + shift), INT8OID, "allowed");

		q.allowed_count = array_length_1d(allowed);
		q.allowed = palloc(sizeof(int64) * Max(q.allowed_count, 1));
		memcpy(q.allowed, ARR_DATA_PTR(allowed), sizeof(int64) * q.allowed_count);
		qsort(q.allowed, q.allowed_count, sizeof(int64), compare_int64);
	}

	InitMaterializedSRF(fcinfo, 0);
	if (q.term_count == 0 || (q.allowed != NULL && q.allowed_count == 0))
		return (Datum) 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "bm25_native_top_k: SPI_connect failed");
	size = search(&q, &heap);
	for (int i = 0; i < size; i++)
	{
		Datum		values[2] = {Int64GetDatum(heap[i].id), Float8GetDatum(heap[i].score)};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * forum.bm25_native_top_k(terms text[], weights float8[], bounds float8[], dfs integer[], k integer,
 *                         k1 float8, b float8, avgdl float8, allowed bigint[] or NULL)
 *   RETURNS TABLE (chunk_id bigint, score float8), best first.
 * Terms are read, and each chunk's contributions summed, in the order given; pruning pays when the
 * bounds decrease along it.
 */
Datum
atlas_bm25_top_k_maxscore(PG_FUNCTION_ARGS)
{
	return top_k_call(fcinfo, true);
}

/*
 * 1.0's forum.bm25_native_top_k(terms, weights, k, k1, b, avgdl, allowed), without pruning. Every
 * database of a server loads this one library: one still at 1.0 (until `atlas db install-kernel` or an
 * embedded open updates it) keeps a working function, and 1.0's install script (the first step of
 * CREATE EXTENSION ... VERSION '1.1' without a 1.1 script) still finds its entry point.
 */
Datum
atlas_bm25_top_k(PG_FUNCTION_ARGS)
{
	return top_k_call(fcinfo, false);
}
