/* Tests of the record store (tuner/db.c): files it must refuse and leave
 * alone, records, best and resume, cost models, JSON-lines export and
 * import, and the durability promises: kill -9 in the middle of batches,
 * two writers on one file, and a full disk. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tuner/db.h"
#include "tests/support.h"

#define ERR_LEN 512
#define PATH_LEN 1024
#define BATCH 100

/* Kill this test's process if it runs longer than "seconds": a deadlock
 * must fail, not hang the suite. */
static void fail_if_hung(unsigned seconds)
{
	alarm(seconds);
}

/* ---- helpers ---- */

static tune_db *open_ok(const char *path)
{
	char err[ERR_LEN] = "";
	tune_db *db = tune_db_open(path, err, sizeof err);
	cr_assert_not_null(db, "open %s: %s", path, err);
	return db;
}

/* Run "sql" on "path" with plain SQLite, outside the store. */
static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *s = NULL;
	cr_assert_eq(sqlite3_open(path, &s), SQLITE_OK);
	char *msg = NULL;
	int rc = sqlite3_exec(s, sql, NULL, NULL, &msg);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
	sqlite3_close(s);
}

/* Return the integer result of "sql" on "path" with plain SQLite. */
static int64_t raw_query_int(const char *path, const char *sql)
{
	sqlite3 *s = NULL;
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_open(path, &s), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(s, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(s);
	return v;
}

/* Return the integer result of "sql" on the connection of "db". */
static int64_t query_int(tune_db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_prepare_v2(tune_db_sqlite(db), sql, -1, &st, NULL),
		SQLITE_OK, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* A file's bytes and modification time. */
typedef struct snapshot {
	char *bytes;
	size_t len;
	struct timespec mtime;
} snapshot;

static snapshot take_snapshot(const char *path)
{
	snapshot s = { 0 };
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	s.mtime = st.st_mtim;
	s.len = (size_t)st.st_size;
	s.bytes = malloc(s.len + 1);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(s.bytes, 1, s.len, f), s.len);
	fclose(f);
	return s;
}

/* Assert that "path" still has the bytes and time of "before"; free it. */
static void assert_unchanged(const char *path, snapshot *before)
{
	snapshot now = take_snapshot(path);
	cr_assert_eq(now.len, before->len, "%s changed size", path);
	cr_assert(memcmp(now.bytes, before->bytes, now.len) == 0, "%s changed", path);
	cr_assert(now.mtime.tv_sec == before->mtime.tv_sec
		&& now.mtime.tv_nsec == before->mtime.tv_nsec, "%s was written", path);
	free(now.bytes);
	free(before->bytes);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* Open "path" expecting a refusal whose message contains "want"; the file
 * must be left exactly as it was. */
static void assert_refused(const char *path, const char *want)
{
	snapshot before = take_snapshot(path);
	char err[ERR_LEN] = "";
	tune_db *db = tune_db_open(path, err, sizeof err);
	cr_assert_null(db, "%s opened", path);
	cr_assert(strstr(err, want), "want \"%s\" in: %s", want, err);
	cr_assert(strstr(err, path), "the error names the file: %s", err);
	assert_unchanged(path, &before);
}

/* Fill "r" as an "ok" record of "trace" for "w" on "t" costing "cost". */
static tune_record ok_record(int64_t w, int64_t t, const char *trace,
	double cost)
{
	tune_record r = {
		.workload_id = w,
		.target_id = t,
		.trace = trace,
		.cost_median_s = cost,
		.cost_min_s = cost * 0.9,
		.error_class = "ok",
	};
	return r;
}

/* Store "n" ok records "TAG/B/I" as batch "b" of "db"; return 0 or -1. */
static int add_batch(tune_db *db, int64_t w, int64_t t, const char *tag,
	int b, int n)
{
	if (tune_db_begin(db) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char trace[128];
		snprintf(trace, sizeof trace, "split C.i %d -> %s/%d/%d", i + 1, tag, b, i);
		tune_record r = ok_record(w, t, trace, 1e-3 + i * 1e-6);
		if (tune_db_add_record(db, &r, NULL) < 0)
			return -1;
	}
	return tune_db_commit(db);
}

/* ---- opening ---- */

TestSuite(db, .init = test_scratch_make, .fini = test_scratch_remove);

Test(db, create_and_reopen)
{
	char path[PATH_LEN];
	test_scratch_file(path, sizeof path, "r.db");
	tune_db *db = open_ok(path);
	cr_assert_str_eq(tune_db_path(db), path);
	int64_t t = tune_db_target(db, "cpu", "cpu -isa=avx2 -cores=2");
	int64_t w = tune_db_workload(db, "00ab", "op text", 2e6);
	cr_assert(t > 0 && w > 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_target(db, "cpu", "cpu -isa=avx2 -cores=2"), t);
	cr_assert_eq(tune_db_workload(db, "00ab", "other text", 1), w);
	cr_assert_eq(query_int(db, "PRAGMA application_id"), 0x54534c52);
	cr_assert_eq(query_int(db, "PRAGMA user_version"), TUNE_DB_SCHEMA_VERSION);
	cr_assert_eq(query_int(db, "PRAGMA foreign_keys"), 1);
	cr_assert_eq(query_int(db, "PRAGMA synchronous"), 2);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM meta WHERE "
		"key = 'schema_version' AND value = '5'"), 1);
	tune_db_close(db);
	db = open_ok(path);
	cr_assert_eq(tune_db_find_target(db, "cpu -isa=avx2 -cores=2"), t);
	cr_assert_eq(tune_db_find_workload(db, "00ab"), w);
	cr_assert_eq(tune_db_find_workload(db, "ffff"), 0);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	sqlite3_stmt *st = NULL;
	sqlite3_prepare_v2(tune_db_sqlite(db), "PRAGMA journal_mode", -1, &st, NULL);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	tune_db_close(db);
}

Test(db, empty_file_becomes_a_store)
{
	char path[PATH_LEN];
	write_file(test_scratch_file(path, sizeof path, "empty.db"), "", 0);
	tune_db *db = open_ok(path);
	cr_assert_eq(tune_db_count(db, 0, 0), 0);
	tune_db_close(db);
}

Test(db, bad_names_are_refused)
{
	char path[PATH_LEN], err[ERR_LEN];
	cr_assert_null(tune_db_open("", err, sizeof err));
	cr_assert_null(tune_db_open(test_scratch_dir(), err, sizeof err));
	cr_assert(strstr(err, "not a regular file"), "%s", err);
	cr_assert_null(tune_db_open(test_scratch_file(path, sizeof path, "no/such/dir.db"), err,
		sizeof err));
	cr_assert(strstr(err, "cannot open"), "%s", err);
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	cr_assert_eq(tune_db_target(db, "CPU!", "x"), 0);
	cr_assert(strstr(tune_db_error(db), "invalid target"), "%s", tune_db_error(db));
	cr_assert_eq(tune_db_target(db, "cpu", ""), 0);
	cr_assert_eq(tune_db_workload(db, "has space", "op", 1), 0);
	cr_assert_eq(tune_db_workload(db, "k", "", 1), 0);
	tune_db_close(db);
}

Test(db, newer_schema_is_refused_untouched)
{
	char path[PATH_LEN];
	tune_db_close(open_ok(test_scratch_file(path, sizeof path, "r.db")));
	raw_exec(path, "UPDATE meta SET value = '7' WHERE key = 'schema_version'");
	assert_refused(path, "has schema version 7, newer than this tessel (5); "
		"refusing");
}

/* Make the store at "path", holding one record, look like schema
 * "version" (1: without records.cost_scale, records.pick, the run-off
 * tables and records.code_key, 2: without the last three, 3: without the
 * last two, 4: without records.code_key);
 * return the record's workload and target in "w", "t". */
static void old_store(const char *path, int version, int64_t *w, int64_t *t)
{
	tune_db *db = open_ok(path);
	*t = tune_db_target(db, "cpu", "cpu -isa=avx512");
	*w = tune_db_workload(db, "w1", "op", NAN);
	tune_record r = ok_record(*w, *t, "split C.i 4 -> C.io C.ii", 2e-3);
	cr_assert_eq(tune_db_add_record(db, &r, NULL), 0, "%s", tune_db_error(db));
	tune_db_close(db);
	char sql[512];
	snprintf(sql, sizeof sql, "ALTER TABLE records DROP COLUMN code_key; %s%s%s"
		"UPDATE meta SET value = '%d' WHERE key = 'schema_version'; "
		"PRAGMA user_version = %d",
		version <= 3 ? "DROP TABLE runoff_times; DROP TABLE runoffs; " : "",
		version <= 2 ? "ALTER TABLE records DROP COLUMN pick; " : "",
		version == 1 ? "ALTER TABLE records DROP COLUMN cost_scale; " : "",
		version, version);
	raw_exec(path, sql);
}

/* Open the old store at "path" (one record, from old_store) and check it
 * is now of the current schema, its record read with what it lacked
 * unknown and a new record storing both. */
static void expect_migrated(const char *path, int64_t w, int64_t t)
{
	tune_db *db = open_ok(path);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM meta WHERE "
		"key = 'schema_version' AND value = '5'"), 1);
	cr_assert_eq(query_int(db, "PRAGMA user_version"), 5);
	tune_record best;
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_assert_str_eq(best.trace, "split C.i 4 -> C.io C.ii");
	cr_assert_null(best.pick, "an old record has no pick");
	cr_assert_null(best.code_key, "an old record has no code key");
	tune_record_clear(&best);
	tune_record s = ok_record(w, t, "split C.i 8 -> C.io C.ii", 1e-3);
	s.cost_scale = 0.96;
	s.pick = "random";
	s.code_key = "0123456789abcdef0123456789abcdef";
	cr_assert_eq(tune_db_add_record(db, &s, NULL), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_assert_eq(best.cost_scale, 0.96);
	cr_assert_str_eq(best.pick, "random");
	cr_assert_str_eq(best.code_key, "0123456789abcdef0123456789abcdef");
	int64_t old_id = best.id - 1;
	tune_record_clear(&best);
	tune_runoff_time times[] = { { old_id, 1.5e-3, "ok" } };
	cr_assert_neq(tune_db_add_runoff(db, w, t, times, 1), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_assert_eq(best.id, old_id, "the run-off tables work");
	tune_record_clear(&best);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	tune_db_close(db);
}

/* A store of schema "version", which lacks "missing" of the columns
 * cost_scale and pick, and the run-off tables unless it is of version 4,
 * is migrated on opening. */
static void expect_version_migrated(int version, int missing)
{
	char path[PATH_LEN];
	int64_t w, t;
	old_store(test_scratch_file(path, sizeof path, "old.db"), version, &w, &t);
	cr_assert_eq(raw_query_int(path, "SELECT count(*) FROM pragma_table_info('records') "
		"WHERE name IN ('cost_scale', 'pick', 'code_key')"), 2 - missing);
	cr_assert_eq(raw_query_int(path, "SELECT count(*) FROM sqlite_master WHERE "
		"name LIKE 'runoff%'"), version == 4 ? 3 : 0);
	expect_migrated(path, w, t);
}

Test(db, version_1_store_is_migrated)
{
	expect_version_migrated(1, 2);
}

Test(db, version_2_store_is_migrated)
{
	expect_version_migrated(2, 1);
}

Test(db, version_3_store_is_migrated)
{
	expect_version_migrated(3, 0);
}

Test(db, version_4_store_is_migrated)
{
	expect_version_migrated(4, 0);
}

Test(db, damaged_schema_version_is_refused)
{
	char path[PATH_LEN];
	tune_db_close(open_ok(test_scratch_file(path, sizeof path, "r.db")));
	raw_exec(path, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'");
	assert_refused(path, "no valid schema version");
}

Test(db, text_file_is_refused_untouched)
{
	char path[PATH_LEN];
	const char text[] = "these are my notes, not a database\n";
	write_file(test_scratch_file(path, sizeof path, "notes.txt"), text, sizeof text - 1);
	assert_refused(path, "is not an SQLite database");
}

Test(db, damaged_sqlite_file_is_refused_untouched)
{
	char path[PATH_LEN];
	unsigned char junk[8192];
	unsigned seed = 7;
	memcpy(junk, "SQLite format 3", 16);
	for (size_t i = 16; i < sizeof junk; i++)
		junk[i] = (unsigned char)(rand_r(&seed) >> 5);
	write_file(test_scratch_file(path, sizeof path, "junk.db"), junk, sizeof junk);
	snapshot before = take_snapshot(path);
	char err[ERR_LEN] = "";
	cr_assert_null(tune_db_open(path, err, sizeof err));
	cr_assert(strstr(err, path), "%s", err);
	assert_unchanged(path, &before);
}

Test(db, foreign_sqlite_is_refused_untouched)
{
	char path[PATH_LEN];
	raw_exec(test_scratch_file(path, sizeof path, "other.db"),
		"CREATE TABLE songs(title TEXT, seconds INTEGER);"
		"INSERT INTO songs VALUES ('a', 1), ('b', 2)");
	assert_refused(path, "another application");
	raw_exec(test_scratch_file(path, sizeof path, "versioned.db"), "PRAGMA user_version = 3");
	assert_refused(path, "another application");
	raw_exec(test_scratch_file(path, sizeof path, "lookalike.db"), "PRAGMA application_id = "
		"1414745170; CREATE TABLE meta(key TEXT, value TEXT)");
	assert_refused(path, "another application");
}

Test(db, default_path_order)
{
	char buf[PATH_LEN], want[PATH_LEN + 32];
	setenv("TESSEL_DB", "/somewhere/mine.db", 1);
	cr_assert_eq(tune_db_default_path(buf, sizeof buf), 0);
	cr_assert_str_eq(buf, "/somewhere/mine.db");
	unsetenv("TESSEL_DB");
	setenv("XDG_CACHE_HOME", test_scratch_dir(), 1);
	cr_assert_eq(tune_db_default_path(buf, sizeof buf), 0);
	snprintf(want, sizeof want, "%s/tessel/records.db", test_scratch_dir());
	cr_assert_str_eq(buf, want);
	struct stat st;
	cr_assert_eq(stat(test_scratch_file(want, sizeof want, "tessel"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", test_scratch_dir(), 1);
	cr_assert_eq(tune_db_default_path(buf, sizeof buf), 0);
	snprintf(want, sizeof want, "%s/.cache/tessel/records.db", test_scratch_dir());
	cr_assert_str_eq(buf, want);
	cr_assert_eq(stat(test_scratch_file(want, sizeof want, ".cache/tessel"), &st), 0);
	cr_assert_eq(tune_db_default_path(buf, 8), -1);
	cr_assert_eq(errno, ENAMETOOLONG);
	unsetenv("HOME");
	cr_assert_eq(tune_db_default_path(buf, sizeof buf), -1);
}

Test(db, trace_hash_is_fnv1a)
{
	char h[TUNE_HASH_LEN];
	tune_trace_hash("", h);
	cr_assert_str_eq(h, "cbf29ce484222325");
	tune_trace_hash("a", h);
	cr_assert_str_eq(h, "af63dc4c8601ec8c");
	char now[TUNE_TIME_LEN];
	tune_db_now(now);
	cr_assert_eq(strlen(now), 24);
	cr_assert_eq(now[10], 'T');
	cr_assert_eq(now[23], 'Z');
}

/* ---- records ---- */

typedef struct collected {
	int n;
	int stop_after;
	char traces[8][64];
	int nfeatures[8];
	float first_feature[8];
	double median[8];
	char error[8][16];
	char msg[8][64];
} collected;

static int collect(const tune_record *r, void *arg)
{
	collected *c = arg;
	if (c->n < 8) {
		snprintf(c->traces[c->n], 64, "%s", r->trace);
		c->nfeatures[c->n] = r->nfeatures;
		c->first_feature[c->n] = r->nfeatures ? r->features[0] : 0;
		c->median[c->n] = r->cost_median_s;
		snprintf(c->error[c->n], 16, "%s", r->error_class);
		snprintf(c->msg[c->n], 64, "%s", r->error_msg);
	}
	c->n++;
	return c->stop_after && c->n >= c->stop_after ? 42 : 0;
}

Test(db, records_round_trip_and_resume)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu -isa=avx512");
	int64_t w = tune_db_workload(db, "w1", "op", NAN);
	float feats[3] = { 1.5f, -2.25f, 1e-30f };
	tune_record a = ok_record(w, t, "split C.i 8 -> C.io C.ii\n", 2e-3);
	a.features = feats;
	a.nfeatures = 3;
	a.measured_at = "2024-05-01T12:00:00.125Z";
	a.cost_scale = 1.25;
	a.pick = "model";
	a.code_key = "00112233445566778899aabbccddeeff";
	tune_record b = {
		.workload_id = w, .target_id = t, .trace = "bad trace",
		.cost_median_s = 5, .cost_min_s = 5, .error_class = "runtime",
		.error_msg = "killed by signal 11",
	};
	bool added = false;
	cr_assert_eq(tune_db_begin(db), 0);
	cr_assert_eq(tune_db_add_record(db, &a, &added), 0, "%s", tune_db_error(db));
	cr_assert(added);
	cr_assert_eq(tune_db_add_record(db, &b, &added), 0, "%s", tune_db_error(db));
	cr_assert(added);
	cr_assert_eq(tune_db_add_record(db, &a, &added), 0);
	cr_assert_not(added, "a duplicate is skipped");
	cr_assert_eq(tune_db_commit(db), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_add_record(db, &b, &added), 0);
	cr_assert_not(added, "a duplicate outside a batch is skipped too");
	tune_db_close(db);

	db = open_ok(path);
	char hash[TUNE_HASH_LEN];
	tune_trace_hash(a.trace, hash);
	cr_assert(tune_db_has_record(db, w, t, hash));
	cr_assert_not(tune_db_has_record(db, w, t, "0000000000000000"));
	cr_assert_not(tune_db_has_record(db, w + 1, t, hash));
	cr_assert_eq(tune_db_count(db, w, t), 2);
	cr_assert_eq(tune_db_count(db, 0, t), 2);
	cr_assert_eq(tune_db_count(db, w + 1, 0), 0);
	collected c = { 0 };
	cr_assert_eq(tune_db_foreach(db, w, t, collect, &c), 0);
	cr_assert_eq(c.n, 2);
	cr_assert_str_eq(c.traces[0], a.trace);
	cr_assert_eq(c.nfeatures[0], 3);
	cr_assert_eq(c.first_feature[0], 1.5f);
	cr_assert_eq(c.median[0], 2e-3);
	cr_assert_str_eq(c.error[1], "runtime");
	cr_assert_str_eq(c.msg[1], "killed by signal 11");
	cr_assert(isnan(c.median[1]), "costs of failed records are not stored");
	cr_assert_eq(c.nfeatures[1], 0);
	collected stop = { .stop_after = 1 };
	cr_assert_eq(tune_db_foreach(db, 0, 0, collect, &stop), 42);
	cr_assert_eq(stop.n, 1);

	tune_record best;
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_assert_str_eq(best.trace, a.trace);
	cr_assert_str_eq(best.trace_hash, hash);
	cr_assert_str_eq(best.measured_at, "2024-05-01T12:00:00.125Z");
	cr_assert_str_eq(best.error_msg, "");
	cr_assert_eq(best.nfeatures, 3);
	cr_assert_eq(best.features[1], -2.25f);
	cr_assert_eq(best.features[2], 1e-30f);
	cr_assert_eq(best.cost_min_s, 2e-3 * 0.9);
	cr_assert_eq(best.cost_scale, 1.25);
	cr_assert_str_eq(best.pick, "model");
	cr_assert_str_eq(best.code_key, "00112233445566778899aabbccddeeff");
	cr_assert_str_neq(best.tessel_version, "");
	tune_record_clear(&best);
	cr_assert_null(best.owned);
	tune_db_close(db);
}

Test(db, features_are_replaced_in_place)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "f.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu -isa=avx512");
	int64_t w = tune_db_workload(db, "w1", "op", NAN);
	float old[2] = { 1, 2 }, fresh[4] = { 3, 4, 5, 6 };
	tune_record a = ok_record(w, t, "split C.i 8 -> C.io C.ii\n", 2e-3);
	a.features = old;
	a.nfeatures = 2;
	cr_assert_eq(tune_db_add_record(db, &a, NULL), 0, "%s", tune_db_error(db));
	tune_record best;
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	int64_t id = best.id;
	tune_record_clear(&best);
	cr_assert_eq(tune_db_set_features(db, id, fresh, 4), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	cr_assert_eq(best.nfeatures, 4);
	cr_assert_eq(best.features[3], 6.0f);
	cr_assert_eq(best.cost_median_s, 2e-3, "nothing else changes");
	tune_record_clear(&best);
	cr_assert_eq(tune_db_set_features(db, id + 100, fresh, 4), -1);
	cr_assert(strstr(tune_db_error(db), "no record"), "%s", tune_db_error(db));
	fresh[1] = NAN;
	cr_assert_eq(tune_db_set_features(db, id, fresh, 4), -1);
	cr_assert_eq(tune_db_set_features(db, id, fresh, 0), -1);
	tune_db_close(db);
}

Test(db, best_is_lowest_ok_median)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu a");
	int64_t t2 = tune_db_target(db, "cpu", "cpu b");
	int64_t w = tune_db_workload(db, "w", "op", 1e9);
	tune_record out;
	cr_assert_eq(tune_db_best(db, w, t, &out), 1, "none yet");
	const double costs[] = { 3e-3, 1e-3, 2e-3, 1e-3 };
	const char *traces[] = { "t0", "t1", "t2", "t3" };
	cr_assert_eq(tune_db_begin(db), 0);
	for (int i = 0; i < 4; i++) {
		tune_record r = ok_record(w, t, traces[i], costs[i]);
		cr_assert_eq(tune_db_add_record(db, &r, NULL), 0);
	}
	tune_record err = ok_record(w, t, "t4", 1e-9);
	err.error_class = "wrong";
	cr_assert_eq(tune_db_add_record(db, &err, NULL), 0);
	tune_record other = ok_record(w, t2, "t5", 1e-6);
	cr_assert_eq(tune_db_add_record(db, &other, NULL), 0);
	cr_assert_eq(tune_db_commit(db), 0);
	cr_assert_eq(tune_db_best(db, w, t, &out), 0);
	cr_assert_str_eq(out.trace, "t1", "the earliest of the fastest");
	cr_assert_eq(out.cost_median_s, 1e-3);
	tune_record_clear(&out);
	cr_assert_eq(tune_db_best(db, w, t2, &out), 0);
	cr_assert_str_eq(out.trace, "t5");
	tune_record_clear(&out);
	cr_assert_eq(tune_db_best(db, w + 5, t, &out), 1);
	tune_db_close(db);
}

/* Add ok records of costs "costs" (traces "t0".."t{n-1}") for "w" on
 * "t"; put their ids in "ids". */
static void add_costs(tune_db *db, int64_t w, int64_t t, const double *costs, int n,
	int64_t *ids)
{
	for (int i = 0; i < n; i++) {
		char trace[16];
		snprintf(trace, sizeof trace, "t%d", i);
		tune_record r = ok_record(w, t, trace, costs[i]);
		cr_assert_eq(tune_db_add_record(db, &r, NULL), 0, "%s", tune_db_error(db));
		ids[i] = query_int(db, "SELECT max(id) FROM records");
	}
}

Test(db, fastest_records_come_fastest_first)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu a");
	int64_t w = tune_db_workload(db, "w", "op", 1e9);
	const double costs[] = { 3e-3, 1e-3, 2e-3, 1e-3, 5e-3 };
	int64_t ids[5];
	add_costs(db, w, t, costs, 5, ids);
	tune_record wrong = ok_record(w, t, "fast but wrong", 1e-9);
	wrong.error_class = "wrong";
	cr_assert_eq(tune_db_add_record(db, &wrong, NULL), 0);
	tune_record out[8];
	cr_assert_eq(tune_db_fastest(db, w, t, 3, out), 3, "%s", tune_db_error(db));
	const int64_t want[] = { ids[1], ids[3], ids[2] };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(out[i].id, want[i], "place %d: the earliest of equals first", i);
		cr_assert(isnan(out[i].runoff_s));
		tune_record_clear(&out[i]);
	}
	cr_assert_eq(tune_db_fastest(db, w, t, 8, out), 5, "only the ok records");
	for (int i = 0; i < 5; i++)
		tune_record_clear(&out[i]);
	cr_assert_eq(tune_db_fastest(db, w + 9, t, 8, out), 0);
	tune_db_close(db);
}

Test(db, best_is_the_winner_of_the_latest_runoff)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu a");
	int64_t t2 = tune_db_target(db, "cpu", "cpu b");
	int64_t w = tune_db_workload(db, "w", "op", 1e9);
	const double costs[] = { 1e-3, 2e-3, 3e-3, 4e-3 };
	int64_t ids[4], other[1];
	add_costs(db, w, t, costs, 4, ids);
	add_costs(db, w, t2, costs, 1, other);
	tune_runoff_time first[] = { { ids[0], 2.5e-3, "ok" }, { ids[1], 2.2e-3, "ok" },
		{ ids[2], NAN, "wrong" } };
	int64_t r1 = tune_db_add_runoff(db, w, t, first, 3);
	cr_assert_gt(r1, 0, "%s", tune_db_error(db));
	tune_record best;
	cr_assert_eq(tune_db_best(db, w, t, &best), 0, "%s", tune_db_error(db));
	cr_assert_eq(best.id, ids[1], "the run-off's fastest, not the recorded fastest");
	cr_assert_eq(best.runoff_s, 2.2e-3);
	cr_assert_eq(best.cost_median_s, 2e-3, "the record keeps its time");
	cr_assert_eq(tune_record_time(&best), 2.2e-3);
	tune_record_clear(&best);
	cr_assert_eq(tune_db_best(db, w, t2, &best), 0);
	cr_assert_eq(best.id, other[0], "another target's run-offs do not count");
	cr_assert(isnan(best.runoff_s));
	cr_assert_eq(tune_record_time(&best), 1e-3);
	tune_record_clear(&best);

	tune_runoff_time second[] = { { ids[2], 3.1e-3, "ok" }, { ids[3], 3.0e-3, "ok" } };
	cr_assert_gt(tune_db_add_runoff(db, w, t, second, 2), r1);
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	cr_assert_eq(best.id, ids[3], "only the latest run-off counts");
	tune_record_clear(&best);
	tune_runoff_time failed[] = { { ids[0], NAN, "crash" }, { ids[1], NAN, "timeout" } };
	cr_assert_gt(tune_db_add_runoff(db, w, t, failed, 2), 0);
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	cr_assert_eq(best.id, ids[3], "no winner: the recorded fastest that never "
		"failed in a run-off");
	cr_assert(isnan(best.runoff_s));
	tune_record_clear(&best);

	tune_runoff_time bad[][1] = { { { ids[0], NAN, "ok" } }, { { ids[0], 1e-3, "wrong" } },
		{ { ids[0], -1, "ok" } }, { { ids[0], 1e-3, "Not A Word" } },
		{ { ids[0] + 100, 1e-3, "ok" } } };
	int64_t runoffs = query_int(db, "SELECT count(*) FROM runoffs");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(tune_db_add_runoff(db, w, t, bad[i], 1), 0, "bad time %zu", i);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM runoffs"), runoffs,
		"a refused run-off leaves nothing behind");
	cr_assert_eq(tune_db_begin(db), 0);
	cr_assert_eq(tune_db_add_runoff(db, w, t, second, 2), 0);
	cr_assert(strstr(tune_db_error(db), "inside a batch"), "%s", tune_db_error(db));
	tune_db_rollback(db);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	tune_db_close(db);
}

Test(db, invalid_record_fails_the_whole_batch)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu");
	int64_t w = tune_db_workload(db, "w", "op", 1);
	float inf[1] = { INFINITY };
	tune_record bad[7];
	for (int i = 0; i < 7; i++)
		bad[i] = ok_record(w, t, "x", 1);
	bad[0].cost_median_s = NAN;
	bad[1].error_class = "Not OK";
	bad[2].features = inf;
	bad[2].nfeatures = 1;
	bad[3].workload_id = w + 100;
	bad[4].measured_at = "May 1st";
	bad[5].trace = NULL;
	bad[6].code_key = "0123456789ABCDEF0123456789ABCDEF";
	const char *want[7] = { "without a valid median", "invalid error class",
		"not finite", "no such workload", "invalid timestamp", "without a trace",
		"invalid code key" };
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(tune_db_begin(db), 0, "%s", tune_db_error(db));
		tune_record good = ok_record(w, t, "good", 1);
		cr_assert_eq(tune_db_add_record(db, &good, NULL), 0);
		cr_assert_eq(tune_db_add_record(db, &bad[i], NULL), -1, "case %d", i);
		cr_assert(strstr(tune_db_error(db), want[i]), "case %d: %s", i,
			tune_db_error(db));
		tune_record more = ok_record(w, t, "more", 1);
		cr_assert_eq(tune_db_add_record(db, &more, NULL), -1);
		cr_assert(strstr(tune_db_error(db), "rolled back"), "%s", tune_db_error(db));
		cr_assert_eq(tune_db_commit(db), -1);
		cr_assert(strstr(tune_db_error(db), want[i]), "%s", tune_db_error(db));
		cr_assert_eq(tune_db_count(db, 0, 0), 0, "case %d", i);
	}
	cr_assert_eq(tune_db_commit(db), -1, "no batch is open");
	cr_assert_eq(tune_db_begin(db), 0);
	cr_assert_eq(tune_db_begin(db), -1, "batches do not nest");
	tune_record good = ok_record(w, t, "good", 1);
	cr_assert_eq(tune_db_add_record(db, &good, NULL), 0);
	tune_db_rollback(db);
	cr_assert_eq(tune_db_count(db, 0, 0), 0);
	cr_assert_eq(tune_db_begin(db), 0);
	cr_assert_eq(tune_db_add_record(db, &good, NULL), 0);
	tune_db_close(db);
	db = open_ok(path);
	cr_assert_eq(tune_db_count(db, 0, 0), 0, "close rolls an open batch back");
	tune_db_close(db);
}

Test(db, models_newest_wins_and_old_ones_go)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	tune_model m;
	cr_assert_eq(tune_db_load_model(db, "cpu", &m), 1);
	int64_t last = 0;
	for (int i = 0; i < 6; i++) {
		unsigned char blob[300];
		memset(blob, i, sizeof blob);
		blob[0] = 0;
		last = tune_db_save_model(db, "cpu", 100 * i, blob, sizeof blob,
			i % 2 ? "{\"features\": 164}" : NULL);
		cr_assert(last > 0, "%s", tune_db_error(db));
	}
	cr_assert(tune_db_save_model(db, "cuda", 1, "g", 1, NULL) > 0);
	cr_assert_eq(tune_db_load_model(db, "cpu", &m), 0);
	cr_assert_eq(m.id, last);
	cr_assert_str_eq(m.target_kind, "cpu");
	cr_assert_eq(m.n_records, 500);
	cr_assert_eq(m.len, 300);
	cr_assert_eq(((unsigned char *)m.blob)[0], 0);
	cr_assert_eq(((unsigned char *)m.blob)[299], 5);
	cr_assert_str_eq(m.meta, "{\"features\": 164}");
	cr_assert_eq(strlen(m.created_at), 24);
	tune_model_clear(&m);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM models WHERE "
		"target_kind = 'cpu'"), TUNE_DB_KEEP_MODELS);
	cr_assert_eq(tune_db_load_model(db, "cuda", &m), 0);
	cr_assert_null(m.meta);
	tune_model_clear(&m);
	cr_assert_eq(tune_db_load_model(db, "opencl", &m), 1);
	cr_assert_eq(tune_db_save_model(db, "Bad Kind", 1, "x", 1, NULL), 0);
	tune_db_close(db);
}

/* ---- JSON lines ---- */

/* Fill "db" with records of two workloads on two targets, with and without
 * features, errors and awkward text. */
static void populate(tune_db *db)
{
	int64_t t1 = tune_db_target(db, "cpu", "cpu -isa=avx512 -cores=2");
	int64_t t2 = tune_db_target(db, "cpu", "cpu -isa=avx2 -cores=8 -l2=2M");
	int64_t w1 = tune_db_workload(db, "3f2a9c00d1e4b577", "matmul \"A\"\n\tB", 2e9);
	int64_t w2 = tune_db_workload(db, "0000000000000001", "softmax \xc3\xa9\xe2\x82\xac", NAN);
	cr_assert(t1 && t2 && w1 && w2, "%s", tune_db_error(db));
	float f[4] = { 0.1f, 3.4028235e38f, -1.17549435e-38f, 7 };
	cr_assert_eq(tune_db_begin(db), 0);
	for (int i = 0; i < 12; i++) {
		char trace[96];
		snprintf(trace, sizeof trace, "split C.i %d -> C.io C.ii\nparallel C.io\n"
			"# \\ \x01 \xf0\x9f\x98\x80 %d", i + 2, i);
		tune_record r = ok_record(i % 2 ? w1 : w2, i % 3 ? t1 : t2, trace,
			1.0 / (i + 3));
		if (i % 4 == 0) {
			r.features = f;
			r.nfeatures = 4;
		}
		if (i % 5 == 4) {
			r.error_class = "timeout";
			r.error_msg = "did not finish within 1 s; \"killed\"";
		}
		if (i == 7)
			r.cost_min_s = NAN;
		if (i % 3 == 1)
			r.cost_scale = 1.0 + i / 64.0;
		if (i % 4 == 2)
			r.pick = "random";
		if (i % 5 == 3)
			r.code_key = "ffeeddccbbaa99887766554433221100";
		cr_assert_eq(tune_db_add_record(db, &r, NULL), 0, "%s", tune_db_error(db));
	}
	cr_assert_eq(tune_db_commit(db), 0);
}

/* Export "db" with "filter" into the file "path"; return the count. */
static int64_t export_to(tune_db *db, const char *path,
	const tune_db_filter *filter)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	int64_t n = tune_db_export_jsonl(db, f, filter);
	cr_assert(n >= 0, "%s", tune_db_error(db));
	fclose(f);
	return n;
}

static int import_from(tune_db *db, const char *path,
	tune_db_import_stats *stats)
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	int r = tune_db_import_jsonl(db, f, path, stats);
	fclose(f);
	return r;
}

static char *read_all(const char *path)
{
	snapshot s = take_snapshot(path);
	s.bytes[s.len] = 0;
	return s.bytes;
}

Test(db, export_import_round_trip)
{
	char path[PATH_LEN], copy[PATH_LEN], out1[PATH_LEN], out2[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "a.db"));
	populate(db);
	cr_assert_eq(export_to(db, test_scratch_file(out1, sizeof out1, "a.jsonl"), NULL), 12);
	tune_db *fresh = open_ok(test_scratch_file(copy, sizeof copy, "b.db"));
	tune_db_import_stats st;
	cr_assert_eq(import_from(fresh, out1, &st), 0, "%s", tune_db_error(fresh));
	cr_assert_eq(st.lines, 12);
	cr_assert_eq(st.added, 12);
	cr_assert_eq(st.skipped, 0);
	cr_assert_eq(export_to(fresh, test_scratch_file(out2, sizeof out2, "b.jsonl"), NULL), 12);
	char *a = read_all(out1), *b = read_all(out2);
	cr_assert_str_eq(a, b, "export, import, export gives the same text");
	cr_assert(strstr(a, "\"error_msg\":\"did not finish within 1 s; \\\"killed\\\"\""));
	cr_assert(strstr(a, "\\u0001"), "control characters are escaped");
	cr_assert(strstr(a, "\"flops\":null"));
	cr_assert(strstr(a, "\"cost_scale\":1.015625"), "the batch scale travels");
	cr_assert(strstr(a, "\"pick\":\"random\""), "the pick travels");
	cr_assert(strstr(a, "\"code_key\":\"ffeeddccbbaa99887766554433221100\""),
		"the code key travels");
	free(a);
	free(b);
	cr_assert_eq(tune_db_count(fresh, 0, 0), 12);
	int64_t t1 = tune_db_find_target(fresh, "cpu -isa=avx512 -cores=2");
	int64_t w1 = tune_db_find_workload(fresh, "3f2a9c00d1e4b577");
	tune_record x, y;
	cr_assert_eq(tune_db_best(fresh, w1, t1, &x), 0);
	cr_assert_eq(tune_db_best(db, tune_db_find_workload(db, "3f2a9c00d1e4b577"),
		tune_db_find_target(db, "cpu -isa=avx512 -cores=2"), &y), 0);
	cr_assert_str_eq(x.trace, y.trace);
	cr_assert_eq(x.cost_median_s, y.cost_median_s);
	cr_assert_str_eq(x.measured_at, y.measured_at);
	tune_record_clear(&x);
	tune_record_clear(&y);

	cr_assert_eq(import_from(fresh, out1, &st), 0, "%s", tune_db_error(fresh));
	cr_assert_eq(st.added, 0, "a second import adds nothing");
	cr_assert_eq(st.skipped, 12);
	cr_assert_eq(tune_db_count(fresh, 0, 0), 12);
	cr_assert_eq(query_int(fresh, "SELECT count(*) FROM targets"), 2);
	cr_assert_eq(query_int(fresh, "SELECT count(*) FROM workloads"), 2);

	tune_db_filter only = { .workload_key = "3f2a9c00d1e4b577",
		.target = "cpu -isa=avx512 -cores=2" };
	cr_assert_eq(export_to(db, out2, &only), tune_db_count(db,
		tune_db_find_workload(db, "3f2a9c00d1e4b577"),
		tune_db_find_target(db, "cpu -isa=avx512 -cores=2")));
	tune_db_filter ok_only = { .ok_only = true };
	cr_assert_eq(export_to(db, out2, &ok_only), 10);
	tune_db_close(fresh);
	tune_db_close(db);
}

#define GOOD_LINE(trace) "{\"tessel_record\":1,\"workload\":\"w1\",\"op\":\"op\"," \
	"\"flops\":100,\"target_kind\":\"cpu\",\"target\":\"cpu x\",\"trace\":\"" \
	trace "\",\"cost_median_s\":0.5,\"cost_min_s\":0.25,\"error\":\"ok\"," \
	"\"measured_at\":\"2024-01-02T03:04:05Z\",\"tessel_version\":\"0.1.0\"}\n"
#define TAIL "\"op\":\"op\",\"target_kind\":\"cpu\",\"target\":\"cpu x\"," \
	"\"error\":\"ok\",\"cost_median_s\":1,\"measured_at\":\"2024-01-02T03:04:05Z\"," \
	"\"tessel_version\":\"0.1.0\""

static const struct {
	const char *line;
	const char *want;
} bad_lines[] = {
	{ "{\"tessel_record\":1,", "expected" },
	{ "[1, 2]", "must be a JSON object" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"extra\":1," TAIL "}", "unknown key \"extra\"" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"trace\":\"u\"," TAIL "}", "duplicate key \"trace\"" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"flops\":\"many\"," TAIL "}", "expected a number" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\\qb\"," TAIL "}", "bad escape" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"trace_hash\":\"0000000000000000\"," TAIL "}", "does not match" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"op\":\"op\",\"target_kind\":\"cpu\",\"target\":\"cpu x\",\"error\":\"ok\",\"measured_at\":\"2024-01-02T03:04:05Z\",\"tessel_version\":\"0.1.0\"}", "without a valid median" },
	{ "{\"tessel_record\":5,\"workload\":\"w\",\"trace\":\"t\"," TAIL "}", "newer than this tessel" },
	{ "{\"tessel_record\":4,\"workload\":\"w\",\"trace\":\"t\",\"code_key\":\"abc\"," TAIL "}", "invalid code key" },
	{ "{\"tessel_record\":3,\"workload\":\"w\",\"trace\":\"t\",\"pick\":\"By Hand\"," TAIL "}", "invalid pick" },
	{ "{\"tessel_record\":2,\"workload\":\"w\",\"trace\":\"t\",\"cost_scale\":-1," TAIL "}", "invalid cost scale" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\tb\"," TAIL "}", "control character" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\"," TAIL "} x", "text after the record" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"\xff\"," TAIL "}", "invalid UTF-8" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"\xed\xa0\x80\"," TAIL "}", "invalid UTF-8" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\\u0000\"," TAIL "}", "\\u0000" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\\udc00\"," TAIL "}", "surrogate" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\\ud800x\"," TAIL "}", "surrogate" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"a\\u12\"," TAIL "}", "\\u escape" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"flops\":01," TAIL "}", "expected ',' or '}'" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"flops\":1e999," TAIL "}", "out of range" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"flops\":-1," TAIL "}", "negative" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"features\":[1,\"a\"]," TAIL "}", "expected a number" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"features\":[1e39]," TAIL "}", "float range" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"features\":[1 2]," TAIL "}", "expected ',' or ']'" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":null," TAIL "}", "may not be null" },
	{ "{\"tessel_record\":1,\"workload\":\"w\"," TAIL "}", "missing \"trace\"" },
	{ "{\"tessel_record\":1.5,\"workload\":\"w\",\"trace\":\"t\"," TAIL "}", "positive integer" },
	{ "{\"tessel_record\":1,\"workload\":\"has space\",\"trace\":\"t\"," TAIL "}", "invalid workload" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"error_msg\":\"m\",\"cost_min_s\":-1," TAIL "}", "invalid minimum" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"op\":\"op\",\"target_kind\":\"cpu\",\"target\":\"cpu x\",\"error\":\"ok\",\"cost_median_s\":1,\"measured_at\":\"yesterday\",\"tessel_version\":\"0.1.0\"}", "invalid timestamp" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"t\",\"op\":\"op\",\"target_kind\":\"CPU\",\"target\":\"cpu x\",\"error\":\"ok\",\"cost_median_s\":1,\"measured_at\":\"2024-01-02T03:04:05Z\",\"tessel_version\":\"0.1.0\"}", "invalid target" },
	{ "{\"tessel_record\":1,\"workload\":\"w\",\"trace\":\"unterminated", "unterminated string" },
	{ "{}", "missing \"tessel_record\"" },
	{ "nul", "must be a JSON object" },
};

Test(db, malformed_line_names_its_number_and_writes_nothing)
{
	char path[PATH_LEN], jl[PATH_LEN];
	test_scratch_file(jl, sizeof jl, "bad.jsonl");
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
		FILE *f = fopen(jl, "w");
		cr_assert_not_null(f);
		fputs(GOOD_LINE("t1") "\n" GOOD_LINE("t2"), f);
		fputs(bad_lines[i].line, f);
		fputs("\n" GOOD_LINE("t3"), f);
		fclose(f);
		tune_db_import_stats st = { 9, 9, 9 };
		cr_assert_eq(import_from(db, jl, &st), -1, "case %zu imported", i);
		char want[PATH_LEN + 8];
		snprintf(want, sizeof want, "%s:4: ", jl);
		const char *err = tune_db_error(db);
		cr_assert(strstr(err, want), "case %zu: want \"%s\" in: %s", i, want, err);
		cr_assert(strstr(err, bad_lines[i].want), "case %zu: want \"%s\" in: %s",
			i, bad_lines[i].want, err);
		cr_assert_eq(st.added, 0);
		cr_assert_eq(tune_db_count(db, 0, 0), 0, "case %zu", i);
		cr_assert_eq(query_int(db, "SELECT count(*) FROM targets"), 0);
		cr_assert_eq(query_int(db, "SELECT count(*) FROM workloads"), 0);
	}
	tune_db_close(db);
}

Test(db, import_accepts_the_documented_form)
{
	char path[PATH_LEN], jl[PATH_LEN];
	const char text[] =
		GOOD_LINE("a")
		"\n   \r\n"
		"{ \"tessel_record\" : 1 , \"workload\" : \"w1\" , \"op\":\"op\","
		"\"target_kind\":\"cpu\",\"target\":\"cpu x\",\"trace\":\"\\u00e9\\ud83d\\ude00\\/\","
		"\"features\":[],\"cost_median_s\":null,"
		"\"cost_min_s\":null,\"error\":\"compile\",\"error_msg\":null,"
		"\"measured_at\":\"2024-01-02T03:04:05.5Z\",\"tessel_version\":\"0.0.9\"}\r\n";
	write_file(test_scratch_file(jl, sizeof jl, "ok.jsonl"), text, sizeof text - 1);
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "r.db"));
	tune_db_import_stats st;
	cr_assert_eq(import_from(db, jl, &st), 0, "%s", tune_db_error(db));
	cr_assert_eq(st.lines, 4);
	cr_assert_eq(st.added, 2);
	int64_t w = tune_db_find_workload(db, "w1");
	int64_t t = tune_db_find_target(db, "cpu x");
	char hash[TUNE_HASH_LEN];
	tune_trace_hash("\xc3\xa9\xf0\x9f\x98\x80/", hash);
	cr_assert(tune_db_has_record(db, w, t, hash), "escapes decode to UTF-8");
	tune_record best;
	cr_assert_eq(tune_db_best(db, w, t, &best), 0);
	cr_assert_str_eq(best.trace, "a");
	cr_assert_eq(best.cost_min_s, 0.25);
	tune_record_clear(&best);
	tune_db_close(db);
}

/* ---- durability ---- */

/* Shared memory the children report progress through. */
typedef struct shared {
	atomic_int batches;
	atomic_int go;
} shared;

static shared *shared_new(void)
{
	shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
		MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(s, MAP_FAILED);
	atomic_init(&s->batches, 0);
	atomic_init(&s->go, 0);
	return s;
}

/* In a child: open "path", then store "batches" batches (negative: until
 * killed) of "n" records tagged "tag", counting them in "sh"; exit 0, or
 * 1 after printing the error. */
static void writer_child(const char *path, const char *tag, int batches,
	int n, shared *sh)
{
	struct timespec pause = { 0, 100000 };
	while (!atomic_load(&sh->go))
		nanosleep(&pause, NULL);
	char err[ERR_LEN] = "";
	tune_db *db = tune_db_open(path, err, sizeof err);
	if (!db) {
		fprintf(stderr, "child %s: %s\n", tag, err);
		_exit(1);
	}
	int64_t t = tune_db_target(db, "cpu", "cpu shared");
	int64_t w = tune_db_workload(db, "w-shared", "op", 1);
	for (int b = 0; batches < 0 || b < batches; b++) {
		if (!t || !w || add_batch(db, w, t, tag, b, n) < 0) {
			fprintf(stderr, "child %s: %s\n", tag, tune_db_error(db));
			_exit(1);
		}
		atomic_fetch_add(&sh->batches, 1);
	}
	tune_db_close(db);
	_exit(0);
}

/* Wait until "sh" counts at least "n" batches (or 20 s pass). */
static void wait_batches(shared *sh, int n)
{
	struct timespec pause = { 0, 200000 };
	for (int i = 0; i < 100000 && atomic_load(&sh->batches) < n; i++)
		nanosleep(&pause, NULL);
	cr_assert_geq(atomic_load(&sh->batches), n, "the writer made no progress");
}

Test(db, kill_9_loses_at_most_the_batch_in_flight)
{
	fail_if_hung(120);
	char path[PATH_LEN];
	test_scratch_file(path, sizeof path, "killed.db");
	unsigned seed = (unsigned)time(NULL);
	int64_t before = 0;
	for (int round = 0; round < 6; round++) {
		shared *sh = shared_new();
		char tag[16];
		snprintf(tag, sizeof tag, "k%d", round);
		fflush(NULL);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			writer_child(path, tag, -1, BATCH, sh);
		atomic_store(&sh->go, 1);
		wait_batches(sh, 2);
		struct timespec delay = { 0, (long)(rand_r(&seed) % 5000) * 1000 };
		nanosleep(&delay, NULL);
		kill(pid, SIGKILL);
		int status = 0;
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			"round %d (seed %u): the writer ended on its own (status %d)",
			round, seed, status);
		int done = atomic_load(&sh->batches);
		munmap(sh, sizeof *sh);

		tune_db *db = open_ok(path);
		cr_assert_eq(tune_db_check(db), 0, "round %d (seed %u): %s", round,
			seed, tune_db_error(db));
		int64_t n = tune_db_count(db, 0, 0);
		cr_assert_eq(n % BATCH, 0, "round %d (seed %u): %lld records, a partial "
			"batch", round, seed, (long long)n);
		cr_assert(n >= before + (int64_t)done * BATCH
			&& n <= before + (int64_t)(done + 1) * BATCH,
			"round %d (seed %u): %lld records after %d acknowledged batches "
			"on top of %lld", round, seed, (long long)n, done, (long long)before);
		before = n;
		tune_db_close(db);
	}
}

Test(db, two_writers_share_one_file)
{
	fail_if_hung(120);
	char path[PATH_LEN];
	test_scratch_file(path, sizeof path, "shared.db");
	shared *sh = shared_new();
	const int batches = 12, n = 50;
	pid_t pids[2];
	fflush(NULL);
	for (int k = 0; k < 2; k++) {
		pids[k] = fork();
		cr_assert_geq(pids[k], 0);
		if (pids[k] == 0)
			writer_child(path, k ? "B" : "A", batches, n, sh);
	}
	atomic_store(&sh->go, 1);
	for (int k = 0; k < 2; k++) {
		int status = 0;
		cr_assert_eq(waitpid(pids[k], &status, 0), pids[k]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			"writer %d failed (status %d)", k, status);
	}
	munmap(sh, sizeof *sh);
	tune_db *db = open_ok(path);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_count(db, 0, 0), 2 * batches * n);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM targets"), 1);
	cr_assert_eq(query_int(db, "SELECT count(*) FROM workloads"), 1);
	tune_db_close(db);
}

Test(db, processes_creating_one_file_at_once_agree)
{
	fail_if_hung(120);
	for (int round = 0; round < 8; round++) {
		char path[PATH_LEN], name[32];
		snprintf(name, sizeof name, "race%d.db", round);
		test_scratch_file(path, sizeof path, name);
		shared *sh = shared_new();
		pid_t pids[3];
		fflush(NULL);
		for (int k = 0; k < 3; k++) {
			pids[k] = fork();
			cr_assert_geq(pids[k], 0);
			if (pids[k] == 0)
				writer_child(path, k == 0 ? "A" : k == 1 ? "B" : "C", 1, 10, sh);
		}
		atomic_store(&sh->go, 1);
		for (int k = 0; k < 3; k++) {
			int status = 0;
			cr_assert_eq(waitpid(pids[k], &status, 0), pids[k]);
			cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				"round %d: writer %d failed (status %d)", round, k, status);
		}
		munmap(sh, sizeof *sh);
		tune_db *db = open_ok(path);
		cr_assert_eq(tune_db_count(db, 0, 0), 30);
		cr_assert_eq(query_int(db, "SELECT count(*) FROM meta"), 4);
		tune_db_close(db);
	}
}

/* A trace of about 2 KiB: batches of these fill pages fast. */
static void big_trace(char *buf, size_t len, int i)
{
	int n = snprintf(buf, len, "big %d ", i);
	memset(buf + n, 'x', len - (size_t)n - 1);
	buf[len - 1] = 0;
}

Test(db, full_database_fails_the_batch_and_keeps_the_rest)
{
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "full.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu");
	int64_t w = tune_db_workload(db, "w", "op", 1);
	cr_assert_eq(add_batch(db, w, t, "first", 0, 50), 0, "%s", tune_db_error(db));
	int64_t pages = query_int(db, "PRAGMA page_count");
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)pages + 8);
	query_int(db, sql);
	cr_assert_eq(tune_db_begin(db), 0);
	int failed_at = -1;
	for (int i = 0; i < 400 && failed_at < 0; i++) {
		char trace[2048];
		big_trace(trace, sizeof trace, i);
		tune_record r = ok_record(w, t, trace, 1);
		if (tune_db_add_record(db, &r, NULL) < 0)
			failed_at = i;
	}
	cr_assert_geq(failed_at, 0, "the limit was never reached");
	cr_assert(strstr(tune_db_error(db), "full"), "%s", tune_db_error(db));
	cr_assert_eq(tune_db_commit(db), -1);
	cr_assert_eq(tune_db_count(db, 0, 0), 50);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	query_int(db, "PRAGMA max_page_count = 1073741823");
	cr_assert_eq(add_batch(db, w, t, "after", 0, 50), 0, "%s", tune_db_error(db));
	tune_db_close(db);
	db = open_ok(path);
	cr_assert_eq(tune_db_count(db, 0, 0), 100);
	tune_db_close(db);
}

/* Return the size of "path", 0 when missing. */
static off_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : 0;
}

/* In a child limited to writing files no larger than now plus 64 KiB:
 * store a batch of 1000 big records into "path".  Exit 0 when the batch
 * failed cleanly, 2 when it was stored, 3 on other errors. */
static void full_disk_child(const char *path)
{
	char wal[PATH_LEN + 8];
	snprintf(wal, sizeof wal, "%s-wal", path);
	off_t big = file_size(path) > file_size(wal) ? file_size(path) : file_size(wal);
	struct rlimit lim = { (rlim_t)big + 65536, (rlim_t)big + 65536 };
	signal(SIGXFSZ, SIG_IGN);
	char err[ERR_LEN] = "";
	tune_db *db = tune_db_open(path, err, sizeof err);
	if (!db || setrlimit(RLIMIT_FSIZE, &lim) < 0)
		_exit(3);
	int64_t t = tune_db_find_target(db, "cpu");
	int64_t w = tune_db_find_workload(db, "w");
	if (t <= 0 || w <= 0 || tune_db_begin(db) < 0)
		_exit(3);
	bool failed = false;
	for (int i = 0; i < 1000 && !failed; i++) {
		char trace[2048];
		big_trace(trace, sizeof trace, i);
		tune_record r = ok_record(w, t, trace, 1);
		failed = tune_db_add_record(db, &r, NULL) < 0;
	}
	failed = tune_db_commit(db) < 0 || failed;
	if (!failed)
		fprintf(stderr, "full disk child: the batch was stored\n");
	_exit(failed ? 0 : 2);
}

Test(db, file_size_limit_fails_the_batch_and_keeps_the_rest)
{
	fail_if_hung(60);
	char path[PATH_LEN];
	tune_db *db = open_ok(test_scratch_file(path, sizeof path, "fsize.db"));
	int64_t t = tune_db_target(db, "cpu", "cpu");
	int64_t w = tune_db_workload(db, "w", "op", 1);
	cr_assert_eq(add_batch(db, w, t, "first", 0, 50), 0, "%s", tune_db_error(db));
	tune_db_close(db);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		full_disk_child(path);
	int status = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	db = open_ok(path);
	cr_assert_eq(tune_db_check(db), 0, "%s", tune_db_error(db));
	cr_assert_eq(tune_db_count(db, 0, 0), 50);
	cr_assert_eq(add_batch(db, w, t, "after", 0, 50), 0, "%s", tune_db_error(db));
	tune_db_close(db);
}
