/* The system C compiler behind a content-addressed cache of shared
 * objects.  The compiler runs as codegen/process.h runs programs: an
 * argument vector, never a shell, killed with its children on timeout. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "codegen/process.h"
#include "ir/fdio.h"

#define MAX_ARGS 256
#define MAX_COMMAND_WORDS 16
#define PATH_LEN 4096
#define VERSION_LEN 256
#define KEY_LEN CG_CODE_KEY_LEN
#define CACHE_FORMAT "tessel-cg-cache-1"

typedef unsigned __int128 u128;

/* FNV-1a with 128-bit state (Fowler, Noll, Vo; draft-eastlake-fnv). */
#define FNV128_OFFSET \
	(((u128)0x6c62272e07bb0142u << 64) | (u128)0x62b821756295c58du)
#define FNV128_PRIME (((u128)0x0000000001000000u << 64) | (u128)0x13bu)

/* A compiler command split into words, with the program resolved. */
typedef struct compiler {
	char *text;
	char *words[MAX_COMMAND_WORDS + 1];
	int num_words;
	char path[PATH_LEN];
	char version[VERSION_LEN];
} compiler;

/* An argument vector under construction. */
typedef struct arg_vector {
	char *argv[MAX_ARGS + 1];
	int argc;
	bool overflow;
} arg_vector;

/* Write the message "fmt" into "err" of size "errlen" when "err" is not
 * NULL, always NUL-terminated; return "status". */
static int __attribute__((format(printf, 4, 5)))
report(int status, char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return status;
}

/* Return the default cache directory; see compile.h. */
int cg_cache_dir_default(char *buf, size_t len)
{
	const char *dir = getenv("TESSEL_CACHE_DIR");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;
	if (dir && *dir)
		n = snprintf(buf, len, "%s", dir);
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/tessel/kernels", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/tessel/kernels", home);
	else
		return -1;
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

static void push_arg(arg_vector *v, const char *arg)
{
	if (v->argc == MAX_ARGS) {
		v->overflow = true;
		return;
	}
	v->argv[v->argc++] = (char *)arg;
	v->argv[v->argc] = NULL;
}

/* Append the NULL-terminated list "args" (NULL: nothing) to "v". */
static void push_args(arg_vector *v, const char *const *args)
{
	for (; args && *args; args++)
		push_arg(v, *args);
}

/* Split the command "command" into the words of "c" and resolve its
 * program; return CG_COMPILE_OK or CG_COMPILE_ENOCC with a message. */
static int compiler_init(compiler *c, const char *command, char *err,
	size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->text = strdup(command);
	if (!c->text)
		return report(CG_COMPILE_EIO, err, errlen, "compile: out of memory");
	char *save = NULL;
	for (char *w = strtok_r(c->text, " \t", &save);
	     w && c->num_words < MAX_COMMAND_WORDS;
	     w = strtok_r(NULL, " \t", &save))
		c->words[c->num_words++] = w;
	if (c->num_words == 0)
		return report(CG_COMPILE_ENOCC, err, errlen,
			      "C compiler '%s' not found (empty command)", command);
	if (cg_find_program(c->words[0], c->path, sizeof c->path) < 0)
		return report(CG_COMPILE_ENOCC, err, errlen,
			      "C compiler '%s' not found", c->words[0]);
	return CG_COMPILE_OK;
}

static void compiler_free(compiler *c)
{
	free(c->text);
}

/* Run "c" with --version and keep the first line of what it prints as its
 * version; return CG_COMPILE_OK or a failure with a message. */
static int probe_version(compiler *c, double timeout_s, char *err,
	size_t errlen)
{
	arg_vector v = { .argc = 0 };
	for (int i = 0; i < c->num_words; i++)
		push_arg(&v, c->words[i]);
	push_arg(&v, "--version");
	cg_run_result r;
	int rc = cg_run_captured(c->path, v.argv, timeout_s, NULL, NULL, &r);
	if (rc != 0)
		return report(CG_COMPILE_ENOCC, err, errlen,
			      "C compiler '%s' cannot be run: %s", c->path,
			      strerror(rc));
	if (r.timed_out)
		return report(CG_COMPILE_ETIMEOUT, err, errlen,
			      "C compiler '%s --version' timed out after %g s "
			      "and was killed", c->words[0], timeout_s);
	snprintf(c->version, sizeof c->version, "%.*s",
		 (int)strcspn(r.output, "\n"), r.output);
	return CG_COMPILE_OK;
}

/* Mix the "len" bytes at "data", preceded by their length, into "h". */
static u128 hash_field(u128 h, const void *data, size_t len)
{
	uint64_t n = len;
	const unsigned char *p = data;
	for (int i = 0; i < 8; i++, n >>= 8)
		h = (h ^ (n & 0xff)) * FNV128_PRIME;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV128_PRIME;
	return h;
}

static u128 hash_string(u128 h, const char *s)
{
	return hash_field(h, s, strlen(s));
}

/* Mix the NULL-terminated list "args" (NULL: empty) into "h", closed by a
 * marker so that two lists cannot run together. */
static u128 hash_args(u128 h, const char *const *args)
{
	for (; args && *args; args++)
		h = hash_string(h, *args);
	return hash_field(h, "", 0);
}

/* Write "h" into "key" as 32 hex digits. */
static void format_key(u128 h, char key[KEY_LEN])
{
	snprintf(key, KEY_LEN, "%016llx%016llx", (unsigned long long)(h >> 64),
		 (unsigned long long)h);
}

/* Write into "key" the 32 hex digits of the cache key of compiling
 * "source" with "c", "flags" and "extra". */
static void cache_key(const compiler *c, const char *const *flags,
	const char *const *extra, const char *source, char key[KEY_LEN])
{
	char real[PATH_MAX];
	u128 h = hash_string(FNV128_OFFSET, CACHE_FORMAT);
	h = hash_args(h, (const char *const *)c->words);
	h = hash_string(h, realpath(c->path, real) ? real : c->path);
	h = hash_string(h, c->version);
	h = hash_args(h, flags);
	h = hash_args(h, extra);
	h = hash_string(h, source);
	format_key(h, key);
}

void cg_code_key_of_parts(int n, const void *const *data, const size_t *len,
	char key[CG_CODE_KEY_LEN])
{
	u128 h = hash_string(FNV128_OFFSET, CACHE_FORMAT);
	for (int i = 0; i < n; i++)
		h = hash_field(h, data[i], len[i]);
	format_key(h, key);
}

/* Create the directory "dir" and its missing parents; return 0, or -1
 * with errno set. */
static int make_dirs(const char *dir)
{
	char path[PATH_LEN];
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
	struct stat st;
	if (mkdir(path, 0777) < 0 && errno != EEXIST)
		return -1;
	if (stat(path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Create an empty temporary file named after "path" in its directory,
 * write its name into "tmp" of size "len" and return its descriptor, or
 * return -1 with a message in "err". */
static int create_temp_beside(const char *path, char *tmp, size_t len,
	char *err, size_t errlen)
{
	int n = snprintf(tmp, len, "%s.tmp.XXXXXX", path);
	if (n < 0 || (size_t)n >= len) {
		report(CG_COMPILE_EIO, err, errlen, "compile: path too long: %s", path);
		return -1;
	}
	int fd = mkstemp(tmp);
	if (fd < 0)
		report(CG_COMPILE_EIO, err, errlen, "compile: cannot create %s: %s",
		       tmp, strerror(errno));
	return fd;
}

/* Write "data" through a temporary file; see compile.h. */
int cg_write_file_atomically(const char *path, const char *data, char *err,
	size_t errlen)
{
	char tmp[PATH_LEN];
	int fd = create_temp_beside(path, tmp, sizeof tmp, err, errlen);
	if (fd < 0)
		return CG_COMPILE_EIO;
	int rc = te_write_all(fd, data, strlen(data)) | fchmod(fd, 0644);
	rc |= close(fd);
	if (rc == 0 && rename(tmp, path) == 0)
		return CG_COMPILE_OK;
	int saved = errno;
	unlink(tmp);
	return report(CG_COMPILE_EIO, err, errlen, "compile: cannot write %s: %s",
		      path, strerror(saved));
}

/* Report the failure of the compilation of "c_path" that ended as "r". */
static int report_failure(const compiler *c, const char *c_path,
	const cg_run_result *r, double timeout_s, char *err, size_t errlen)
{
	char how[64];
	if (r->timed_out)
		return report(CG_COMPILE_ETIMEOUT, err, errlen,
			      "C compiler '%s' timed out after %g s compiling %s "
			      "and was killed", c->words[0], timeout_s, c_path);
	return report(CG_COMPILE_EFAILED, err, errlen,
		      "C compiler '%s' failed (%s) compiling %s:\n%s%s",
		      c->words[0], cg_describe_end(r, how, sizeof how), c_path,
		      r->output, r->output_truncated ? "\n[...]" : "");
}

/* Return whether "path" is a non-empty regular file. */
static bool has_content(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Compile "c_path" with "c", "flags" and "extra" into a temporary file
 * that is renamed to "so_path" once complete. */
static int compile_into(const compiler *c, const char *const *flags,
	const char *const *extra, const char *c_path, const char *so_path,
	double timeout_s, char *err, size_t errlen)
{
	char tmp[PATH_LEN];
	int fd = create_temp_beside(so_path, tmp, sizeof tmp, err, errlen);
	if (fd < 0)
		return CG_COMPILE_EIO;
	close(fd);
	int rc = CG_COMPILE_OK;
	arg_vector v = { .argc = 0 };
	for (int i = 0; i < c->num_words; i++)
		push_arg(&v, c->words[i]);
	push_args(&v, flags);
	push_arg(&v, c_path);
	push_args(&v, extra);
	push_arg(&v, "-o");
	push_arg(&v, tmp);
	cg_run_result r;
	int spawn_rc = v.overflow ? E2BIG :
		cg_run_captured(c->path, v.argv, timeout_s, NULL, NULL, &r);
	if (spawn_rc != 0)
		rc = report(CG_COMPILE_ENOCC, err, errlen,
			    "C compiler '%s' cannot be run: %s", c->path,
			    strerror(spawn_rc));
	else if (r.timed_out || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		rc = report_failure(c, c_path, &r, timeout_s, err, errlen);
	else if (!has_content(tmp))
		rc = report(CG_COMPILE_EFAILED, err, errlen,
			    "C compiler '%s' wrote no shared object for %s",
			    c->words[0], c_path);
	else if (rename(tmp, so_path) < 0)
		rc = report(CG_COMPILE_EIO, err, errlen, "compile: cannot rename %s: %s",
			    tmp, strerror(errno));
	if (rc != CG_COMPILE_OK)
		unlink(tmp);
	return rc;
}

/* Return the compiler command of "o": its cc, else $CC, else "cc". */
static const char *compiler_command(const cg_compile_opts *o)
{
	const char *env_cc = getenv("CC");
	return o->cc ? o->cc : env_cc && *env_cc ? env_cc : "cc";
}

static double timeout_of(const cg_compile_opts *o)
{
	return o->timeout_s > 0 ? o->timeout_s : CG_DEFAULT_TIMEOUT_S;
}

static const char *const default_flags[] = { CG_DEFAULT_FLAGS, NULL };

/* The flags of "o": its own, else CG_DEFAULT_FLAGS. */
static const char *const *flags_of(const cg_compile_opts *o)
{
	return o->flags ? o->flags : default_flags;
}

/* Find or build the object of "source" in "dir" under its key; see
 * cg_compile_c. */
static int compile_cached(const compiler *c, const cg_compile_opts *o,
	const char *dir, const char *source, char *so_path, size_t so_len,
	char *err, size_t errlen)
{
	const char *const *flags = flags_of(o);
	double timeout_s = timeout_of(o);
	char key[KEY_LEN], c_path[PATH_LEN];
	cache_key(c, flags, o->extra_flags, source, key);
	int n = snprintf(so_path, so_len, "%s/%s.so", dir, key);
	if (n < 0 || (size_t)n >= so_len ||
	    snprintf(c_path, sizeof c_path, "%s/%s.c", dir, key) >= (int)sizeof c_path)
		return report(CG_COMPILE_EIO, err, errlen,
			      "compile: the cache path in '%s' is too long", dir);
	if (has_content(so_path))
		return CG_COMPILE_OK;
	if (make_dirs(dir) < 0)
		return report(CG_COMPILE_EIO, err, errlen,
			      "compile: cannot create cache directory %s: %s", dir,
			      strerror(errno));
	int rc = cg_write_file_atomically(c_path, source, err, errlen);
	if (rc != CG_COMPILE_OK)
		return rc;
	return compile_into(c, flags, o->extra_flags, c_path, so_path,
			    timeout_s, err, errlen);
}

/* Set up "c" for "o": resolve the compiler and learn its version, from
 * "o" when it gives one. */
static int compiler_for(compiler *c, const cg_compile_opts *o, char *err,
	size_t errlen)
{
	int rc = compiler_init(c, compiler_command(o), err, errlen);
	if (rc != CG_COMPILE_OK)
		return rc;
	if (!o->cc_version)
		return probe_version(c, timeout_of(o), err, errlen);
	snprintf(c->version, sizeof c->version, "%s", o->cc_version);
	return CG_COMPILE_OK;
}

/* Probe the version of the compiler of "o"; see compile.h. */
int cg_compiler_version(const cg_compile_opts *o, char *buf, size_t len,
	char *err, size_t errlen)
{
	cg_compile_opts defaults = { 0 };
	o = o ? o : &defaults;
	compiler c;
	int rc = compiler_init(&c, compiler_command(o), err, errlen);
	if (rc == CG_COMPILE_OK)
		rc = probe_version(&c, timeout_of(o), err, errlen);
	if (rc == CG_COMPILE_OK && (size_t)snprintf(buf, len, "%s", c.version) >= len)
		rc = report(CG_COMPILE_EIO, err, errlen,
			    "compile: the version of '%s' does not fit", c.words[0]);
	compiler_free(&c);
	return rc;
}

/* The cache key of "source" under "o"; see compile.h. */
int cg_compile_key(const cg_compile_opts *o, const char *source,
	char key[CG_CODE_KEY_LEN], char *err, size_t errlen)
{
	cg_compile_opts defaults = { 0 };
	o = o ? o : &defaults;
	if (!source)
		return report(CG_COMPILE_EIO, err, errlen, "compile: no source");
	compiler c;
	int rc = compiler_for(&c, o, err, errlen);
	if (rc == CG_COMPILE_OK)
		cache_key(&c, flags_of(o), o->extra_flags, source, key);
	compiler_free(&c);
	return rc;
}

/* Compile "source" through the cache; see compile.h. */
int cg_compile_c(const cg_compile_opts *o, const char *source, char *so_path,
	size_t so_len, char *err, size_t errlen)
{
	cg_compile_opts defaults = { 0 };
	o = o ? o : &defaults;
	if (!source)
		return report(CG_COMPILE_EIO, err, errlen, "compile: no source");
	char dir[PATH_LEN];
	if (o->cache_dir)
		snprintf(dir, sizeof dir, "%s", o->cache_dir);
	else if (cg_cache_dir_default(dir, sizeof dir) < 0)
		return report(CG_COMPILE_EIO, err, errlen,
			      "compile: no cache directory (set TESSEL_CACHE_DIR or HOME)");
	compiler c;
	int rc = compiler_for(&c, o, err, errlen);
	if (rc == CG_COMPILE_OK)
		rc = compile_cached(&c, o, dir, source, so_path, so_len, err, errlen);
	compiler_free(&c);
	return rc;
}
