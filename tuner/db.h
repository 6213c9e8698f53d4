/* The record store: what the tuner measured, kept in an SQLite file that
 * survives kill -9, disk full and several tuners at once, and moves
 * between machines as JSON lines.  docs/tuning-db.md describes the schema,
 * the durability choices and the JSON form.
 *
 * A tune_db handle is used by one thread at a time; processes share a file
 * by each opening their own handle.  Functions that can fail return -1 (or
 * 0 for an id) and leave a message in the handle, read with tune_db_error();
 * nothing prints or exits. */
#ifndef TESSEL_TUNER_DB_H
#define TESSEL_TUNER_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The schema this tessel writes, and the newest it can read. */
#define TUNE_DB_SCHEMA_VERSION 5
/* The version of the JSON-lines record form ("tessel_record": 4; versions
 * 1, without "cost_scale", "pick" and "code_key", 2, without "pick" and
 * "code_key", and 3, without "code_key", are read too). */
#define TUNE_DB_JSONL_VERSION 4
/* Room for a trace hash: 16 hex digits and a NUL. */
#define TUNE_HASH_LEN 17
/* Room for a UTC timestamp "2024-05-01T12:34:56.789Z" and a NUL. */
#define TUNE_TIME_LEN 32
/* How long a writer waits for another process's transaction, in ms. */
#define TUNE_DB_BUSY_TIMEOUT_MS 30000
/* How many cost models of one target kind tune_db_save_model keeps. */
#define TUNE_DB_KEEP_MODELS 4

typedef struct tune_db tune_db;
struct sqlite3;

/* One measured candidate.  For writes (tune_db_add_record) the caller owns
 * every pointer and fills: workload_id, target_id, trace, features and
 * nfeatures (NULL/0: none), error_class, and for "ok" records
 * cost_median_s (cost_min_s may be NAN); error_msg, measured_at (NULL: now)
 * and tessel_version (NULL: this tessel) are optional; id and trace_hash
 * are ignored (the hash is always computed from the trace).  For reads
 * every field is set and the strings and features live in "owned", which
 * tune_record_clear() frees; costs of records with an error are NAN. */
typedef struct tune_record {
	int64_t id;
	int64_t workload_id;
	int64_t target_id;
	const char *trace;
	const char *trace_hash;
	const float *features;
	int nfeatures;
	double cost_median_s;
	double cost_min_s;
	double cost_scale;     /* how slow the machine ran the record's batch
	                        * (tuner/control.h); NAN or <= 0: unknown,
	                        * stored as NULL */
	const char *pick;      /* why the search measured it (tuner/search.h,
	                        * TUNE_PICK_*: a lowercase word); NULL:
	                        * unknown */
	const char *code_key;  /* what ran (codegen/compile.h: 32 lowercase
	                        * hex digits); NULL: unknown (not built,
	                        * or measured before schema 5) */
	const char *error_class;
	const char *error_msg;
	const char *measured_at;
	const char *tessel_version;
	double runoff_s;       /* reads: its median in the latest run-off of
	                        * its workload and target when tune_db_best
	                        * chose it as that run-off's winner, else
	                        * NAN; ignored by writes */
	void *owned;
} tune_record;

/* A cost model as stored: "blob" (the model's own serialization, "len"
 * bytes) and "meta" (free text, e.g. JSON of the feature set) are owned by
 * the struct and freed by tune_model_clear(). */
typedef struct tune_model {
	int64_t id;
	char target_kind[32];
	char created_at[TUNE_TIME_LEN];
	int64_t n_records;
	void *blob;
	size_t len;
	char *meta;
} tune_model;

/* Which records an export writes: NULL fields match everything. */
typedef struct tune_db_filter {
	const char *workload_key;
	const char *target;
	bool ok_only;
} tune_db_filter;

/* What an import did: lines read (blank lines included), records added,
 * and records skipped because the database already had them. */
typedef struct tune_db_import_stats {
	int64_t lines;
	int64_t added;
	int64_t skipped;
} tune_db_import_stats;

/* Open the record store at "path", creating it with the current schema
 * when the file is missing or empty.  An existing file must be a tessel
 * record store of a schema this tessel knows; anything else (not SQLite,
 * another application's SQLite database, a newer schema, a damaged file)
 * is refused with the reason in "err" ("errlen" bytes) and the file is left
 * as it was.  The handle runs in WAL mode with synchronous=FULL, foreign
 * keys on, and waits up to TUNE_DB_BUSY_TIMEOUT_MS for other writers.
 * Return NULL on failure. */
tune_db *tune_db_open(const char *path, char *err, size_t errlen);
/* Close "db" (NULL: nothing), rolling back a batch left open. */
void tune_db_close(tune_db *db);
/* Return the message of the last failure on "db" ("" when none). */
const char *tune_db_error(const tune_db *db);
/* Return the path "db" was opened with. */
const char *tune_db_path(const tune_db *db);

/* Write the default store path into "buf" ("len" bytes): $TESSEL_DB, else
 * $XDG_CACHE_HOME/tessel/records.db, else $HOME/.cache/tessel/records.db;
 * for the last two, create the directory.  Return 0, or -1 with errno set
 * (ENOENT when there is no HOME, ENAMETOOLONG when "buf" is too small). */
int tune_db_default_path(char *buf, size_t len);

/* Write the hash of "trace" (FNV-1a 64 over its bytes, 16 lowercase hex
 * digits) into "out".  Records are unique per (workload, target, hash), so
 * callers pass the canonical text (sch_trace_to_text). */
void tune_trace_hash(const char *trace, char out[TUNE_HASH_LEN]);
/* Write the current UTC time as ISO 8601 with milliseconds into "out". */
void tune_db_now(char out[TUNE_TIME_LEN]);

/* The version this build of tessel stores with its records and run-offs:
 * the project's version and the commit it was built from ("0.1.0+"
 * `git describe --always --dirty`, or "0.1.0+unknown"). */
const char *tune_db_build_version(void);
/* Return whether another build than this one measured record "r" (its
 * time may not hold for the code this build generates for its trace). */
bool tune_record_other_build(const tune_record *r);

/* Return the id of the target "description" (the canonical target string)
 * of kind "kind" ("cpu", "cuda", ...), inserting it when new; 0 on error.
 * An existing description keeps the kind it was stored with. */
int64_t tune_db_target(tune_db *db, const char *kind, const char *description);
/* Return the id of the workload "key" (the structural hash), inserting it
 * with "op_text" (the normalized .te text of the bound op) and "flops"
 * (NAN: unknown) when new; 0 on error.  An existing workload is not
 * changed. */
int64_t tune_db_workload(tune_db *db, const char *key, const char *op_text,
	double flops);
/* Return the id of target "description" or workload "key" if stored, 0 if
 * not, -1 on error; never writes. */
int64_t tune_db_find_target(tune_db *db, const char *description);
int64_t tune_db_find_workload(tune_db *db, const char *key);

/* Start a batch on "db": one write transaction (BEGIN IMMEDIATE, waiting
 * for other writers) that tune_db_commit makes durable at once or
 * tune_db_rollback discards.  Open it after measuring, not before: it
 * holds the file's write lock.  Return 0 or -1. */
int tune_db_begin(tune_db *db);
/* Add record "r" to "db", in the open batch or else in a transaction of its
 * own.  A record whose (workload, target, trace hash) is already stored is
 * skipped.  Set "*added" ("added" may be NULL) to whether it was new.
 * Return 0, or -1 when "r" is invalid or the write failed; a failed write
 * rolls the whole batch back, and the batch then refuses further records
 * and its commit fails, so a batch is stored entirely or not at all. */
int tune_db_add_record(tune_db *db, const tune_record *r, bool *added);
/* The same, but a record already stored under the same (workload, target,
 * trace hash) takes the measurement of "r" (costs, features, error,
 * pick, code key, time and tessel version), keeping its id: a program
 * measured again because this build makes other code of it. */
int tune_db_replace_record(tune_db *db, const tune_record *r);
/* Commit the open batch of "db".  Return 0, or -1 (the batch is rolled back
 * and nothing of it is stored). */
int tune_db_commit(tune_db *db);
/* Discard the open batch of "db", if any. */
void tune_db_rollback(tune_db *db);

/* Replace the features of record "record" of "db" with the "n" floats
 * "features" (features computed again by a newer feature version:
 * tuner/record_features.h), in the open batch or else in a transaction
 * of its own.  Return 0, or -1 when "n" is out of range, a value is not
 * finite, there is no such record, or the write failed (which fails the
 * batch as tune_db_add_record does). */
int tune_db_set_features(tune_db *db, int64_t record, const float *features, int n);

/* Return whether "db" holds a record of trace hash "trace_hash" for
 * "workload" on "target" (an error reads as false: measure again). */
bool tune_db_has_record(tune_db *db, int64_t workload, int64_t target,
	const char *trace_hash);
/* Fill "out" with the best record for "workload" on "target": the
 * fastest of the latest run-off (tune_db_add_runoff) by its run-off
 * median (out->runoff_s), when a record ran correctly there; otherwise
 * the "ok" record of lowest median cost (ties: the earliest) that never
 * failed in a run-off (a crash or a wrong result there).  Return 0
 * when found, 1 when there is none, -1 on error.  Release "out" with
 * tune_record_clear. */
int tune_db_best(tune_db *db, int64_t workload, int64_t target,
	tune_record *out);
/* The time of the best record "r" as tune_db_best read it: its run-off
 * median when it won the latest run-off, else its recorded median. */
double tune_record_time(const tune_record *r);

/* Fill "out" (room for "k") with the "ok" records of lowest median cost
 * for "workload" on "target", fastest first (ties: the earliest).
 * Return how many, or -1 on error (nothing to release).  Release each
 * with tune_record_clear. */
int tune_db_fastest(tune_db *db, int64_t workload, int64_t target, int k,
	tune_record *out);

/* What a run-off measured of one record: its median there, or NAN with
 * the error class ("ok" otherwise) of how it failed. */
typedef struct tune_runoff_time {
	int64_t record;
	double median_s;
	const char *error_class;
} tune_runoff_time;

/* Store, in a transaction of its own, a run-off of "workload" on
 * "target" (tuner/runoff.h): the "n" times "times" of records of that
 * workload and target.  From then on tune_db_best chooses among them.
 * Return the run-off's id, 0 on error (nothing of it is stored). */
int64_t tune_db_add_runoff(tune_db *db, int64_t workload, int64_t target,
	const tune_runoff_time *times, int n);
/* Return the number of records of "workload" on "target" (0: any), -1 on
 * error. */
int64_t tune_db_count(tune_db *db, int64_t workload, int64_t target);
/* Free what a read put in "r" and zero it. */
void tune_record_clear(tune_record *r);

/* Called once per record; "r" and what it points to live until the call
 * returns.  Return 0 to go on, anything else to stop. */
typedef int (*tune_record_fn)(const tune_record *r, void *arg);
/* Call "fn"("record", "arg") for every record of "workload" on "target"
 * (0: any) in insertion order, from one consistent snapshot.  "fn" must not
 * write to "db".  Return 0, the first nonzero value "fn" returned, or -1 on
 * error. */
int tune_db_foreach(tune_db *db, int64_t workload, int64_t target,
	tune_record_fn fn, void *arg);

/* Store a cost model for targets of kind "target_kind": "len" bytes at
 * "blob", trained on "n_records" records, with "meta" (may be NULL).  Older
 * models of the kind beyond the newest TUNE_DB_KEEP_MODELS are dropped.
 * Return the new model's id, 0 on error. */
int64_t tune_db_save_model(tune_db *db, const char *target_kind,
	int64_t n_records, const void *blob, size_t len, const char *meta);
/* Fill "out" with the newest model of "target_kind".  Return 0 when found,
 * 1 when there is none, -1 on error.  Release "out" with tune_model_clear. */
int tune_db_load_model(tune_db *db, const char *target_kind, tune_model *out);
void tune_model_clear(tune_model *m);

/* Write the records of "db" that "filter" (NULL: all) selects to "out" as
 * JSON lines (docs/tuning-db.md), oldest first.  Return the number of
 * records written, or -1 (a write error on "out" included). */
int64_t tune_db_export_jsonl(tune_db *db, FILE *out,
	const tune_db_filter *filter);
/* Read JSON lines from "in" ("name" names it in errors) into "db", in one
 * transaction: records already stored are skipped, so importing twice
 * changes nothing.  A malformed line fails the whole import with
 * "NAME:LINE: message" and nothing is written.  Fill "stats" (may be NULL).
 * Return 0 or -1. */
int tune_db_import_jsonl(tune_db *db, FILE *in, const char *name,
	tune_db_import_stats *stats);

/* Return the SQLite connection of "db", for tests and diagnostics;
 * writing through it bypasses every check of this module. */
struct sqlite3 *tune_db_sqlite(tune_db *db);

/* Run PRAGMA integrity_check on "db".  Return 0 when it says "ok", else -1
 * with its first complaint as the error. */
int tune_db_check(tune_db *db);

#endif
