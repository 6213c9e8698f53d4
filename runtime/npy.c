/* NumPy .npy files: a reader that trusts nothing in the bytes it is given,
 * and a writer that replaces its target atomically.
 *
 * Format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and a
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
 * 2.0 and 3.0), then the header: a Python dict literal with the keys
 * 'descr', 'fortran_order' and 'shape', padded with spaces and ended by a
 * newline (latin-1 in 1.0 and 2.0, UTF-8 in 3.0); then the raw elements.
 *
 * NumPy has no bfloat16.  A bf16 tensor is saved as '<f4' (each value
 * widened exactly to float32), so NumPy and every other reader see the right
 * numbers; loading that file gives back an f32 tensor. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessel/tensor.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_V1_HEADER_LEN_MAX 65535u
#define NPY_HEADER_LEN_LIMIT (1u << 20)
#define NPY_DATA_ALIGNMENT 64
#define NPY_SHOWN_TEXT_MAX 40
#define NPY_WRITE_CHUNK_ELEMENTS 4096

/* Where errors go: each message starts with "name", the file's label. */
typedef struct npy_errors {
	const char *name;
	char *err;
	size_t errlen;
} npy_errors;

/* The parsed header: element type, C-order shape and the element size the
 * file uses. */
typedef struct npy_header {
	tessel_dtype dtype;
	int ndim;
	int64_t shape[TESSEL_MAX_DIMS];
	bool fortran_order;
} npy_header;

/* A byte stream being read: the "size" bytes at "bytes", or "file".
 * "file_size" is the file's length, or -1 where it cannot be known (a pipe);
 * "pos" counts the bytes consumed so far. */
typedef struct npy_source {
	const uint8_t *bytes;
	size_t size;
	FILE *file;
	int64_t file_size;
	size_t pos;
} npy_source;

/* A cursor over the header dict text, with the place errors go. */
typedef struct dict_cursor {
	const char *start;
	const char *p;
	const char *end;
	const npy_errors *errors;
} dict_cursor;

/* One element type a .npy descr can name: its type code after the byte
 * order character, and the tessel dtype it loads as. */
typedef struct npy_type {
	const char *code;
	tessel_dtype dtype;
} npy_type;

static const npy_type npy_types[] = {
	{ "b1", TESSEL_BOOL }, { "i1", TESSEL_I8 }, { "i4", TESSEL_I32 },
	{ "i8", TESSEL_I64 }, { "f2", TESSEL_F16 }, { "f4", TESSEL_F32 },
	{ "f8", TESSEL_F64 }, { "u1", TESSEL_U8 },
};

/* Write "name: " followed by the message "fmt" into the error buffer of
 * "errors", when there is one, always NUL-terminated. */
static void __attribute__((format(printf, 2, 3)))
fail(const npy_errors *errors, const char *fmt, ...)
{
	if (!errors->err || errors->errlen == 0)
		return;
	char message[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	snprintf(errors->err, errors->errlen, "%s: %s", errors->name, message);
}

/* Write "ch" into "out" as a message shows it: printable ASCII as is, other
 * bytes as \xNN.  Return the number of characters written, at most 4. */
static size_t show_byte(unsigned char ch, char *out)
{
	static const char hex[] = "0123456789abcdef";
	if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
		out[0] = (char)ch;
		return 1;
	}
	out[0] = '\\';
	out[1] = 'x';
	out[2] = hex[ch >> 4];
	out[3] = hex[ch & 0xf];
	return 4;
}

/* Write the "len" bytes at "text" into "out" of size "outlen" (at least
 * 1) as show_byte shows them, cut after NPY_SHOWN_TEXT_MAX bytes with
 * "...", always NUL-terminated. */
static void show_text(const char *text, size_t len, char *out, size_t outlen)
{
	size_t used = 0;
	for (size_t i = 0; i < len && i < NPY_SHOWN_TEXT_MAX; i++) {
		char piece[4];
		size_t n = show_byte((unsigned char)text[i], piece);
		if (used + n >= outlen)
			break;
		memcpy(out + used, piece, n);
		used += n;
	}
	out[used] = '\0';
	if (len > NPY_SHOWN_TEXT_MAX && used + 4 <= outlen)
		memcpy(out + used, "...", 4);
}

/* Return true on a little-endian host, where .npy data needs no swapping. */
static bool host_is_little_endian(void)
{
	return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}

/* Reverse the bytes of each of the "count" elements of "itemsize" bytes at
 * "data" on a big-endian host, turning little-endian data into host order
 * and back; do nothing on a little-endian host. */
static void swap_little_endian_in_place(void *data, size_t count,
	size_t itemsize)
{
	if (host_is_little_endian() || itemsize == 1)
		return;
	uint8_t *p = data;
	for (size_t i = 0; i < count; i++, p += itemsize)
		for (size_t a = 0, b = itemsize - 1; a < b; a++, b--) {
			uint8_t tmp = p[a];
			p[a] = p[b];
			p[b] = tmp;
		}
}

/* Check the product of the non-zero extents of "shape" times "itemsize"
 * fits in a ptrdiff_t (the rule tessel_tensor_new applies).  Store the
 * element count in "numel" and the data size in "bytes", and return 0, or
 * return -1. */
static int shape_data_size(int ndim, const int64_t *shape, size_t itemsize,
	int64_t *numel, size_t *bytes)
{
	int64_t nonzero_product = 1;
	bool has_zero_extent = false;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 0)
			return -1;
		has_zero_extent |= shape[d] == 0;
		if (shape[d] > 0 &&
		    (__builtin_mul_overflow(nonzero_product, shape[d],
					    &nonzero_product) ||
		     nonzero_product > PTRDIFF_MAX / (int64_t)itemsize))
			return -1;
	}
	*numel = has_zero_extent ? 0 : nonzero_product;
	*bytes = (size_t)*numel * itemsize;
	return 0;
}

/* Read up to "n" bytes from "src" into "dst"; return how many were read. */
static size_t source_read(npy_source *src, void *dst, size_t n)
{
	size_t got;
	if (src->file) {
		got = fread(dst, 1, n, src->file);
	} else {
		size_t left = src->size - src->pos;
		got = n < left ? n : left;
		if (got > 0)
			memcpy(dst, src->bytes + src->pos, got);
	}
	src->pos += got;
	return got;
}

/* Return the number of unread bytes of "src", or -1 if it cannot tell. */
static int64_t source_remaining(const npy_source *src)
{
	if (!src->file)
		return (int64_t)(src->size - src->pos);
	if (src->file_size < 0 || (uint64_t)src->file_size < src->pos)
		return -1;
	return src->file_size - (int64_t)src->pos;
}

/* Return true, with a message naming the system error, if reading "src"
 * failed (as opposed to reaching its end). */
static bool source_failed(const npy_source *src, const npy_errors *errors)
{
	if (!src->file || !ferror(src->file))
		return false;
	fail(errors, "read error: %s", strerror(errno));
	return true;
}

/* Return true if "src" has no byte left to read (false also when the
 * attempt to find out fails: source_failed tells). */
static bool source_at_end(npy_source *src)
{
	if (!src->file)
		return src->pos == src->size;
	return fgetc(src->file) == EOF && !ferror(src->file);
}

/* Read the magic, the version and the header length from "src" and store
 * the length in "header_len".  Return 0, or -1 with a message. */
static int read_preamble(npy_source *src, const npy_errors *errors,
	size_t *header_len)
{
	uint8_t pre[12];
	size_t got = source_read(src, pre, 8);
	if (source_failed(src, errors))
		return -1;
	if (memcmp(pre, NPY_MAGIC, got < NPY_MAGIC_LEN ? got : NPY_MAGIC_LEN)) {
		fail(errors, "not a .npy file (bad magic)");
		return -1;
	}
	if (got < 8) {
		fail(errors, "truncated: %zu bytes, too short for a .npy preamble",
		     got);
		return -1;
	}
	unsigned major = pre[6], minor = pre[7];
	if (major < 1 || major > 3 || minor != 0) {
		fail(errors, "unsupported .npy format version %u.%u", major,
		     minor);
		return -1;
	}
	size_t len_bytes = major == 1 ? 2 : 4;
	if (source_read(src, pre + 8, len_bytes) < len_bytes) {
		if (!source_failed(src, errors))
			fail(errors, "truncated: the header length is missing");
		return -1;
	}
	size_t len = 0;
	for (size_t i = 0; i < len_bytes; i++)
		len |= (size_t)pre[8 + i] << (8 * i);
	int64_t remaining = source_remaining(src);
	if (remaining >= 0 && (uint64_t)len > (uint64_t)remaining) {
		fail(errors,
		     "header length %zu exceeds the %lld bytes left in the file",
		     len, (long long)remaining);
		return -1;
	}
	if (len > NPY_HEADER_LEN_LIMIT) {
		fail(errors, "header length %zu exceeds the limit of %u bytes",
		     len, NPY_HEADER_LEN_LIMIT);
		return -1;
	}
	*header_len = len;
	return 0;
}

/* Write "header: " and the message "what" about the text at the cursor
 * "c", with its offset in the header, into the error buffer. */
static void dict_fail(const dict_cursor *c, const char *what)
{
	fail(c->errors, "header: %s at offset %td", what, c->p - c->start);
}

/* Move "c" past Python whitespace. */
static void skip_space(dict_cursor *c)
{
	while (c->p < c->end && *c->p && strchr(" \t\n\r\f\v", *c->p))
		c->p++;
}

/* Skip whitespace; if the next character is "ch", consume it and return
 * true. */
static bool accept(dict_cursor *c, char ch)
{
	skip_space(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* As accept, but a missing "ch" is an error "what"; return 0 or -1. */
static int expect(dict_cursor *c, char ch, const char *what)
{
	if (accept(c, ch))
		return 0;
	dict_fail(c, what);
	return -1;
}

/* Parse a Python string literal without escapes ('...' or "...") and point
 * "text"/"len" at its contents.  Return 0, or -1 with a message. */
static int parse_string(dict_cursor *c, const char **text, size_t *len)
{
	skip_space(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) {
		dict_fail(c, "expected a string");
		return -1;
	}
	char quote = *c->p++;
	const char *begin = c->p;
	while (c->p < c->end && *c->p != quote && *c->p != '\n') {
		if (*c->p == '\\') {
			dict_fail(c, "unsupported escape in a string");
			return -1;
		}
		c->p++;
	}
	if (c->p >= c->end || *c->p != quote) {
		dict_fail(c, "unterminated string");
		return -1;
	}
	*text = begin;
	*len = (size_t)(c->p - begin);
	c->p++;
	return 0;
}

/* Return true if the cursor "c" starts with the word "word", not followed
 * by more identifier characters; consume it then. */
static bool accept_word(dict_cursor *c, const char *word)
{
	size_t n = strlen(word);
	skip_space(c);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return false;
	if (c->p + n < c->end &&
	    (c->p[n] == '_' || (c->p[n] >= '0' && c->p[n] <= '9') ||
	     ((c->p[n] | 0x20) >= 'a' && (c->p[n] | 0x20) <= 'z')))
		return false;
	c->p += n;
	return true;
}

/* Parse a Python bool literal into "value".  Return 0, or -1. */
static int parse_bool(dict_cursor *c, bool *value)
{
	if (accept_word(c, "True")) {
		*value = true;
		return 0;
	}
	if (accept_word(c, "False")) {
		*value = false;
		return 0;
	}
	dict_fail(c, "'fortran_order' must be True or False");
	return -1;
}

/* Parse one dimension: a non-negative decimal integer, with the 'L' suffix
 * that Python 2 NumPy wrote for longs.  Return 0, or -1 with a message. */
static int parse_dim(dict_cursor *c, int64_t *dim)
{
	skip_space(c);
	if (c->p < c->end && *c->p == '-') {
		dict_fail(c, "negative dimension in the shape");
		return -1;
	}
	if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
		dict_fail(c, "expected a dimension in the shape");
		return -1;
	}
	int64_t value = 0;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (__builtin_mul_overflow(value, 10, &value) ||
		    __builtin_add_overflow(value, *c->p - '0', &value)) {
			dict_fail(c, "dimension too large");
			return -1;
		}
		c->p++;
	}
	if (c->p < c->end && (*c->p == 'L' || *c->p == 'l'))
		c->p++;
	*dim = value;
	return 0;
}

/* Parse the shape tuple ("()", "(3,)", "(2, 3)", trailing comma allowed)
 * into "h".  Return 0, or -1 with a message. */
static int parse_shape(dict_cursor *c, npy_header *h)
{
	h->ndim = 0;
	if (expect(c, '(', "'shape' must be a tuple") < 0)
		return -1;
	if (accept(c, ')'))
		return 0;
	for (;;) {
		int64_t dim;
		if (parse_dim(c, &dim) < 0)
			return -1;
		if (h->ndim == TESSEL_MAX_DIMS) {
			fail(c->errors,
			     "header: shape has more than %d dimensions",
			     TESSEL_MAX_DIMS);
			return -1;
		}
		h->shape[h->ndim++] = dim;
		if (h->ndim == 1 && accept(c, ')')) {
			dict_fail(c, "'shape' must be a tuple: (n) needs a comma");
			return -1;
		}
		if (accept(c, ')'))
			return 0;
		if (expect(c, ',', "expected ',' or ')' in the shape") < 0)
			return -1;
		if (accept(c, ')'))
			return 0;
	}
}

/* Map the descr "text" of length "len" to a dtype in "h".  Byte order '<'
 * is accepted for every type; '|', '=' and '>' only for one-byte types,
 * where order means nothing.  Return 0, or -1 with a message. */
static int parse_descr(const char *text, size_t len, npy_header *h,
	const npy_errors *errors)
{
	char shown[4 * NPY_SHOWN_TEXT_MAX + 8];
	show_text(text, len, shown, sizeof shown);
	const npy_type *type = NULL;
	for (size_t i = 0; len == 3 && i < sizeof npy_types / sizeof *npy_types;
	     i++)
		if (memcmp(text + 1, npy_types[i].code, 2) == 0)
			type = &npy_types[i];
	if (!type || !text[0] || !strchr("<>=|", text[0])) {
		fail(errors, "header: unsupported dtype '%s'", shown);
		return -1;
	}
	if (text[0] != '<' && tessel_dtype_size(type->dtype) > 1) {
		fail(errors,
		     text[0] == '>'
			     ? "header: big-endian dtype '%s' is not supported; "
			       "save little-endian ('<') data"
			     : "header: dtype '%s' does not say little-endian "
			       "('<'), which a multi-byte type needs",
		     shown);
		return -1;
	}
	h->dtype = type->dtype;
	return 0;
}

/* The keys a header dict must hold, as bits of a set. */
enum { KEY_DESCR = 1, KEY_FORTRAN_ORDER = 2, KEY_SHAPE = 4, KEY_ALL = 7 };

/* Parse the value of the key "key" (of length "len") into "h" and add the
 * key to "seen".  Return 0, or -1 with a message. */
static int parse_entry(dict_cursor *c, const char *key, size_t len,
	npy_header *h, int *seen)
{
	static const struct { const char *name; int bit; } keys[] = {
		{ "descr", KEY_DESCR },
		{ "fortran_order", KEY_FORTRAN_ORDER },
		{ "shape", KEY_SHAPE },
	};
	char shown[4 * NPY_SHOWN_TEXT_MAX + 8];
	show_text(key, len, shown, sizeof shown);
	int bit = 0;
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (strlen(keys[i].name) == len &&
		    memcmp(keys[i].name, key, len) == 0)
			bit = keys[i].bit;
	if (bit == 0 || (*seen & bit)) {
		fail(c->errors, "header: %s key '%s'",
		     bit ? "duplicate" : "unexpected", shown);
		return -1;
	}
	*seen |= bit;
	if (expect(c, ':', "expected ':' after a key") < 0)
		return -1;
	const char *descr;
	size_t descr_len;
	switch (bit) {
	case KEY_DESCR:
		if (parse_string(c, &descr, &descr_len) < 0)
			return -1;
		return parse_descr(descr, descr_len, h, c->errors);
	case KEY_FORTRAN_ORDER:
		return parse_bool(c, &h->fortran_order);
	default:
		return parse_shape(c, h);
	}
}

/* Report the first of the required keys missing from "seen". */
static void fail_missing_key(const npy_errors *errors, int seen)
{
	const char *missing = !(seen & KEY_DESCR)	    ? "descr"
			      : !(seen & KEY_FORTRAN_ORDER) ? "fortran_order"
							    : "shape";
	fail(errors, "header: missing key '%s'", missing);
}

/* Parse the header dict in the "len" bytes at "text" into "h": keys in any
 * order, whitespace anywhere Python allows it, a trailing comma.  Return 0,
 * or -1 with a message. */
static int parse_header_dict(const char *text, size_t len, npy_header *h,
	const npy_errors *errors)
{
	dict_cursor c = { text, text, text + len, errors };
	int seen = 0;
	if (expect(&c, '{', "expected '{'") < 0)
		return -1;
	while (!accept(&c, '}')) {
		const char *key;
		size_t key_len;
		if (parse_string(&c, &key, &key_len) < 0 ||
		    parse_entry(&c, key, key_len, h, &seen) < 0)
			return -1;
		if (accept(&c, '}'))
			break;
		if (expect(&c, ',', "expected ',' or '}'") < 0)
			return -1;
	}
	skip_space(&c);
	if (c.p != c.end) {
		dict_fail(&c, "unexpected text after the dict");
		return -1;
	}
	if (seen != KEY_ALL) {
		fail_missing_key(errors, seen);
		return -1;
	}
	if (h->fortran_order) {
		fail(errors, "header: fortran_order True (column-major data) "
			     "is not supported; save C-ordered data");
		return -1;
	}
	return 0;
}

/* Read the "len" bytes of header text from "src" into "text" and check
 * they end with a newline.  Return 0, or -1 with a message. */
static int read_header_text(npy_source *src, char *text, size_t len,
	const npy_errors *errors)
{
	size_t got = source_read(src, text, len);
	if (source_failed(src, errors))
		return -1;
	if (got < len) {
		fail(errors, "header truncated: expected %zu bytes, found %zu",
		     len, got);
		return -1;
	}
	if (len == 0 || text[len - 1] != '\n') {
		fail(errors, "header does not end with a newline");
		return -1;
	}
	return 0;
}

/* Read the "header_len" bytes of header from "src" and parse them into
 * "h".  Return 0, or -1 with a message. */
static int read_header(npy_source *src, size_t header_len, npy_header *h,
	const npy_errors *errors)
{
	char *text = malloc(header_len ? header_len : 1);
	if (!text) {
		fail(errors, "out of memory for a %zu-byte header", header_len);
		return -1;
	}
	int rc = read_header_text(src, text, header_len, errors) < 0
			 ? -1
			 : parse_header_dict(text, header_len, h, errors);
	free(text);
	return rc;
}

/* Report that the data holds "found" bytes where "expected" were due. */
static void fail_data_size(const npy_errors *errors, size_t expected,
	uint64_t found)
{
	if (found < expected)
		fail(errors, "data truncated: expected %zu bytes, found %llu",
		     expected, (unsigned long long)found);
	else
		fail(errors, "data too long: expected %zu bytes, found %llu",
		     expected, (unsigned long long)found);
}

/* Turn the little-endian elements just read into "t" into host order, and
 * bools into 0 or 1. */
static void decode_elements(tessel_tensor *t, int64_t numel)
{
	size_t itemsize = tessel_dtype_size(t->dtype);
	swap_little_endian_in_place(t->data, (size_t)numel, itemsize);
	if (t->dtype != TESSEL_BOOL)
		return;
	uint8_t *b = t->data;
	for (int64_t i = 0; i < numel; i++)
		b[i] = b[i] != 0;
}

/* Read the "bytes" bytes of elements from "src" into "t", and check that
 * nothing follows them.  Return 0, or -1 with a message. */
static int read_elements(npy_source *src, tessel_tensor *t, size_t bytes,
	const npy_errors *errors)
{
	size_t got = source_read(src, t->data, bytes);
	if (source_failed(src, errors))
		return -1;
	if (got < bytes) {
		fail_data_size(errors, bytes, got);
		return -1;
	}
	if (source_at_end(src))
		return 0;
	if (!source_failed(src, errors))
		fail(errors, "data too long: trailing bytes after the expected "
			     "%zu", bytes);
	return -1;
}

/* Read the elements "h" announces from "src" into a new tensor, and check
 * nothing follows them.  Return the tensor, or NULL with a message. */
static tessel_tensor *read_data(npy_source *src, const npy_header *h,
	const npy_errors *errors)
{
	int64_t numel;
	size_t bytes;
	if (shape_data_size(h->ndim, h->shape, tessel_dtype_size(h->dtype),
			    &numel, &bytes) < 0) {
		fail(errors, "header: shape has too many elements");
		return NULL;
	}
	int64_t remaining = source_remaining(src);
	if (remaining >= 0 && (uint64_t)remaining != bytes) {
		fail_data_size(errors, bytes, (uint64_t)remaining);
		return NULL;
	}
	char tensor_err[256];
	tessel_tensor *t = tessel_tensor_new(h->dtype, h->ndim, h->shape,
					     tensor_err, sizeof tensor_err);
	if (!t) {
		fail(errors, "%s", tensor_err);
		return NULL;
	}
	if (read_elements(src, t, bytes, errors) < 0) {
		tessel_tensor_free(t);
		return NULL;
	}
	decode_elements(t, numel);
	return t;
}

/* Read a whole .npy stream from "src".  Return the tensor, or NULL with a
 * message. */
static tessel_tensor *read_npy(npy_source *src, const npy_errors *errors)
{
	size_t header_len;
	npy_header h = { 0 };
	if (read_preamble(src, errors, &header_len) < 0 ||
	    read_header(src, header_len, &h, errors) < 0)
		return NULL;
	return read_data(src, &h, errors);
}

tessel_tensor *tessel_npy_parse(const void *data, size_t size,
	const char *name, char *err, size_t errlen)
{
	npy_errors errors = { name ? name : "<memory>", err, errlen };
	if (!data && size > 0) {
		fail(&errors, "no data");
		return NULL;
	}
	npy_source src = { .bytes = data, .size = data ? size : 0,
			   .file_size = -1 };
	return read_npy(&src, &errors);
}

tessel_tensor *tessel_npy_load(const char *path, char *err, size_t errlen)
{
	npy_errors errors = { path ? path : "<null>", err, errlen };
	FILE *f = path ? fopen(path, "rb") : NULL;
	if (!f) {
		fail(&errors, "cannot open: %s",
		     path ? strerror(errno) : "no path");
		return NULL;
	}
	struct stat st;
	bool regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
	npy_source src = { .file = f, .file_size = regular ? st.st_size : -1 };
	tessel_tensor *t = read_npy(&src, &errors);
	fclose(f);
	return t;
}

/* Return the .npy descr under which "dtype" is saved (bf16 as '<f4'). */
static const char *descr_of(tessel_dtype dtype)
{
	static const char *descr[TESSEL_DTYPE_COUNT] = {
		[TESSEL_BOOL] = "|b1", [TESSEL_I8] = "|i1",
		[TESSEL_I32] = "<i4",  [TESSEL_I64] = "<i8",
		[TESSEL_F16] = "<f2",  [TESSEL_BF16] = "<f4",
		[TESSEL_F32] = "<f4",  [TESSEL_F64] = "<f8",
		[TESSEL_U8] = "|u1",
	};
	return descr[dtype];
}

/* Return the size of one saved element of "dtype" (bf16 widens to 4). */
static size_t saved_itemsize(tessel_dtype dtype)
{
	return dtype == TESSEL_BF16 ? 4 : tessel_dtype_size(dtype);
}

/* Write the shape of "t" as a Python tuple into "out" of size "outlen". */
static void format_shape(const tessel_tensor *t, char *out, size_t outlen)
{
	size_t used = (size_t)snprintf(out, outlen, "(");
	for (int d = 0; d < t->ndim && used < outlen; d++)
		used += (size_t)snprintf(out + used, outlen - used, "%s%lld",
					 d ? ", " : "", (long long)t->shape[d]);
	if (used < outlen)
		snprintf(out + used, outlen - used, t->ndim == 1 ? ",)" : ")");
}

/* Return the header length that makes the data after a preamble of
 * "preamble_len" bytes and a dict of "dict_len" bytes start at a multiple of
 * NPY_DATA_ALIGNMENT, counting the padding and the final newline. */
static size_t padded_header_len(size_t preamble_len, size_t dict_len)
{
	size_t unpadded = preamble_len + dict_len + 1;
	size_t total = (unpadded + NPY_DATA_ALIGNMENT - 1) /
		       NPY_DATA_ALIGNMENT * NPY_DATA_ALIGNMENT;
	return total - preamble_len;
}

/* Build the preamble and padded header for "t" in a new buffer; store its
 * length in "len".  Format 1.0 unless the header needs more than 65535
 * bytes.  Return the buffer, or NULL when memory runs out. */
static char *build_header(const tessel_tensor *t, size_t *len)
{
	char shape[TESSEL_MAX_DIMS * 24 + 8];
	char dict[sizeof shape + 96];
	format_shape(t, shape, sizeof shape);
	size_t dict_len = (size_t)snprintf(dict, sizeof dict,
		"{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
		descr_of(t->dtype), shape);
	int major = padded_header_len(10, dict_len) <= NPY_V1_HEADER_LEN_MAX
			    ? 1 : 2;
	size_t preamble_len = major == 1 ? 10 : 12;
	size_t header_len = padded_header_len(preamble_len, dict_len);
	char *buf = malloc(preamble_len + header_len);
	if (!buf)
		return NULL;
	memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
	buf[6] = (char)major;
	buf[7] = 0;
	for (size_t i = 0; i < preamble_len - 8; i++)
		buf[8 + i] = (char)(header_len >> (8 * i));
	memcpy(buf + preamble_len, dict, dict_len);
	memset(buf + preamble_len + dict_len, ' ', header_len - dict_len - 1);
	buf[preamble_len + header_len - 1] = '\n';
	*len = preamble_len + header_len;
	return buf;
}

/* Return true if the elements of "t" lie in C order without gaps. */
static bool is_c_contiguous(const tessel_tensor *t)
{
	int64_t expected = 1;
	for (int d = t->ndim - 1; d >= 0; d--) {
		if (t->shape[d] == 0)
			return true;
		if (t->shape[d] != 1 && t->strides[d] != expected)
			return false;
		expected *= t->shape[d];
	}
	return true;
}

/* Append the element of "t" at "src" to "out" as the file stores it. */
static void encode_element(const tessel_tensor *t, const char *src,
	char *out)
{
	uint16_t bits;
	float widened;
	switch (t->dtype) {
	case TESSEL_BF16:
		memcpy(&bits, src, 2);
		widened = tessel_bf16_to_f32(bits);
		memcpy(out, &widened, 4);
		break;
	case TESSEL_BOOL:
		*out = *src != 0;
		break;
	default:
		memcpy(out, src, tessel_dtype_size(t->dtype));
		break;
	}
}

/* Step the C-order multi-index "index" of "t" to the next element, keeping
 * "offset" (in elements) in step with it through the strides. */
static void next_element(const tessel_tensor *t, int64_t *index,
	int64_t *offset)
{
	for (int d = t->ndim - 1; d >= 0; d--) {
		*offset += t->strides[d];
		if (++index[d] < t->shape[d])
			return;
		*offset -= t->strides[d] * t->shape[d];
		index[d] = 0;
	}
}

/* Write the "numel" elements of "t" to "f" one by one in C order, through
 * its strides, converting as encode_element does.  Return 0, or -1. */
static int write_elements(FILE *f, const tessel_tensor *t, int64_t numel)
{
	int64_t in_size = (int64_t)tessel_dtype_size(t->dtype);
	size_t out_size = saved_itemsize(t->dtype);
	char chunk[NPY_WRITE_CHUNK_ELEMENTS * 8];
	int64_t index[TESSEL_MAX_DIMS] = { 0 };
	int64_t offset = 0;
	size_t filled = 0;
	for (int64_t i = 0; i < numel; i++) {
		const char *element = (const char *)t->data + offset * in_size;
		encode_element(t, element, chunk + filled * out_size);
		next_element(t, index, &offset);
		if (++filled < NPY_WRITE_CHUNK_ELEMENTS && i + 1 < numel)
			continue;
		swap_little_endian_in_place(chunk, filled, out_size);
		if (fwrite(chunk, out_size, filled, f) != filled)
			return -1;
		filled = 0;
	}
	return 0;
}

/* Write the elements of "t" to "f" in C order, little-endian.  Return 0, or
 * -1 with errno set. */
static int write_data(FILE *f, const tessel_tensor *t, int64_t numel,
	size_t bytes)
{
	bool raw = is_c_contiguous(t) && host_is_little_endian() &&
		   t->dtype != TESSEL_BF16 && t->dtype != TESSEL_BOOL;
	if (raw)
		return fwrite(t->data, 1, bytes, f) == bytes ? 0 : -1;
	return write_elements(f, t, numel);
}

/* Create a new file beside "path" for writing, with a name no one else
 * uses, honoring the umask.  Store its name (to free) in "tmp_path" and
 * return it open, or NULL with a message. */
static FILE *create_temp_beside(const char *path, char **tmp_path,
	const npy_errors *errors)
{
	size_t cap = strlen(path) + 48;
	char *name = malloc(cap);
	if (!name) {
		fail(errors, "out of memory");
		return NULL;
	}
	int fd = -1;
	for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
		snprintf(name, cap, "%s.tmp-%ld-%d", path, (long)getpid(),
			 attempt);
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f) {
		fail(errors, "cannot create '%s': %s", name, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(name);
		}
		free(name);
		return NULL;
	}
	*tmp_path = name;
	return f;
}

/* Write the header "header" of "header_len" bytes and the data of "t" to
 * "f", flush them to disk and close "f".  Return 0, or -1 with a message. */
static int write_and_close(FILE *f, const char *header, size_t header_len,
	const tessel_tensor *t, int64_t numel, size_t bytes,
	const npy_errors *errors)
{
	bool ok = fwrite(header, 1, header_len, f) == header_len &&
		  write_data(f, t, numel, bytes) == 0 && fflush(f) == 0 &&
		  fsync(fileno(f)) == 0;
	int saved_errno = errno;
	if (fclose(f) != 0 && ok) {
		ok = false;
		saved_errno = errno;
	}
	if (!ok)
		fail(errors, "write failed: %s", strerror(saved_errno));
	return ok ? 0 : -1;
}

/* Check that "t" is a tensor that can be saved, and compute its element
 * count and data size.  Return 0, or -1 with a message. */
static int check_savable(const tessel_tensor *t, int64_t *numel,
	size_t *bytes, const npy_errors *errors)
{
	if (!t) {
		fail(errors, "no tensor to save");
		return -1;
	}
	if ((unsigned)t->dtype >= TESSEL_DTYPE_COUNT || t->ndim < 0 ||
	    t->ndim > TESSEL_MAX_DIMS ||
	    shape_data_size(t->ndim, t->shape, saved_itemsize(t->dtype), numel,
			    bytes) < 0) {
		fail(errors, "invalid tensor (dtype %d, %d dimensions)",
		     (int)t->dtype, t->ndim);
		return -1;
	}
	if (*numel > 0 && !t->data) {
		fail(errors, "tensor has no data");
		return -1;
	}
	return 0;
}

int tessel_npy_save(const char *path, const tessel_tensor *t, char *err,
	size_t errlen)
{
	npy_errors errors = { path ? path : "<null>", err, errlen };
	int64_t numel;
	size_t bytes;
	if (!path) {
		fail(&errors, "no path to save to");
		return -1;
	}
	if (check_savable(t, &numel, &bytes, &errors) < 0)
		return -1;
	size_t header_len;
	char *header = build_header(t, &header_len);
	char *tmp_path = NULL;
	FILE *f = header ? create_temp_beside(path, &tmp_path, &errors) : NULL;
	if (!header)
		fail(&errors, "out of memory");
	int rc = f ? write_and_close(f, header, header_len, t, numel, bytes,
				     &errors)
		   : -1;
	if (rc == 0 && rename(tmp_path, path) != 0) {
		fail(&errors, "cannot rename '%s' into place: %s", tmp_path,
		     strerror(errno));
		rc = -1;
	}
	if (rc != 0 && tmp_path)
		unlink(tmp_path);
	free(tmp_path);
	free(header);
	return rc;
}
