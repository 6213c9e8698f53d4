/* oneDNN where its header (oneapi/dnnl/dnnl.h, libdnnl-dev) was missing
 * when tessel was built: never available. */
#include <stdio.h>

#include "tools/vendor.h"

static bool onednn_supports(const vendor_problem *p)
{
	return p->kind == VENDOR_GEMM || p->kind == VENDOR_CONV2D ||
	       p->kind == VENDOR_TRANSPOSE || p->kind == VENDOR_SOFTMAX ||
	       p->kind == VENDOR_POOL2D || p->kind == VENDOR_LAYER_NORM ||
	       p->kind == VENDOR_BATCH_NORM;
}

static int onednn_load(const vendor_env *env, char *err, size_t errlen)
{
	(void)env;
	snprintf(err, errlen, "tessel was built without oneapi/dnnl/dnnl.h");
	return -1;
}

static int onednn_probe(char *what, size_t len)
{
	snprintf(what, len, "tessel was built without oneapi/dnnl/dnnl.h");
	return -1;
}

static int onednn_prepare(const vendor_env *env, const vendor_problem *p,
	const void *const *in, void *out, vendor_run *r, char *err, size_t errlen)
{
	(void)env;
	(void)p, (void)in, (void)out, (void)r;
	snprintf(err, errlen, "not available");
	return -1;
}

const vendor vendor_onednn = {
	"onednn", false, onednn_supports, onednn_load, onednn_prepare, onednn_probe
};
