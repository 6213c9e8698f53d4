/* What each kernel of a cubin uses, read from the cubin (runtime/nvrtc.h):
 * the ELF file NVRTC writes holds per kernel a section ".nv.info.NAME"
 * (so the kernels are the names of those sections), and in ".nv.info"
 * attribute records that name a symbol: EIATTR_REGCOUNT (registers a
 * thread) and EIATTR_FRAME_SIZE (stack frame bytes a thread).  The
 * kernel's own section holds EIATTR_NUM_BARRIERS; its static shared
 * memory is the size of ".nv.shared.NAME", which on sm_90 includes the
 * 1 KiB the driver reserves per block when the cubin has a
 * ".nv.shared.reserved." section (ptxas reports the size less it).
 *
 * An attribute record is: format (1 byte), attribute (1 byte), then for
 * the format EIFMT_SVAL a 2-byte size and that many bytes, else a 2-byte
 * value.  The layout is NVIDIA's and not documented; the tests check
 * every field against ptxas's own report over hundreds of kernels, for
 * sm_80 and sm_90, so that a change of layout is seen in CI. */
#include "runtime/nvrtc.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	SHT_SYMTAB = 2,
	EIFMT_SVAL = 4,
	EIATTR_FRAME_SIZE = 0x11,
	EIATTR_REGCOUNT = 0x2f,
	EIATTR_NUM_BARRIERS = 0x4c,
	SHARED_RESERVED_SM90 = 1024,
};

typedef struct elf_section {
	const char *name;
	uint32_t name_offset, type, link;
	uint64_t offset, size;
} elf_section;

typedef struct elf_file {
	const uint8_t *data;
	size_t size;
	int nsections;
	elf_section *sections;
} elf_file;

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const uint8_t *p) { return u16(p) | (uint32_t)u16(p + 2) << 16; }
static uint64_t u64(const uint8_t *p) { return u32(p) | (uint64_t)u32(p + 4) << 32; }

/* Whether [offset, offset + size) lies inside the file. */
static bool inside(const elf_file *f, uint64_t offset, uint64_t size)
{
	return offset <= f->size && size <= f->size - offset;
}

/* Return the NUL-terminated string at "offset" of the string table
 * section "strtab", or NULL when it runs past the section. */
static const char *string_at(const elf_file *f, const elf_section *strtab, uint64_t offset)
{
	if (offset >= strtab->size)
		return NULL;
	const char *s = (const char *)f->data + strtab->offset + offset;
	return memchr(s, '\0', strtab->size - offset) ? s : NULL;
}

/* Read the section headers of the ELF64 little-endian "f" and their
 * names.  Return 0, or -1 with the reason in "err". */
static int read_sections(elf_file *f, char *err, size_t len)
{
	const uint8_t *d = f->data;
	if (f->size < 64 || memcmp(d, "\177ELF", 4) != 0 || d[4] != 2 || d[5] != 1) {
		snprintf(err, len, "the cubin is not a 64-bit little-endian ELF file");
		return -1;
	}
	uint64_t shoff = u64(d + 0x28);
	uint16_t shentsize = u16(d + 0x3a), shnum = u16(d + 0x3c), shstrndx = u16(d + 0x3e);
	if (shentsize < 64 || shnum == 0 || shstrndx >= shnum ||
	    !inside(f, shoff, (uint64_t)shentsize * shnum)) {
		snprintf(err, len, "the cubin's section headers are out of the file");
		return -1;
	}
	f->sections = calloc(shnum, sizeof(*f->sections));
	if (!f->sections) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	f->nsections = shnum;
	for (int i = 0; i < shnum; i++) {
		const uint8_t *h = d + shoff + (uint64_t)i * shentsize;
		elf_section *s = &f->sections[i];
		s->name_offset = u32(h);
		s->type = u32(h + 4);
		s->offset = u64(h + 24);
		s->size = u64(h + 32);
		s->link = u32(h + 40);
		if (s->type != 8 /* SHT_NOBITS */ && !inside(f, s->offset, s->size)) {
			snprintf(err, len, "the cubin's section %d is out of the file", i);
			return -1;
		}
	}
	for (int i = 0; i < shnum; i++)
		if (!(f->sections[i].name = string_at(f, &f->sections[shstrndx],
			f->sections[i].name_offset))) {
			snprintf(err, len, "the cubin's section %d has no name", i);
			return -1;
		}
	return 0;
}

/* Return the section called "prefix" followed by "name", or NULL. */
static const elf_section *section_named(const elf_file *f, const char *prefix,
	const char *name)
{
	size_t n = strlen(prefix);
	for (int i = 0; i < f->nsections; i++)
		if (strncmp(f->sections[i].name, prefix, n) == 0 &&
		    (!name || strcmp(f->sections[i].name + n, name) == 0))
			return &f->sections[i];
	return NULL;
}

/* Return the kernel of "ks" called "name", or NULL. */
static rt_kernel_usage *kernel_named(rt_kernel_usage *ks, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(ks[i].name, name) == 0)
			return &ks[i];
	return NULL;
}

/* Call "visit" on each attribute record of the section "s" with its
 * attribute, value (the 2-byte value, or the SVAL's size) and SVAL data
 * (NULL for other formats).  Return -1 when a record runs past the
 * section. */
static int each_attribute(const elf_file *f, const elf_section *s,
	void (*visit)(void *, int, uint32_t, const uint8_t *), void *arg)
{
	const uint8_t *p = f->data + s->offset, *end = p + s->size;
	while (p < end) {
		if (end - p < 4)
			return -1;
		int format = p[0], attribute = p[1];
		uint32_t value = u16(p + 2);
		p += 4;
		const uint8_t *data = NULL;
		if (format == EIFMT_SVAL) {
			if ((size_t)(end - p) < value)
				return -1;
			data = p;
			p += value;
		}
		visit(arg, attribute, value, data);
	}
	return 0;
}

typedef struct symbol_attributes {
	const elf_file *f;
	const elf_section *symtab, *strtab;
	rt_kernel_usage *kernels;
	int nkernels;
} symbol_attributes;

/* Store a REGCOUNT or FRAME_SIZE record of ".nv.info" in the kernel its
 * symbol names. */
static void per_symbol(void *arg, int attribute, uint32_t size, const uint8_t *data)
{
	symbol_attributes *a = arg;
	if ((attribute != EIATTR_REGCOUNT && attribute != EIATTR_FRAME_SIZE) || !data ||
	    size < 8)
		return;
	uint64_t symbol = u32(data);
	if (symbol >= a->symtab->size / 24)
		return;
	const char *name = string_at(a->f, a->strtab,
		u32(a->f->data + a->symtab->offset + symbol * 24));
	rt_kernel_usage *k = name ? kernel_named(a->kernels, a->nkernels, name) : NULL;
	if (!k)
		return;
	if (attribute == EIATTR_REGCOUNT)
		k->registers = (int)u32(data + 4);
	else
		k->stack_bytes = u32(data + 4);
}

/* Store a NUM_BARRIERS record of a kernel's own section. */
static void per_kernel(void *arg, int attribute, uint32_t value, const uint8_t *data)
{
	if (attribute == EIATTR_NUM_BARRIERS && !data)
		((rt_kernel_usage *)arg)->barriers = (int)value;
}

/* List the kernels of "f" (one per ".nv.info.NAME" section) into "*ks". */
static int list_kernels(const elf_file *f, rt_kernel_usage **ks, char *err, size_t len)
{
	static const char prefix[] = ".nv.info.";
	int n = 0;
	*ks = calloc((size_t)f->nsections + 1, sizeof(**ks));
	if (!*ks) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	for (int i = 0; i < f->nsections; i++)
		if (strncmp(f->sections[i].name, prefix, sizeof(prefix) - 1) == 0)
			snprintf((*ks)[n++].name, sizeof((*ks)->name), "%s",
				f->sections[i].name + sizeof(prefix) - 1);
	return n;
}

/* Fill the usage of the kernels "ks" of "f" from the attributes and the
 * shared sections. */
static int read_usage(const elf_file *f, rt_kernel_usage *ks, int n, char *err, size_t len)
{
	const elf_section *symtab = NULL;
	for (int i = 0; i < f->nsections && !symtab; i++)
		if (f->sections[i].type == SHT_SYMTAB)
			symtab = &f->sections[i];
	const elf_section *info = section_named(f, ".nv.info", "");
	if (!symtab || symtab->link >= (uint32_t)f->nsections || !info) {
		snprintf(err, len, "the cubin has no symbol table or no .nv.info section");
		return -1;
	}
	symbol_attributes a = { f, symtab, &f->sections[symtab->link], ks, n };
	if (each_attribute(f, info, per_symbol, &a)) {
		snprintf(err, len, "the cubin's .nv.info section is malformed");
		return -1;
	}
	bool reserved = section_named(f, ".nv.shared.reserved.", NULL) != NULL;
	for (int i = 0; i < n; i++) {
		const elf_section *own = section_named(f, ".nv.info.", ks[i].name);
		if (each_attribute(f, own, per_kernel, &ks[i])) {
			snprintf(err, len, "the cubin's section .nv.info.%s is malformed", ks[i].name);
			return -1;
		}
		const elf_section *shared = section_named(f, ".nv.shared.", ks[i].name);
		int64_t bytes = shared ? (int64_t)shared->size : 0;
		if (reserved && bytes >= SHARED_RESERVED_SM90)
			bytes -= SHARED_RESERVED_SM90;
		ks[i].shared_bytes = bytes;
		if (ks[i].registers <= 0) {
			snprintf(err, len, "the cubin gives no register count for kernel %s",
				ks[i].name);
			return -1;
		}
	}
	return 0;
}

int rt_cubin_usage(const void *image, size_t size, rt_kernel_usage **kernels, char *err,
	size_t len)
{
	elf_file f = { image, size, 0, NULL };
	*kernels = NULL;
	int n = read_sections(&f, err, len) ? -1 : list_kernels(&f, kernels, err, len);
	if (n >= 0 && read_usage(&f, *kernels, n, err, len))
		n = -1;
	if (n < 0) {
		free(*kernels);
		*kernels = NULL;
	}
	free(f.sections);
	return n;
}
