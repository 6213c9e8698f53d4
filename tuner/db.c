/* The record store in SQLite (tuner/db.h, docs/tuning-db.md): opening and
 * identifying files, the schema, batches, queries, cost models, and the
 * JSON-lines export and import with their own strict reader. */
#include "tuner/db.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ir/fnv.h"
#include "tuner/version.h"

#ifndef TESSEL_VERSION
#define TESSEL_VERSION "unknown"
#endif
/* The build that measures: the project's version and its commit. */
#define BUILD_VERSION TESSEL_VERSION "+" TESSEL_COMMIT

#define ERR_LEN 512
/* PRAGMA application_id of every tessel record store: "TSLR". */
#define APP_ID 0x54534c52
#define FORMAT_NAME "tessel-records"
#define MAX_FEATURES (1 << 20)
#define MAX_LINE_BYTES ((size_t)64 << 20)
#define MAX_NAME_LEN 255
#define CODE_KEY_DIGITS 32      /* codegen/compile.h: CG_CODE_KEY_LEN - 1 */
#define RETRY_SLEEP_NS 2000000L

enum stmt_id {
	ST_TARGET_INSERT,
	ST_TARGET_GET,
	ST_WORKLOAD_INSERT,
	ST_WORKLOAD_GET,
	ST_RECORD_INSERT,
	ST_RECORD_REPLACE,
	ST_RECORD_HAS,
	ST_RECORD_BEST,
	ST_RUNOFF_BEST,
	ST_RECORD_FASTEST,
	ST_RUNOFF_INSERT,
	ST_RUNOFF_TIME_INSERT,
	ST_COUNT_
};

#define RECORD_COLUMNS "id, workload_id, target_id, trace, trace_hash, " \
	"features, cost_median_s, cost_min_s, error_class, error_msg, " \
	"measured_at, tessel_version, cost_scale, pick, code_key"
#define RECORD_NCOLUMNS 15

static const char *const stmt_sql[ST_COUNT_] = {
	[ST_TARGET_INSERT] = "INSERT INTO targets(kind, description) "
		"VALUES(?1, ?2) ON CONFLICT(description) DO NOTHING",
	[ST_TARGET_GET] = "SELECT id FROM targets WHERE description = ?1",
	[ST_WORKLOAD_INSERT] = "INSERT INTO workloads(key, op_text, flops) "
		"VALUES(?1, ?2, ?3) ON CONFLICT(key) DO NOTHING",
	[ST_WORKLOAD_GET] = "SELECT id FROM workloads WHERE key = ?1",
	[ST_RECORD_INSERT] = "INSERT INTO records(workload_id, target_id, "
		"trace, trace_hash, features, cost_median_s, cost_min_s, "
		"error_class, error_msg, measured_at, tessel_version, cost_scale, "
		"pick, code_key) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14) "
		"ON CONFLICT(workload_id, target_id, trace_hash) DO NOTHING",
	[ST_RECORD_REPLACE] = "INSERT INTO records(workload_id, target_id, "
		"trace, trace_hash, features, cost_median_s, cost_min_s, "
		"error_class, error_msg, measured_at, tessel_version, cost_scale, "
		"pick, code_key) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
		"?12, ?13, ?14) "
		"ON CONFLICT(workload_id, target_id, trace_hash) DO UPDATE SET "
		"features = excluded.features, cost_median_s = excluded.cost_median_s, "
		"cost_min_s = excluded.cost_min_s, error_class = excluded.error_class, "
		"error_msg = excluded.error_msg, measured_at = excluded.measured_at, "
		"tessel_version = excluded.tessel_version, cost_scale = excluded.cost_scale, "
		"pick = excluded.pick, code_key = excluded.code_key",
	[ST_RECORD_HAS] = "SELECT 1 FROM records WHERE workload_id = ?1 "
		"AND target_id = ?2 AND trace_hash = ?3",
	[ST_RECORD_BEST] = "SELECT " RECORD_COLUMNS " FROM records "
		"WHERE workload_id = ?1 AND target_id = ?2 AND error_class = 'ok' "
		"AND id NOT IN (SELECT record_id FROM runoff_times WHERE median_s IS NULL) "
		"ORDER BY cost_median_s, id LIMIT 1",
	[ST_RUNOFF_BEST] = "SELECT " RECORD_COLUMNS ", runoff_median_s FROM records "
		"JOIN (SELECT record_id, median_s AS runoff_median_s FROM runoff_times "
		"WHERE median_s IS NOT NULL AND runoff_id = (SELECT max(id) FROM "
		"runoffs WHERE workload_id = ?1 AND target_id = ?2)) ON record_id = id "
		"WHERE error_class = 'ok' ORDER BY runoff_median_s, id LIMIT 1",
	[ST_RECORD_FASTEST] = "SELECT " RECORD_COLUMNS " FROM records "
		"WHERE workload_id = ?1 AND target_id = ?2 AND error_class = 'ok' "
		"ORDER BY cost_median_s, id LIMIT ?3",
	[ST_RUNOFF_INSERT] = "INSERT INTO runoffs(workload_id, target_id, "
		"measured_at, tessel_version) VALUES(?1, ?2, ?3, ?4)",
	[ST_RUNOFF_TIME_INSERT] = "INSERT INTO runoff_times(runoff_id, record_id, "
		"median_s, error_class) VALUES(?1, ?2, ?3, ?4)",
};

/* The run-off tables (tuner/runoff.h): each run-off of a workload on a
 * target, and the median each record it measured took there (NULL: it
 * failed there, with its error class). */
#define RUNOFF_TABLES \
	"CREATE TABLE runoffs(\n" \
	"  id INTEGER PRIMARY KEY,\n" \
	"  workload_id INTEGER NOT NULL REFERENCES workloads(id),\n" \
	"  target_id INTEGER NOT NULL REFERENCES targets(id),\n" \
	"  measured_at TEXT NOT NULL,\n" \
	"  tessel_version TEXT NOT NULL);\n" \
	"CREATE INDEX runoffs_by_task ON runoffs(workload_id, target_id, id);\n" \
	"CREATE TABLE runoff_times(\n" \
	"  runoff_id INTEGER NOT NULL REFERENCES runoffs(id),\n" \
	"  record_id INTEGER NOT NULL REFERENCES records(id),\n" \
	"  median_s REAL,\n" \
	"  error_class TEXT NOT NULL,\n" \
	"  PRIMARY KEY(runoff_id, record_id),\n" \
	"  CHECK((error_class = 'ok') = (median_s IS NOT NULL)));\n"

/* Schema version 5 (version 4 without records.code_key, version 3 also
 * without the run-off tables, version 2 also without records.pick,
 * version 1 also without records.cost_scale).
 * Changing it
 * means a new version, a migration from the old ones in migrate(), and
 * docs/tuning-db.md. */
static const char schema[] =
	"CREATE TABLE meta(\n"
	"  key TEXT PRIMARY KEY NOT NULL,\n"
	"  value TEXT NOT NULL);\n"
	"CREATE TABLE targets(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  kind TEXT NOT NULL,\n"
	"  description TEXT NOT NULL UNIQUE);\n"
	"CREATE TABLE workloads(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  key TEXT NOT NULL UNIQUE,\n"
	"  op_text TEXT NOT NULL,\n"
	"  flops REAL);\n"
	"CREATE TABLE records(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  workload_id INTEGER NOT NULL REFERENCES workloads(id),\n"
	"  target_id INTEGER NOT NULL REFERENCES targets(id),\n"
	"  trace TEXT NOT NULL,\n"
	"  trace_hash TEXT NOT NULL,\n"
	"  features BLOB,\n"
	"  cost_median_s REAL,\n"
	"  cost_min_s REAL,\n"
	"  cost_scale REAL,\n"
	"  pick TEXT,\n"
	"  code_key TEXT,\n"
	"  error_class TEXT NOT NULL,\n"
	"  error_msg TEXT,\n"
	"  measured_at TEXT NOT NULL,\n"
	"  tessel_version TEXT NOT NULL,\n"
	"  UNIQUE(workload_id, target_id, trace_hash),\n"
	"  CHECK(error_class <> 'ok' OR cost_median_s IS NOT NULL));\n"
	"CREATE INDEX records_by_target ON records(target_id, workload_id);\n"
	"CREATE INDEX records_best ON records(workload_id, target_id, "
	"cost_median_s) WHERE error_class = 'ok';\n"
	"CREATE TABLE models(\n"
	"  id INTEGER PRIMARY KEY,\n"
	"  target_kind TEXT NOT NULL,\n"
	"  created_at TEXT NOT NULL,\n"
	"  n_records INTEGER NOT NULL,\n"
	"  blob BLOB NOT NULL,\n"
	"  meta TEXT);\n"
	"CREATE INDEX models_by_kind ON models(target_kind, id);\n"
	RUNOFF_TABLES;

struct tune_db {
	sqlite3 *sql;
	sqlite3_stmt *stmts[ST_COUNT_];
	bool in_batch;
	bool batch_failed;
	char *path;
	char err[ERR_LEN];
	char batch_err[ERR_LEN];
};

/* What identify() found in a file. */
typedef enum db_kind {
	DB_EMPTY,
	DB_OURS,
	DB_FOREIGN
} db_kind;

/* ---- errors ---- */

/* Set the error of "db" from "fmt"; return -1. */
__attribute__((format(printf, 2, 3)))
static int fail(tune_db *db, const char *fmt, ...)
{
	char msg[ERR_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(db->err, sizeof db->err, "%s", msg);
	return -1;
}

/* Set the error of "db" to "what" and SQLite's last message; return -1. */
static int fail_sql(tune_db *db, const char *what)
{
	return fail(db, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->sql));
}

/* Roll back the open batch of "db" after a failed write, remembering why,
 * so that the rest of the batch is refused and its commit fails. */
static void fail_batch(tune_db *db)
{
	if (!db->in_batch || db->batch_failed)
		return;
	snprintf(db->batch_err, sizeof db->batch_err, "%s", db->err);
	if (!sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	db->batch_failed = true;
}

/* Return -1 with a message when "db" has a batch that failed earlier. */
static int check_batch(tune_db *db)
{
	if (db->in_batch && db->batch_failed)
		return fail(db, "the batch was rolled back after an earlier "
			"error: %s", db->batch_err);
	return 0;
}

/* ---- small helpers ---- */

void tune_trace_hash(const char *trace, char out[TUNE_HASH_LEN])
{
	snprintf(out, TUNE_HASH_LEN, "%016" PRIx64, te_fnv1a(trace));
}

void tune_db_now(char out[TUNE_TIME_LEN])
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, TUNE_TIME_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, TUNE_TIME_LEN - n, ".%03dZ", (int)(ts.tv_nsec / 1000000));
}

/* Return whether "s" has "n" decimal digits at "s" whose value lies in
 * ["lo", "hi"]. */
static bool digits_in(const char *s, int n, int lo, int hi)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	return v >= lo && v <= hi;
}

/* Return whether "s" is a UTC timestamp "YYYY-MM-DDTHH:MM:SS[.fff]Z". */
static bool valid_timestamp(const char *s)
{
	size_t n = strlen(s);
	if (n < 20 || n >= TUNE_TIME_LEN)
		return false;
	if (!digits_in(s, 4, 0, 9999) || s[4] != '-' || !digits_in(s + 5, 2, 1, 12)
		|| s[7] != '-' || !digits_in(s + 8, 2, 1, 31) || s[10] != 'T'
		|| !digits_in(s + 11, 2, 0, 23) || s[13] != ':'
		|| !digits_in(s + 14, 2, 0, 59) || s[16] != ':'
		|| !digits_in(s + 17, 2, 0, 60))
		return false;
	const char *p = s + 19;
	if (*p == '.') {
		const char *q = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p == q)
			return false;
	}
	return p[0] == 'Z' && p[1] == 0;
}

/* Return whether "s" is a name of at most "max" bytes made of lowercase
 * letters, digits and '_' (error classes, target kinds). */
static bool valid_word(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')
			|| s[i] == '_'))
			return false;
	return true;
}

/* Return whether "s" is a nonempty key of printable ASCII without spaces,
 * at most MAX_NAME_LEN bytes (workload keys). */
static bool valid_key(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > MAX_NAME_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return true;
}

/* Return whether "s" is a code key: CODE_KEY_DIGITS lowercase hex digits. */
static bool valid_code_key(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return n == CODE_KEY_DIGITS && s[n] == 0;
}

const char *tune_db_build_version(void)
{
	return BUILD_VERSION;
}

bool tune_record_other_build(const tune_record *r)
{
	return !r->tessel_version || strcmp(r->tessel_version, BUILD_VERSION) != 0;
}

/* Return the time of the monotonic clock in seconds. */
static double now_monotonic_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Step "st" like sqlite3_step, retrying for up to the busy timeout when
 * SQLite reports the file busy without waiting itself (WAL recovery,
 * journal-mode changes); the statement must not have produced rows yet. */
static int step_retry(sqlite3_stmt *st)
{
	double deadline = now_monotonic_s() + TUNE_DB_BUSY_TIMEOUT_MS / 1000.0;
	struct timespec pause = { 0, RETRY_SLEEP_NS };
	for (;;) {
		int rc = sqlite3_step(st);
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			return rc;
		if (now_monotonic_s() > deadline)
			return rc;
		sqlite3_reset(st);
		nanosleep(&pause, NULL);
	}
}

/* Run the single statement "sql" on "db", retrying while busy; discard
 * rows.  Return 0, or -1 with the error naming "sql". */
static int exec1(tune_db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, sql);
	int rc = step_retry(st);
	while (rc == SQLITE_ROW)
		rc = sqlite3_step(st);
	int r = rc == SQLITE_DONE ? 0 : fail_sql(db, sql);
	sqlite3_finalize(st);
	return r;
}

/* Return the cached statement "id" of "db", reset and unbound, preparing
 * it on first use; NULL with the error set. */
static sqlite3_stmt *stmt(tune_db *db, enum stmt_id id)
{
	sqlite3_stmt *st = db->stmts[id];
	if (st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return st;
	}
	if (sqlite3_prepare_v3(db->sql, stmt_sql[id], -1,
		SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		fail_sql(db, "preparing a statement");
		return NULL;
	}
	db->stmts[id] = st;
	return st;
}

/* Bind "s" (NULL: SQL NULL) as text to parameter "i" of "st". */
static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

/* Bind "v" to parameter "i" of "st", NULL when it is not finite. */
static int bind_real(sqlite3_stmt *st, int i, double v)
{
	if (!isfinite(v))
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_double(st, i, v);
}

/* Return column "i" of "st" as a double, NAN for NULL. */
static double column_real(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NAN;
	return sqlite3_column_double(st, i);
}

/* Encode "n" floats "f" as little-endian IEEE binary32, malloc'ed. */
static unsigned char *encode_features(const float *f, int n)
{
	unsigned char *b = malloc((size_t)n * 4 + 1);
	if (!b)
		return NULL;
	for (int i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &f[i], 4);
		for (int k = 0; k < 4; k++)
			b[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
	}
	return b;
}

/* Decode "n" little-endian binary32 values at "b" into "f". */
static void decode_features(const unsigned char *b, int n, float *f)
{
	for (int i = 0; i < n; i++) {
		uint32_t u = 0;
		for (int k = 0; k < 4; k++)
			u |= (uint32_t)b[(size_t)i * 4 + (size_t)k] << (8 * k);
		memcpy(&f[i], &u, 4);
	}
}

/* ---- opening ---- */

/* Check, before SQLite sees it, that "path" is missing, empty, or starts
 * with the SQLite header; otherwise write why into "err".  Return 0 or
 * -1. */
static int check_header(const char *path, char *err, size_t errlen)
{
	static const char magic[16] = "SQLite format 3";
	struct stat st;
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	if (st.st_size == 0)
		return 0;
	char head[16] = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t got = fread(head, 1, sizeof head, f);
	fclose(f);
	if (got < sizeof head || st.st_size < 512 || memcmp(head, magic, 16) != 0) {
		snprintf(err, errlen, "%s is not an SQLite database (nor a tessel "
			"record store); refusing to touch it", path);
		return -1;
	}
	return 0;
}

/* Run the integer query "sql" on "db" into "*out".  Return 0 or -1. */
static int query_int(tune_db *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "reading the file");
	int rc = step_retry(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	int r = rc == SQLITE_ROW ? 0 : fail_sql(db, "reading the file");
	sqlite3_finalize(st);
	return r;
}

/* Read meta value "key" of "db" into "buf" ("len" bytes; "" when absent).
 * Return 0 or -1. */
static int meta_get(tune_db *db, const char *key, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	buf[0] = 0;
	if (sqlite3_prepare_v2(db->sql, "SELECT value FROM meta WHERE key = ?1",
		-1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "reading the meta table");
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = step_retry(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		snprintf(buf, len, "%s", v ? (const char *)v : "");
	}
	int r = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0
		: fail_sql(db, "reading the meta table");
	sqlite3_finalize(st);
	return r;
}

/* Describe what is in the open file of "db" in "*kind": an empty database
 * (no schema, no application id), a tessel record store (our application
 * id and a meta table of our format), or something else.  Reads only.
 * Return 0 or -1. */
static int identify(tune_db *db, db_kind *kind)
{
	int64_t app = 0, user = 0, objects = 0, meta = 0;
	if (query_int(db, "SELECT count(*) FROM sqlite_master", &objects) < 0
		|| query_int(db, "PRAGMA application_id", &app) < 0
		|| query_int(db, "PRAGMA user_version", &user) < 0)
		return -1;
	if (objects == 0 && app == 0 && user == 0) {
		*kind = DB_EMPTY;
		return 0;
	}
	*kind = DB_FOREIGN;
	if (app != APP_ID)
		return 0;
	if (query_int(db, "SELECT count(*) FROM sqlite_master WHERE "
		"type = 'table' AND name = 'meta'", &meta) < 0)
		return -1;
	char format[64];
	if (meta == 0 || meta_get(db, "format", format, sizeof format) < 0)
		return meta == 0 ? 0 : -1;
	if (strcmp(format, FORMAT_NAME) == 0)
		*kind = DB_OURS;
	return 0;
}

/* Run identify() on "db" inside one read transaction (unless one is open
 * already), so that a file another process is creating is seen before or
 * after its creation, never half-way.  Return 0 or -1. */
static int identify_snapshot(tune_db *db, db_kind *kind)
{
	if (!sqlite3_get_autocommit(db->sql))
		return identify(db, kind);
	int r = exec1(db, "BEGIN");
	if (r == 0)
		r = identify(db, kind);
	if (r == 0)
		r = exec1(db, "COMMIT");
	if (r == 0)
		return 0;
	char msg[ERR_LEN];
	snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(db->sql));
	if (!sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	return fail(db, "%s cannot be read as a tessel record store (SQLite "
		"says: %s); refusing to touch it", db->path, msg);
}

/* Write the current schema into the empty database of "db", in the open
 * transaction.  Return 0 or -1. */
static int create_schema(tune_db *db)
{
	char *msg = NULL;
	if (sqlite3_exec(db->sql, schema, NULL, NULL, &msg) != SQLITE_OK) {
		fail(db, "%s: creating the schema: %s", db->path, msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	char now[TUNE_TIME_LEN], version[16];
	tune_db_now(now);
	snprintf(version, sizeof version, "%d", TUNE_DB_SCHEMA_VERSION);
	const char *const rows[][2] = {
		{ "format", FORMAT_NAME },
		{ "schema_version", version },
		{ "created_by", "tessel " BUILD_VERSION },
		{ "created_at", now },
	};
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "INSERT INTO meta(key, value) "
		"VALUES(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "creating the schema");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, rows[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, rows[i][1], -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			sqlite3_finalize(st);
			return fail_sql(db, "creating the schema");
		}
	}
	sqlite3_finalize(st);
	char pragmas[128];
	snprintf(pragmas, sizeof pragmas, "PRAGMA application_id = %d; "
		"PRAGMA user_version = %d", APP_ID, TUNE_DB_SCHEMA_VERSION);
	if (sqlite3_exec(db->sql, pragmas, NULL, NULL, NULL) != SQLITE_OK)
		return fail_sql(db, "creating the schema");
	return 0;
}

/* Turn the empty file of "db" into a record store.  Another process may
 * be doing the same: the check is repeated under the write lock, and
 * whoever comes second finds the schema there.  Return 0 or -1. */
static int initialize(tune_db *db)
{
	if (exec1(db, "PRAGMA journal_mode = WAL") < 0
		|| exec1(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	db_kind kind;
	int r = identify(db, &kind);
	if (r == 0 && kind == DB_EMPTY)
		r = create_schema(db);
	if (r == 0 && kind == DB_FOREIGN)
		r = fail(db, "%s became another application's database while "
			"tessel was creating it; refusing to touch it", db->path);
	if (r == 0)
		r = exec1(db, "COMMIT");
	if (r < 0 && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	return r;
}

/* Read the schema version of the record store of "db" into "*v".
 * Return 0 or -1. */
static int read_version(tune_db *db, long *v)
{
	char text[32];
	if (meta_get(db, "schema_version", text, sizeof text) < 0)
		return -1;
	char *end = NULL;
	errno = 0;
	*v = strtol(text, &end, 10);
	if (!text[0] || *end || errno || *v < 1)
		return fail(db, "%s has no valid schema version (\"%s\"); it is "
			"damaged or not a tessel record store; refusing to touch it",
			db->path, text);
	return 0;
}

/* Check that the record store of "db" has a schema version this tessel
 * reads (migrate() brings an older one up to date).  Return 0 or -1. */
static int check_version(tune_db *db)
{
	long v;
	if (read_version(db, &v) < 0)
		return -1;
	if (v > TUNE_DB_SCHEMA_VERSION)
		return fail(db, "database %s has schema version %ld, newer than "
			"this tessel (%d); refusing", db->path, v, TUNE_DB_SCHEMA_VERSION);
	return 0;
}

/* Bring the checked record store of "db" to the current schema, in one
 * transaction under the write lock (another tessel may be migrating the
 * same file: whoever comes second finds it done).  Version 1 lacks
 * records.cost_scale, versions 1 and 2 records.pick, versions 1 to 3 the
 * run-off tables, versions 1 to 4 records.code_key.  Return 0 or -1. */
static int migrate(tune_db *db)
{
	long v;
	if (read_version(db, &v) < 0)
		return -1;
	if (v == TUNE_DB_SCHEMA_VERSION)
		return 0;
	if (exec1(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	int r = read_version(db, &v);
	if (r == 0 && v == 1)
		r = exec1(db, "ALTER TABLE records ADD COLUMN cost_scale REAL");
	if (r == 0 && v <= 2)
		r = exec1(db, "ALTER TABLE records ADD COLUMN pick TEXT");
	if (r == 0 && v <= 3 && sqlite3_exec(db->sql, RUNOFF_TABLES, NULL, NULL,
		NULL) != SQLITE_OK)
		r = fail_sql(db, "adding the run-off tables");
	if (r == 0 && v <= 4)
		r = exec1(db, "ALTER TABLE records ADD COLUMN code_key TEXT");
	if (r == 0 && v < TUNE_DB_SCHEMA_VERSION) {
		char sql[160];
		snprintf(sql, sizeof sql, "UPDATE meta SET value = '%d' WHERE key = "
			"'schema_version'; PRAGMA user_version = %d",
			TUNE_DB_SCHEMA_VERSION, TUNE_DB_SCHEMA_VERSION);
		if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK)
			r = fail_sql(db, "migrating the schema");
	}
	if (r == 0)
		r = exec1(db, "COMMIT");
	if (r < 0 && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	return r < 0 ? fail(db, "%s: migrating the schema from version %ld to %d: %s",
		db->path, v, TUNE_DB_SCHEMA_VERSION, db->err) : 0;
}

/* Set the connection settings of "db" on a verified record store: WAL,
 * synchronous=FULL, foreign keys.  Return 0 or -1. */
static int configure(tune_db *db)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA journal_mode = WAL", -1, &st,
		NULL) != SQLITE_OK)
		return fail_sql(db, "setting WAL mode");
	int rc = step_retry(st);
	const unsigned char *mode = rc == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
	int r = 0;
	if (rc != SQLITE_ROW)
		r = fail_sql(db, "setting WAL mode");
	else if (!mode || strcmp((const char *)mode, "wal") != 0)
		r = fail(db, "%s: cannot use WAL mode (the journal mode stays \"%s\"); "
			"a record store needs it", db->path, mode ? (const char *)mode : "?");
	sqlite3_finalize(st);
	if (r < 0)
		return -1;
	if (exec1(db, "PRAGMA synchronous = FULL") < 0
		|| exec1(db, "PRAGMA foreign_keys = ON") < 0)
		return -1;
	return 0;
}

/* Identify, create or check the file of "db" and configure the
 * connection.  Return 0 or -1. */
static int open_store(tune_db *db)
{
	db_kind kind;
	if (identify_snapshot(db, &kind) < 0)
		return -1;
	if (kind == DB_EMPTY && (initialize(db) < 0
		|| identify_snapshot(db, &kind) < 0))
		return -1;
	if (kind == DB_FOREIGN)
		return fail(db, "%s is an SQLite database of another application, "
			"not a tessel record store; refusing to touch it", db->path);
	if (kind != DB_OURS)
		return fail(db, "%s: was not created", db->path);
	if (check_version(db) < 0 || configure(db) < 0)
		return -1;
	return migrate(db);
}

tune_db *tune_db_open(const char *path, char *err, size_t errlen)
{
	if (!path || !*path) {
		snprintf(err, errlen, "no database path given");
		return NULL;
	}
	if (check_header(path, err, errlen) < 0)
		return NULL;
	tune_db *db = calloc(1, sizeof *db);
	if (!db || !(db->path = strdup(path))) {
		free(db);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE
		| SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		int sys = db->sql ? sqlite3_system_errno(db->sql) : ENOMEM;
		snprintf(err, errlen, "%s: cannot open: %s%s%s%s", path,
			db->sql ? sqlite3_errmsg(db->sql) : "out of memory",
			sys ? " (" : "", sys ? strerror(sys) : "", sys ? ")" : "");
		tune_db_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db->sql, TUNE_DB_BUSY_TIMEOUT_MS);
	if (open_store(db) < 0) {
		snprintf(err, errlen, "%s", db->err);
		tune_db_close(db);
		return NULL;
	}
	db->err[0] = 0;
	return db;
}

void tune_db_close(tune_db *db)
{
	if (!db)
		return;
	if (db->sql && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < ST_COUNT_; i++)
		sqlite3_finalize(db->stmts[i]);
	sqlite3_close_v2(db->sql);
	free(db->path);
	free(db);
}

const char *tune_db_error(const tune_db *db)
{
	return db->err;
}

const char *tune_db_path(const tune_db *db)
{
	return db->path;
}

struct sqlite3 *tune_db_sqlite(tune_db *db)
{
	return db->sql;
}

/* Create directory "dir" and its missing parents.  Return 0 or -1 with
 * errno set. */
static int make_dirs(const char *dir)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0777) < 0 && errno != EEXIST)
		return -1;
	struct stat st;
	if (stat(path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int tune_db_default_path(char *buf, size_t len)
{
	const char *explicit_path = getenv("TESSEL_DB");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char dir[4096];
	int n;
	if (explicit_path && *explicit_path) {
		n = snprintf(buf, len, "%s", explicit_path);
		if (n < 0 || (size_t)n >= len) {
			errno = ENAMETOOLONG;
			return -1;
		}
		return 0;
	}
	if (xdg && *xdg)
		n = snprintf(dir, sizeof dir, "%s/tessel", xdg);
	else if (home && *home)
		n = snprintf(dir, sizeof dir, "%s/.cache/tessel", home);
	else {
		errno = ENOENT;
		return -1;
	}
	if (n < 0 || (size_t)n >= sizeof dir) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = snprintf(buf, len, "%s/records.db", dir);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return make_dirs(dir);
}

/* ---- targets and workloads ---- */

/* Run the get-or-insert pair "ins" (already bound) then "get" (bound) of
 * "db"; return the id, 0 on error ("what" names the row). */
static int64_t get_or_insert(tune_db *db, sqlite3_stmt *ins, sqlite3_stmt *get,
	const char *what)
{
	int rc = step_retry(ins);
	sqlite3_reset(ins);
	if (rc != SQLITE_DONE) {
		fail_sql(db, what);
		fail_batch(db);
		return 0;
	}
	rc = step_retry(get);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(get, 0) : 0;
	sqlite3_reset(get);
	if (!id) {
		fail_sql(db, what);
		fail_batch(db);
	}
	return id;
}

int64_t tune_db_target(tune_db *db, const char *kind, const char *description)
{
	if (check_batch(db) < 0)
		return 0;
	if (!valid_word(kind, 31) || !description || !*description) {
		fail(db, "invalid target: kind \"%s\", description \"%s\"",
			kind ? kind : "(null)", description ? description : "(null)");
		fail_batch(db);
		return 0;
	}
	sqlite3_stmt *ins = stmt(db, ST_TARGET_INSERT);
	sqlite3_stmt *get = ins ? stmt(db, ST_TARGET_GET) : NULL;
	if (!get) {
		fail_batch(db);
		return 0;
	}
	bind_text(ins, 1, kind);
	bind_text(ins, 2, description);
	bind_text(get, 1, description);
	return get_or_insert(db, ins, get, "storing a target");
}

int64_t tune_db_workload(tune_db *db, const char *key, const char *op_text,
	double flops)
{
	if (check_batch(db) < 0)
		return 0;
	if (!valid_key(key) || !op_text || !*op_text) {
		fail(db, "invalid workload: key \"%s\"%s", key ? key : "(null)",
			op_text && *op_text ? "" : " without op text");
		fail_batch(db);
		return 0;
	}
	sqlite3_stmt *ins = stmt(db, ST_WORKLOAD_INSERT);
	sqlite3_stmt *get = ins ? stmt(db, ST_WORKLOAD_GET) : NULL;
	if (!get) {
		fail_batch(db);
		return 0;
	}
	bind_text(ins, 1, key);
	bind_text(ins, 2, op_text);
	bind_real(ins, 3, flops);
	bind_text(get, 1, key);
	return get_or_insert(db, ins, get, "storing a workload");
}

/* Look "name" up with cached statement "id"; return its row id, 0 when
 * absent, -1 on error. */
static int64_t find_id(tune_db *db, enum stmt_id id, const char *name)
{
	sqlite3_stmt *st = stmt(db, id);
	if (!st)
		return -1;
	bind_text(st, 1, name ? name : "");
	int rc = step_retry(st);
	int64_t r = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0)
		: rc == SQLITE_DONE ? 0 : fail_sql(db, "looking up a name");
	sqlite3_reset(st);
	return r;
}

int64_t tune_db_find_target(tune_db *db, const char *description)
{
	return find_id(db, ST_TARGET_GET, description);
}

int64_t tune_db_find_workload(tune_db *db, const char *key)
{
	return find_id(db, ST_WORKLOAD_GET, key);
}

/* ---- batches and records ---- */

int tune_db_begin(tune_db *db)
{
	if (db->in_batch)
		return fail(db, "a batch is already open");
	if (exec1(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	db->in_batch = true;
	db->batch_failed = false;
	db->batch_err[0] = 0;
	return 0;
}

int tune_db_commit(tune_db *db)
{
	if (!db->in_batch)
		return fail(db, "no batch is open");
	if (db->batch_failed) {
		db->in_batch = false;
		return fail(db, "batch rolled back: %s", db->batch_err);
	}
	int r = exec1(db, "COMMIT");
	if (r < 0 && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	db->in_batch = false;
	return r;
}

void tune_db_rollback(tune_db *db)
{
	if (db->in_batch && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	db->in_batch = false;
	db->batch_failed = false;
}

/* Check record "r" before it is written.  Return 0 or -1. */
static int validate_record(tune_db *db, const tune_record *r)
{
	if (r->workload_id <= 0 || r->target_id <= 0)
		return fail(db, "record without a workload or a target");
	if (!r->trace)
		return fail(db, "record without a trace");
	if (!valid_word(r->error_class, 31))
		return fail(db, "invalid error class \"%s\" (lowercase letters, "
			"digits and '_')", r->error_class ? r->error_class : "(null)");
	bool ok = strcmp(r->error_class, "ok") == 0;
	if (ok && !(isfinite(r->cost_median_s) && r->cost_median_s >= 0))
		return fail(db, "record \"ok\" without a valid median cost (%g)",
			r->cost_median_s);
	if (ok && !isnan(r->cost_min_s) && !(isfinite(r->cost_min_s)
		&& r->cost_min_s >= 0))
		return fail(db, "record with an invalid minimum cost (%g)",
			r->cost_min_s);
	if (ok && !isnan(r->cost_scale) && r->cost_scale != 0
		&& !(isfinite(r->cost_scale) && r->cost_scale > 0))
		return fail(db, "record with an invalid cost scale (%g)", r->cost_scale);
	if (r->pick && !valid_word(r->pick, 15))
		return fail(db, "invalid pick \"%s\" (lowercase letters, digits and "
			"'_')", r->pick);
	if (r->nfeatures < 0 || r->nfeatures > MAX_FEATURES
		|| (r->nfeatures > 0 && !r->features))
		return fail(db, "record with %d features", r->nfeatures);
	for (int i = 0; i < r->nfeatures; i++)
		if (!isfinite(r->features[i]))
			return fail(db, "feature %d is not finite", i);
	if (r->measured_at && !valid_timestamp(r->measured_at))
		return fail(db, "invalid timestamp \"%s\" (want UTC ISO 8601, "
			"YYYY-MM-DDTHH:MM:SS[.fff]Z)", r->measured_at);
	if (r->tessel_version && !valid_key(r->tessel_version))
		return fail(db, "invalid tessel version \"%s\"", r->tessel_version);
	if (r->code_key && !valid_code_key(r->code_key))
		return fail(db, "invalid code key \"%.40s\" (want %d lowercase hex "
			"digits)", r->code_key, CODE_KEY_DIGITS);
	return 0;
}

/* Bind record "r" to the insert statement "st".  Return 0 or -1. */
static int bind_record(tune_db *db, sqlite3_stmt *st, const tune_record *r)
{
	char hash[TUNE_HASH_LEN], now[TUNE_TIME_LEN];
	bool ok = strcmp(r->error_class, "ok") == 0;
	tune_trace_hash(r->trace, hash);
	tune_db_now(now);
	sqlite3_bind_int64(st, 1, r->workload_id);
	sqlite3_bind_int64(st, 2, r->target_id);
	bind_text(st, 3, r->trace);
	bind_text(st, 4, hash);
	if (r->nfeatures > 0) {
		unsigned char *blob = encode_features(r->features, r->nfeatures);
		if (!blob)
			return fail(db, "out of memory");
		sqlite3_bind_blob64(st, 5, blob, (sqlite3_uint64)r->nfeatures * 4, free);
	}
	bind_real(st, 6, ok ? r->cost_median_s : NAN);
	bind_real(st, 7, ok ? r->cost_min_s : NAN);
	bind_text(st, 8, r->error_class);
	bind_text(st, 9, r->error_msg && *r->error_msg ? r->error_msg : NULL);
	bind_text(st, 10, r->measured_at ? r->measured_at : now);
	bind_text(st, 11, r->tessel_version ? r->tessel_version : BUILD_VERSION);
	bind_real(st, 12, ok && r->cost_scale > 0 ? r->cost_scale : NAN);
	bind_text(st, 13, r->pick);
	bind_text(st, 14, r->code_key);
	return 0;
}

/* Store "r" with the statement "which" (ST_RECORD_INSERT or
 * ST_RECORD_REPLACE); see tune_db_add_record. */
static int put_record(tune_db *db, enum stmt_id which, const tune_record *r,
	bool *added)
{
	if (added)
		*added = false;
	if (check_batch(db) < 0)
		return -1;
	sqlite3_stmt *st = NULL;
	if (validate_record(db, r) < 0 || !(st = stmt(db, which))
		|| bind_record(db, st, r) < 0) {
		fail_batch(db);
		return -1;
	}
	int rc = step_retry(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		if (sqlite3_extended_errcode(db->sql) == SQLITE_CONSTRAINT_FOREIGNKEY)
			fail(db, "record of workload %" PRId64 " on target %" PRId64
				": no such workload or target", r->workload_id, r->target_id);
		else
			fail_sql(db, "storing a record");
		fail_batch(db);
		return -1;
	}
	if (added)
		*added = sqlite3_changes(db->sql) > 0;
	return 0;
}

int tune_db_add_record(tune_db *db, const tune_record *r, bool *added)
{
	return put_record(db, ST_RECORD_INSERT, r, added);
}

int tune_db_replace_record(tune_db *db, const tune_record *r)
{
	return put_record(db, ST_RECORD_REPLACE, r, NULL);
}

int tune_db_set_features(tune_db *db, int64_t record, const float *features, int n)
{
	if (check_batch(db) < 0)
		return -1;
	if (n < 1 || n > MAX_FEATURES || !features)
		return fail(db, "record %" PRId64 " with %d features", record, n);
	for (int i = 0; i < n; i++)
		if (!isfinite(features[i]))
			return fail(db, "feature %d is not finite", i);
	unsigned char *blob = encode_features(features, n);
	if (!blob)
		return fail(db, "out of memory");
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "UPDATE records SET features = ?2 WHERE id = ?1",
		    -1, &st, NULL) != SQLITE_OK) {
		free(blob);
		fail_sql(db, "updating features");
		fail_batch(db);
		return -1;
	}
	sqlite3_bind_int64(st, 1, record);
	sqlite3_bind_blob64(st, 2, blob, (sqlite3_uint64)n * 4, free);
	int rc = step_retry(st);
	int changed = sqlite3_changes(db->sql);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		fail_sql(db, "updating features");
		fail_batch(db);
		return -1;
	}
	return changed > 0 ? 0 : fail(db, "no record %" PRId64, record);
}

bool tune_db_has_record(tune_db *db, int64_t workload, int64_t target,
	const char *trace_hash)
{
	sqlite3_stmt *st = stmt(db, ST_RECORD_HAS);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, workload);
	sqlite3_bind_int64(st, 2, target);
	bind_text(st, 3, trace_hash ? trace_hash : "");
	int rc = step_retry(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		fail_sql(db, "looking up a record");
	sqlite3_reset(st);
	return rc == SQLITE_ROW;
}

/* Return column "i" of "st" as text of "*len" bytes ("" for NULL). */
static const char *column_text(sqlite3_stmt *st, int i, size_t *len)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	*len = s ? (size_t)sqlite3_column_bytes(st, i) : 0;
	return s ? (const char *)s : "";
}

/* Copy "len" bytes of "s" to "*cursor" with a NUL, advance it, return the
 * copy. */
static const char *copy_out(char **cursor, const char *s, size_t len)
{
	char *p = *cursor;
	memcpy(p, s, len);
	p[len] = 0;
	*cursor = p + len + 1;
	return p;
}

/* Fill "r" from the row of "st" (columns RECORD_COLUMNS), every string and
 * the features in one allocation.  Return 0 or -1. */
static int read_record(tune_db *db, sqlite3_stmt *st, tune_record *r)
{
	enum { C_ID, C_W, C_T, C_TRACE, C_HASH, C_FEAT, C_MED, C_MIN, C_ERR,
		C_MSG, C_AT, C_VER, C_SCALE, C_PICK, C_CODE };
	static const int texts[] = { C_TRACE, C_HASH, C_ERR, C_MSG, C_AT, C_VER,
		C_PICK, C_CODE };
	enum { NTEXTS = sizeof texts / sizeof texts[0] };
	const char *text[NTEXTS];
	size_t len[NTEXTS], total = 0;
	memset(r, 0, sizeof *r);
	const void *blob = sqlite3_column_blob(st, C_FEAT);
	size_t blob_len = (size_t)sqlite3_column_bytes(st, C_FEAT);
	if (blob_len % 4 != 0)
		return fail(db, "record %" PRId64 " has a damaged features blob "
			"(%zu bytes)", (int64_t)sqlite3_column_int64(st, C_ID), blob_len);
	for (int i = 0; i < NTEXTS; i++) {
		text[i] = column_text(st, texts[i], &len[i]);
		total += len[i] + 1;
	}
	float *feat = malloc(blob_len + total);
	if (!feat)
		return fail(db, "out of memory");
	decode_features(blob, (int)(blob_len / 4), feat);
	char *cursor = (char *)feat + blob_len;
	r->owned = feat;
	r->id = sqlite3_column_int64(st, C_ID);
	r->workload_id = sqlite3_column_int64(st, C_W);
	r->target_id = sqlite3_column_int64(st, C_T);
	r->features = blob_len ? feat : NULL;
	r->nfeatures = (int)(blob_len / 4);
	r->cost_median_s = column_real(st, C_MED);
	r->cost_min_s = column_real(st, C_MIN);
	r->cost_scale = column_real(st, C_SCALE);
	r->trace = copy_out(&cursor, text[0], len[0]);
	r->trace_hash = copy_out(&cursor, text[1], len[1]);
	r->error_class = copy_out(&cursor, text[2], len[2]);
	r->error_msg = copy_out(&cursor, text[3], len[3]);
	r->measured_at = copy_out(&cursor, text[4], len[4]);
	r->tessel_version = copy_out(&cursor, text[5], len[5]);
	r->pick = sqlite3_column_type(st, C_PICK) == SQLITE_NULL ? NULL
		: copy_out(&cursor, text[6], len[6]);
	r->code_key = sqlite3_column_type(st, C_CODE) == SQLITE_NULL ? NULL
		: copy_out(&cursor, text[7], len[7]);
	r->runoff_s = NAN;
	return 0;
}

void tune_record_clear(tune_record *r)
{
	free(r->owned);
	memset(r, 0, sizeof *r);
}

/* Step "st" (bound) once into "out": 0 with a row, 1 without, -1 on
 * error ("what" names the read in the message); "st" is reset. */
static int read_one(tune_db *db, sqlite3_stmt *st, tune_record *out, const char *what)
{
	int rc = step_retry(st);
	int r = rc == SQLITE_ROW ? read_record(db, st, out)
		: rc == SQLITE_DONE ? 1 : fail_sql(db, what);
	if (r == 0 && sqlite3_column_count(st) > RECORD_NCOLUMNS)
		out->runoff_s = column_real(st, RECORD_NCOLUMNS);
	sqlite3_reset(st);
	return r;
}

int tune_db_best(tune_db *db, int64_t workload, int64_t target,
	tune_record *out)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *won = stmt(db, ST_RUNOFF_BEST), *fastest = stmt(db, ST_RECORD_BEST);
	if (!won || !fastest)
		return -1;
	sqlite3_bind_int64(won, 1, workload);
	sqlite3_bind_int64(won, 2, target);
	int r = read_one(db, won, out, "finding the winner of the latest run-off");
	if (r != 1)
		return r;
	sqlite3_bind_int64(fastest, 1, workload);
	sqlite3_bind_int64(fastest, 2, target);
	return read_one(db, fastest, out, "finding the best record");
}

double tune_record_time(const tune_record *r)
{
	return isfinite(r->runoff_s) ? r->runoff_s : r->cost_median_s;
}

int tune_db_fastest(tune_db *db, int64_t workload, int64_t target, int k,
	tune_record *out)
{
	sqlite3_stmt *st = stmt(db, ST_RECORD_FASTEST);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, workload);
	sqlite3_bind_int64(st, 2, target);
	sqlite3_bind_int(st, 3, k > 0 ? k : 0);
	int n = 0, r = 0;
	while (r == 0 && n < k) {
		int rc = step_retry(st);
		if (rc == SQLITE_DONE)
			break;
		r = rc != SQLITE_ROW ? fail_sql(db, "finding the fastest records")
			: read_record(db, st, &out[n]);
		n += r == 0;
	}
	sqlite3_reset(st);
	if (r == 0)
		return n;
	for (int i = 0; i < n; i++)
		tune_record_clear(&out[i]);
	return -1;
}

int64_t tune_db_add_runoff(tune_db *db, int64_t workload, int64_t target,
	const tune_runoff_time *times, int n)
{
	if (db->in_batch) {
		fail(db, "a run-off cannot be stored inside a batch");
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (!valid_word(times[i].error_class, 32) ||
		    (strcmp(times[i].error_class, "ok") == 0) != (times[i].median_s > 0 &&
			isfinite(times[i].median_s))) {
			fail(db, "run-off time %d (of record %" PRId64 ") is invalid: an "
				"\"ok\" one needs a positive median, a failed one none",
				i, times[i].record);
			return 0;
		}
	sqlite3_stmt *run = stmt(db, ST_RUNOFF_INSERT), *time = stmt(db, ST_RUNOFF_TIME_INSERT);
	if (!run || !time || exec1(db, "BEGIN IMMEDIATE") < 0)
		return 0;
	char now[TUNE_TIME_LEN];
	tune_db_now(now);
	sqlite3_bind_int64(run, 1, workload);
	sqlite3_bind_int64(run, 2, target);
	sqlite3_bind_text(run, 3, now, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(run, 4, BUILD_VERSION, -1, SQLITE_STATIC);
	int64_t id = step_retry(run) == SQLITE_DONE ? sqlite3_last_insert_rowid(db->sql) : 0;
	if (!id)
		fail_sql(db, "storing a run-off");
	sqlite3_reset(run);
	for (int i = 0; id && i < n; i++) {
		sqlite3_bind_int64(time, 1, id);
		sqlite3_bind_int64(time, 2, times[i].record);
		bind_real(time, 3, times[i].median_s);
		sqlite3_bind_text(time, 4, times[i].error_class, -1, SQLITE_STATIC);
		if (step_retry(time) != SQLITE_DONE) {
			fail_sql(db, "storing a run-off");
			id = 0;
		}
		sqlite3_reset(time);
	}
	if (!id || exec1(db, "COMMIT") < 0) {
		if (!sqlite3_get_autocommit(db->sql))
			sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
		return 0;
	}
	return id;
}

/* Prepare "select" followed by a filter on "workload" and "target" (0:
 * any) and "tail" into "*out".  Return 0 or -1. */
static int prepare_filtered(tune_db *db, const char *select, int64_t workload,
	int64_t target, const char *tail, sqlite3_stmt **out)
{
	char sql[512];
	snprintf(sql, sizeof sql, "%s WHERE 1%s%s %s", select,
		workload ? " AND workload_id = ?1" : "",
		target ? " AND target_id = ?2" : "", tail);
	if (sqlite3_prepare_v2(db->sql, sql, -1, out, NULL) != SQLITE_OK)
		return fail_sql(db, "reading records");
	if (workload)
		sqlite3_bind_int64(*out, 1, workload);
	if (target)
		sqlite3_bind_int64(*out, 2, target);
	return 0;
}

int64_t tune_db_count(tune_db *db, int64_t workload, int64_t target)
{
	sqlite3_stmt *st = NULL;
	if (prepare_filtered(db, "SELECT count(*) FROM records", workload, target,
		"", &st) < 0)
		return -1;
	int rc = step_retry(st);
	int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0)
		: fail_sql(db, "counting records");
	sqlite3_finalize(st);
	return n;
}

int tune_db_foreach(tune_db *db, int64_t workload, int64_t target,
	tune_record_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	if (prepare_filtered(db, "SELECT " RECORD_COLUMNS " FROM records",
		workload, target, "ORDER BY id", &st) < 0)
		return -1;
	int result = 0;
	int rc = step_retry(st);
	while (rc == SQLITE_ROW && result == 0) {
		tune_record r;
		if (read_record(db, st, &r) < 0) {
			result = -1;
			break;
		}
		result = fn(&r, arg);
		tune_record_clear(&r);
		if (result == 0)
			rc = sqlite3_step(st);
	}
	if (result == 0 && rc != SQLITE_DONE)
		result = fail_sql(db, "reading records");
	sqlite3_finalize(st);
	return result;
}

/* ---- cost models ---- */

/* Run "sql" with "kind", "n", "blob" ("len" bytes), "meta" and "now" bound
 * as ?1..?5 (unused ones ignored) and step it to the end.  Return 0 or
 * -1. */
static int model_exec(tune_db *db, const char *sql, const char *kind,
	int64_t n, const void *blob, size_t len, const char *meta, const char *now)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "storing a cost model");
	int count = sqlite3_bind_parameter_count(st);
	bind_text(st, 1, kind);
	if (count >= 2)
		sqlite3_bind_int64(st, 2, n);
	if (count >= 3)
		sqlite3_bind_blob64(st, 3, blob ? blob : "", len, SQLITE_STATIC);
	if (count >= 4)
		bind_text(st, 4, meta);
	if (count >= 5)
		bind_text(st, 5, now);
	int rc = step_retry(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : fail_sql(db, "storing a cost model");
}

int64_t tune_db_save_model(tune_db *db, const char *target_kind,
	int64_t n_records, const void *blob, size_t len, const char *meta)
{
	if (check_batch(db) < 0)
		return 0;
	if (!valid_word(target_kind, 31) || n_records < 0 || (len && !blob)) {
		fail(db, "invalid cost model for target kind \"%s\"",
			target_kind ? target_kind : "(null)");
		fail_batch(db);
		return 0;
	}
	char now[TUNE_TIME_LEN];
	tune_db_now(now);
	bool own = !db->in_batch;
	if (own && exec1(db, "BEGIN IMMEDIATE") < 0)
		return 0;
	int64_t id = 0;
	char keep[256];
	snprintf(keep, sizeof keep, "DELETE FROM models WHERE target_kind = ?1 "
		"AND id NOT IN (SELECT id FROM models WHERE target_kind = ?1 "
		"ORDER BY id DESC LIMIT %d)", TUNE_DB_KEEP_MODELS);
	if (model_exec(db, "INSERT INTO models(target_kind, n_records, blob, "
		"meta, created_at) VALUES(?1, ?2, ?3, ?4, ?5)", target_kind,
		n_records, blob, len, meta, now) == 0) {
		id = sqlite3_last_insert_rowid(db->sql);
		if (model_exec(db, keep, target_kind, 0, NULL, 0, NULL, NULL) < 0)
			id = 0;
	}
	if (own && id && exec1(db, "COMMIT") < 0)
		id = 0;
	if (own && !id && !sqlite3_get_autocommit(db->sql))
		sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
	if (!own && !id)
		fail_batch(db);
	return id;
}

int tune_db_load_model(tune_db *db, const char *target_kind, tune_model *out)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "SELECT id, target_kind, created_at, "
		"n_records, blob, meta FROM models WHERE target_kind = ?1 "
		"ORDER BY id DESC LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "reading a cost model");
	bind_text(st, 1, target_kind ? target_kind : "");
	int rc = step_retry(st);
	int r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1
		: fail_sql(db, "reading a cost model");
	if (rc == SQLITE_ROW) {
		size_t len, meta_len;
		const char *kind = column_text(st, 1, &len);
		const char *created = column_text(st, 2, &len);
		const void *blob = sqlite3_column_blob(st, 4);
		size_t blob_len = (size_t)sqlite3_column_bytes(st, 4);
		const char *meta = column_text(st, 5, &meta_len);
		out->id = sqlite3_column_int64(st, 0);
		snprintf(out->target_kind, sizeof out->target_kind, "%s", kind);
		snprintf(out->created_at, sizeof out->created_at, "%s", created);
		out->n_records = sqlite3_column_int64(st, 3);
		out->blob = malloc(blob_len + 1);
		out->meta = sqlite3_column_type(st, 5) == SQLITE_NULL ? NULL
			: malloc(meta_len + 1);
		if (!out->blob || (sqlite3_column_type(st, 5) != SQLITE_NULL && !out->meta)) {
			tune_model_clear(out);
			r = fail(db, "out of memory");
		} else {
			if (blob_len)
				memcpy(out->blob, blob, blob_len);
			out->len = blob_len;
			if (out->meta) {
				memcpy(out->meta, meta, meta_len);
				out->meta[meta_len] = 0;
			}
		}
	}
	sqlite3_finalize(st);
	return r;
}

void tune_model_clear(tune_model *m)
{
	free(m->blob);
	free(m->meta);
	memset(m, 0, sizeof *m);
}

/* ---- integrity ---- */

int tune_db_check(tune_db *db)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, "PRAGMA integrity_check", -1, &st, NULL)
		!= SQLITE_OK)
		return fail_sql(db, "checking integrity");
	int rc = step_retry(st);
	int r;
	if (rc != SQLITE_ROW) {
		r = fail_sql(db, "checking integrity");
	} else {
		const unsigned char *first = sqlite3_column_text(st, 0);
		r = first && strcmp((const char *)first, "ok") == 0 ? 0
			: fail(db, "%s fails the integrity check: %s", db->path,
				first ? (const char *)first : "?");
	}
	sqlite3_finalize(st);
	return r;
}

/* ---- JSON lines: writing ---- */

/* Write "s" ("len" bytes) to "f" as a JSON string. */
static void json_string(FILE *f, const char *s, size_t len)
{
	putc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
		} else {
			putc(c, f);
		}
	}
	putc('"', f);
}

/* Write ,"key": and text column "i" of "st" (null for NULL) to "f". */
static void json_text_field(FILE *f, const char *key, sqlite3_stmt *st, int i)
{
	fprintf(f, ",\"%s\":", key);
	if (sqlite3_column_type(st, i) == SQLITE_NULL) {
		fputs("null", f);
		return;
	}
	size_t len;
	const char *s = column_text(st, i, &len);
	json_string(f, s, len);
}

/* Write ,"key": and real column "i" of "st" (null for NULL or not finite)
 * to "f", exactly (17 significant digits). */
static void json_real_field(FILE *f, const char *key, sqlite3_stmt *st, int i)
{
	double v = column_real(st, i);
	fprintf(f, ",\"%s\":", key);
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

/* Write the features blob of column "i" of "st" as ,"features":[...] to
 * "f" (nothing when NULL).  Return 0, or -1 for a damaged blob. */
static int json_features_field(FILE *f, sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return 0;
	const unsigned char *b = sqlite3_column_blob(st, i);
	size_t len = (size_t)sqlite3_column_bytes(st, i);
	if (len % 4)
		return -1;
	fputs(",\"features\":[", f);
	for (size_t k = 0; k < len / 4; k++) {
		float v;
		decode_features(b + k * 4, 1, &v);
		fprintf(f, "%s%.9g", k ? "," : "", (double)v);
	}
	putc(']', f);
	return 0;
}

int64_t tune_db_export_jsonl(tune_db *db, FILE *out,
	const tune_db_filter *filter)
{
	static const char sql[] = "SELECT w.key, w.op_text, w.flops, t.kind, "
		"t.description, r.trace, r.trace_hash, r.features, r.cost_median_s, "
		"r.cost_min_s, r.error_class, r.error_msg, r.measured_at, "
		"r.tessel_version, r.id, r.cost_scale, r.pick, r.code_key FROM records r "
		"JOIN workloads w ON w.id = r.workload_id "
		"JOIN targets t ON t.id = r.target_id "
		"WHERE (?1 IS NULL OR w.key = ?1) AND (?2 IS NULL OR t.description = ?2) "
		"AND (?3 = 0 OR r.error_class = 'ok') ORDER BY r.id";
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
		return fail_sql(db, "exporting records");
	bind_text(st, 1, filter ? filter->workload_key : NULL);
	bind_text(st, 2, filter ? filter->target : NULL);
	sqlite3_bind_int(st, 3, filter && filter->ok_only);
	int64_t n = 0;
	int rc = step_retry(st);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(st), n++) {
		fprintf(out, "{\"tessel_record\":%d", TUNE_DB_JSONL_VERSION);
		json_text_field(out, "workload", st, 0);
		json_text_field(out, "op", st, 1);
		json_real_field(out, "flops", st, 2);
		json_text_field(out, "target_kind", st, 3);
		json_text_field(out, "target", st, 4);
		json_text_field(out, "trace", st, 5);
		json_text_field(out, "trace_hash", st, 6);
		if (json_features_field(out, st, 7) < 0)
			break;
		json_real_field(out, "cost_median_s", st, 8);
		json_real_field(out, "cost_min_s", st, 9);
		if (sqlite3_column_type(st, 15) != SQLITE_NULL)
			json_real_field(out, "cost_scale", st, 15);
		if (sqlite3_column_type(st, 16) != SQLITE_NULL)
			json_text_field(out, "pick", st, 16);
		if (sqlite3_column_type(st, 17) != SQLITE_NULL)
			json_text_field(out, "code_key", st, 17);
		json_text_field(out, "error", st, 10);
		if (sqlite3_column_type(st, 11) != SQLITE_NULL)
			json_text_field(out, "error_msg", st, 11);
		json_text_field(out, "measured_at", st, 12);
		json_text_field(out, "tessel_version", st, 13);
		fputs("}\n", out);
	}
	int64_t r = n;
	if (rc == SQLITE_ROW)
		r = fail(db, "record %" PRId64 " has a damaged features blob",
			(int64_t)sqlite3_column_int64(st, 14));
	else if (rc != SQLITE_DONE)
		r = fail_sql(db, "exporting records");
	else if (fflush(out) != 0 || ferror(out))
		r = fail(db, "writing the export failed: %s", strerror(errno));
	sqlite3_finalize(st);
	return r;
}

/* ---- JSON lines: a strict reader for one flat record per line ---- */

typedef struct json_in {
	const char *p;
	const char *end;
	char msg[200];
} json_in;

enum jl_field {
	F_VERSION, F_WORKLOAD, F_OP, F_FLOPS, F_TARGET_KIND, F_TARGET, F_TRACE,
	F_TRACE_HASH, F_FEATURES, F_MEDIAN, F_MIN, F_ERROR, F_ERROR_MSG,
	F_MEASURED_AT, F_TESSEL_VERSION, F_SCALE, F_PICK, F_CODE_KEY, F_COUNT_
};

enum jl_kind { J_STRING, J_NUMBER, J_NUMBERS };

static const struct jl_spec {
	const char *name;
	enum jl_kind kind;
	bool required;
	bool nullable;
} jl_specs[F_COUNT_] = {
	[F_VERSION] = { "tessel_record", J_NUMBER, true, false },
	[F_WORKLOAD] = { "workload", J_STRING, true, false },
	[F_OP] = { "op", J_STRING, true, false },
	[F_FLOPS] = { "flops", J_NUMBER, false, true },
	[F_TARGET_KIND] = { "target_kind", J_STRING, true, false },
	[F_TARGET] = { "target", J_STRING, true, false },
	[F_TRACE] = { "trace", J_STRING, true, false },
	[F_TRACE_HASH] = { "trace_hash", J_STRING, false, false },
	[F_FEATURES] = { "features", J_NUMBERS, false, true },
	[F_MEDIAN] = { "cost_median_s", J_NUMBER, false, true },
	[F_MIN] = { "cost_min_s", J_NUMBER, false, true },
	[F_ERROR] = { "error", J_STRING, true, false },
	[F_ERROR_MSG] = { "error_msg", J_STRING, false, true },
	[F_MEASURED_AT] = { "measured_at", J_STRING, true, false },
	[F_TESSEL_VERSION] = { "tessel_version", J_STRING, true, false },
	[F_SCALE] = { "cost_scale", J_NUMBER, false, true },
	[F_PICK] = { "pick", J_STRING, false, true },
	[F_CODE_KEY] = { "code_key", J_STRING, false, true },
};

/* One parsed line: strings are malloc'ed, absent or null values are NULL
 * strings and NAN numbers. */
typedef struct jl_line {
	bool seen[F_COUNT_];
	char *str[F_COUNT_];
	double num[F_COUNT_];
	float *features;
	int nfeatures;
} jl_line;

/* Free what parsing put in "l". */
static void jl_line_free(jl_line *l)
{
	for (int i = 0; i < F_COUNT_; i++)
		free(l->str[i]);
	free(l->features);
}

/* Set the message of "in" from "fmt"; return -1. */
__attribute__((format(printf, 2, 3)))
static int json_fail(json_in *in, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(in->msg, sizeof in->msg, fmt, ap);
	va_end(ap);
	return -1;
}

/* Skip JSON white space in "in". */
static void json_ws(json_in *in)
{
	while (in->p < in->end && (*in->p == ' ' || *in->p == '\t'
		|| *in->p == '\r' || *in->p == '\n'))
		in->p++;
}

/* Consume "c" (after white space) from "in".  Return 0 or -1. */
static int json_expect(json_in *in, char c)
{
	json_ws(in);
	if (in->p >= in->end || *in->p != c)
		return json_fail(in, "expected '%c'%s", c, in->p >= in->end
			? " before the end of the line" : "");
	in->p++;
	return 0;
}

/* Return the length of the well-formed UTF-8 sequence at "p" (before
 * "end"), 0 when it is malformed (RFC 3629, section 4). */
static int utf8_length(const unsigned char *p, const unsigned char *end)
{
	int n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
	unsigned char lo = 0x80, hi = 0xbf;
	if (p[0] < 0xc2 || p[0] > 0xf4 || end - p < n)
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* Read 4 hex digits from "in" into "*v".  Return 0 or -1. */
static int json_hex4(json_in *in, unsigned *v)
{
	*v = 0;
	if (in->end - in->p < 4)
		return json_fail(in, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *in->p++;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			: c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			: c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
		if (d == 16)
			return json_fail(in, "bad \\u escape");
		*v = *v * 16 + d;
	}
	return 0;
}

/* Append code point "cp" as UTF-8 at "*out". */
static void put_utf8(char **out, unsigned cp)
{
	unsigned char *o = (unsigned char *)*out;
	if (cp < 0x80) {
		*o++ = (unsigned char)cp;
	} else if (cp < 0x800) {
		*o++ = (unsigned char)(0xc0 | cp >> 6);
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (unsigned char)(0xe0 | cp >> 12);
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (unsigned char)(0xf0 | cp >> 18);
		*o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (unsigned char)(0x80 | (cp & 0x3f));
	}
	*out = (char *)o;
}

/* Decode the \u escape after the backslash at "in" into "*out" (a
 * surrogate pair counts as one).  Return 0 or -1. */
static int json_unicode(json_in *in, char **out)
{
	unsigned cp, lo;
	if (json_hex4(in, &cp) < 0)
		return -1;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return json_fail(in, "lone low surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (in->end - in->p < 2 || in->p[0] != '\\' || in->p[1] != 'u')
			return json_fail(in, "high surrogate without its low half");
		in->p += 2;
		if (json_hex4(in, &lo) < 0)
			return -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return json_fail(in, "high surrogate without its low half");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return json_fail(in, "\\u0000 is not allowed in a string");
	put_utf8(out, cp);
	return 0;
}

/* Decode the escape after the backslash at "in" into "*out".  Return 0 or
 * -1. */
static int json_escape(json_in *in, char **out)
{
	if (in->p >= in->end)
		return json_fail(in, "unterminated string");
	char c = *in->p++;
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k = c ? strchr(from, c) : NULL;
	if (k) {
		*(*out)++ = to[k - from];
		return 0;
	}
	if (c == 'u')
		return json_unicode(in, out);
	return json_fail(in, "bad escape '\\%c' in a string", c >= ' ' && c <= '~'
		? c : '?');
}

/* Read a JSON string from "in" into "*out" (malloc'ed, UTF-8 checked, no
 * NUL inside).  Return 0 or -1. */
static int json_string_in(json_in *in, char **out)
{
	*out = NULL;
	if (json_expect(in, '"') < 0)
		return -1;
	const char *q = in->p;
	while (q < in->end && *q != '"')
		q += *q == '\\' && q + 1 < in->end ? 2 : 1;
	if (q >= in->end)
		return json_fail(in, "unterminated string");
	char *buf = malloc((size_t)(q - in->p) + 1), *o = buf;
	if (!buf)
		return json_fail(in, "out of memory");
	int r = 0;
	while (r == 0 && in->p < q) {
		unsigned char c = (unsigned char)*in->p;
		int n = 1;
		if (c == '\\') {
			in->p++;
			r = json_escape(in, &o);
			continue;
		}
		if (c < 0x20)
			r = json_fail(in, "control character 0x%02x in a string", c);
		else if (c >= 0x80 && !(n = utf8_length((const unsigned char *)in->p,
			(const unsigned char *)q)))
			r = json_fail(in, "invalid UTF-8 in a string");
		if (r == 0) {
			memcpy(o, in->p, (size_t)n);
			o += n;
			in->p += n;
		}
	}
	if (r < 0 || in->p != q) {
		free(buf);
		return r < 0 ? -1 : json_fail(in, "bad escape at the end of a string");
	}
	*o = 0;
	in->p = q + 1;
	*out = buf;
	return 0;
}

/* Read a JSON number (RFC 8259, section 6) from "in" into "*v"; it must be
 * finite as a double.  Return 0 or -1. */
static int json_number(json_in *in, double *v)
{
	json_ws(in);
	const char *s = in->p, *p = s, *e = in->end;
	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0')
		p++;
	else if (p < e && *p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return json_fail(in, "expected a number");
	if (p < e && *p == '.') {
		const char *d = ++p;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
		if (p == d)
			return json_fail(in, "expected digits after '.'");
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		const char *d = p;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
		if (p == d)
			return json_fail(in, "expected digits in the exponent");
	}
	char buf[64];
	if (p - s >= (ptrdiff_t)sizeof buf)
		return json_fail(in, "number too long");
	memcpy(buf, s, (size_t)(p - s));
	buf[p - s] = 0;
	*v = strtod(buf, NULL);
	if (!isfinite(*v))
		return json_fail(in, "number %s out of range", buf);
	in->p = p;
	return 0;
}

/* Read a JSON array of numbers, each a finite float, from "in" into "l".
 * Return 0 or -1. */
static int json_features(json_in *in, jl_line *l)
{
	if (json_expect(in, '[') < 0)
		return -1;
	json_ws(in);
	if (in->p < in->end && *in->p == ']') {
		in->p++;
		return 0;
	}
	int cap = 0;
	for (;;) {
		double v;
		if (json_number(in, &v) < 0)
			return -1;
		if (fabs(v) >= 0x1.ffffffp127)
			return json_fail(in, "feature %d out of float range", l->nfeatures);
		if (l->nfeatures == MAX_FEATURES)
			return json_fail(in, "more than %d features", MAX_FEATURES);
		if (l->nfeatures == cap) {
			cap = cap ? cap * 2 : 64;
			float *f = realloc(l->features, (size_t)cap * sizeof *f);
			if (!f)
				return json_fail(in, "out of memory");
			l->features = f;
		}
		l->features[l->nfeatures++] = (float)v;
		json_ws(in);
		if (in->p < in->end && *in->p == ']') {
			in->p++;
			return 0;
		}
		if (json_expect(in, ',') < 0)
			return json_fail(in, "expected ',' or ']' in features");
	}
}

/* Read literal null from "in" if it is next; return whether it was. */
static bool json_null(json_in *in)
{
	json_ws(in);
	if (in->end - in->p >= 4 && memcmp(in->p, "null", 4) == 0) {
		in->p += 4;
		return true;
	}
	return false;
}

/* Read the value of field "f" from "in" into "l".  Return 0 or -1. */
static int json_value(json_in *in, jl_line *l, enum jl_field f)
{
	const struct jl_spec *spec = &jl_specs[f];
	l->seen[f] = true;
	if (json_null(in)) {
		if (!spec->nullable)
			return json_fail(in, "\"%s\" may not be null", spec->name);
		return 0;
	}
	switch (spec->kind) {
	case J_STRING:
		return json_string_in(in, &l->str[f]);
	case J_NUMBER:
		return json_number(in, &l->num[f]);
	case J_NUMBERS:
		return json_features(in, l);
	}
	return json_fail(in, "internal: unknown field kind");
}

/* Parse "line" ("len" bytes) as one flat JSON object of the record form
 * into "l".  Return 0, or -1 with the message in "in". */
static int json_record(json_in *in, const char *line, size_t len, jl_line *l)
{
	memset(l, 0, sizeof *l);
	for (int i = 0; i < F_COUNT_; i++)
		l->num[i] = NAN;
	in->p = line;
	in->end = line + len;
	in->msg[0] = 0;
	if (json_expect(in, '{') < 0)
		return json_fail(in, "a record must be a JSON object");
	json_ws(in);
	bool empty = in->p < in->end && *in->p == '}';
	if (empty)
		in->p++;
	while (!empty) {
		char *key = NULL;
		json_ws(in);
		if (json_string_in(in, &key) < 0)
			return -1;
		int f = 0;
		while (f < F_COUNT_ && strcmp(key, jl_specs[f].name) != 0)
			f++;
		if (f == F_COUNT_)
			json_fail(in, "unknown key \"%.60s\"", key);
		else if (l->seen[f])
			json_fail(in, "duplicate key \"%s\"", key);
		free(key);
		if (f == F_COUNT_ || l->seen[f] || json_expect(in, ':') < 0
			|| json_value(in, l, (enum jl_field)f) < 0)
			return -1;
		json_ws(in);
		if (in->p < in->end && *in->p == '}') {
			in->p++;
			break;
		}
		if (json_expect(in, ',') < 0)
			return json_fail(in, "expected ',' or '}' after \"%s\"",
				jl_specs[f].name);
	}
	json_ws(in);
	if (in->p != in->end)
		return json_fail(in, "text after the record");
	for (int f = 0; f < F_COUNT_; f++)
		if (jl_specs[f].required && !l->seen[f])
			return json_fail(in, "missing \"%s\"", jl_specs[f].name);
	return 0;
}

/* Check the fields of parsed line "l" that the record checks do not cover.
 * Return 0 or -1 with the message in "in". */
static int check_line(json_in *in, const jl_line *l)
{
	double v = l->num[F_VERSION];
	if (v != floor(v) || v < 1)
		return json_fail(in, "\"tessel_record\" must be a positive integer");
	if (v > TUNE_DB_JSONL_VERSION)
		return json_fail(in, "record form version %.0f is newer than this "
			"tessel (%d)", v, TUNE_DB_JSONL_VERSION);
	if (l->str[F_TRACE_HASH]) {
		char hash[TUNE_HASH_LEN];
		tune_trace_hash(l->str[F_TRACE], hash);
		if (strcmp(hash, l->str[F_TRACE_HASH]) != 0)
			return json_fail(in, "\"trace_hash\" %.20s does not match the "
				"trace (%s)", l->str[F_TRACE_HASH], hash);
	}
	if (!isnan(l->num[F_FLOPS]) && l->num[F_FLOPS] < 0)
		return json_fail(in, "negative \"flops\"");
	return 0;
}

/* Store parsed line "l" in the open batch of "db"; count it in "stats".
 * Return 0 or -1. */
static int import_line(tune_db *db, const jl_line *l,
	tune_db_import_stats *stats)
{
	int64_t target = tune_db_target(db, l->str[F_TARGET_KIND], l->str[F_TARGET]);
	int64_t workload = target ? tune_db_workload(db, l->str[F_WORKLOAD],
		l->str[F_OP], l->num[F_FLOPS]) : 0;
	if (!workload)
		return -1;
	tune_record r = {
		.workload_id = workload,
		.target_id = target,
		.trace = l->str[F_TRACE],
		.features = l->features,
		.nfeatures = l->nfeatures,
		.cost_median_s = l->num[F_MEDIAN],
		.cost_min_s = l->num[F_MIN],
		.cost_scale = l->num[F_SCALE],
		.pick = l->str[F_PICK],
		.code_key = l->str[F_CODE_KEY],
		.error_class = l->str[F_ERROR],
		.error_msg = l->str[F_ERROR_MSG],
		.measured_at = l->str[F_MEASURED_AT],
		.tessel_version = l->str[F_TESSEL_VERSION],
	};
	bool added = false;
	if (tune_db_add_record(db, &r, &added) < 0)
		return -1;
	if (added)
		stats->added++;
	else
		stats->skipped++;
	return 0;
}

/* Return whether "line" ("len" bytes) holds only white space. */
static bool blank_line(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r'
			&& line[i] != '\n')
			return false;
	return true;
}

/* Read every line of "in" ("name") into the open batch of "db".  Return 0
 * or -1 with "NAME:LINE: message". */
static int import_lines(tune_db *db, FILE *in, const char *name,
	tune_db_import_stats *stats)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int r = 0;
	json_in json;
	errno = 0;
	while (r == 0 && (got = getline(&line, &cap, in)) >= 0) {
		stats->lines++;
		if ((size_t)got > MAX_LINE_BYTES) {
			r = fail(db, "%s:%" PRId64 ": line longer than %zu bytes", name,
				stats->lines, MAX_LINE_BYTES);
			break;
		}
		if (blank_line(line, (size_t)got))
			continue;
		jl_line l;
		if (json_record(&json, line, (size_t)got, &l) < 0
			|| check_line(&json, &l) < 0) {
			r = fail(db, "%s:%" PRId64 ": %s", name, stats->lines, json.msg);
		} else if (import_line(db, &l, stats) < 0) {
			char msg[ERR_LEN];
			snprintf(msg, sizeof msg, "%s", db->err);
			r = fail(db, "%s:%" PRId64 ": %s", name, stats->lines, msg);
		}
		jl_line_free(&l);
	}
	if (r == 0 && ferror(in))
		r = fail(db, "%s: read error: %s", name, strerror(errno));
	free(line);
	return r;
}

int tune_db_import_jsonl(tune_db *db, FILE *in, const char *name,
	tune_db_import_stats *stats)
{
	tune_db_import_stats local = { 0, 0, 0 };
	if (stats)
		*stats = local;
	if (!name)
		name = "(input)";
	if (db->in_batch)
		return fail(db, "cannot import inside an open batch");
	if (tune_db_begin(db) < 0)
		return -1;
	if (import_lines(db, in, name, &local) < 0) {
		char msg[ERR_LEN];
		snprintf(msg, sizeof msg, "%s", db->err);
		tune_db_rollback(db);
		return fail(db, "%s", msg);
	}
	if (tune_db_commit(db) < 0)
		return -1;
	if (stats)
		*stats = local;
	return 0;
}
