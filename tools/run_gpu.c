#include "tools/run_gpu.h"

#include <stdio.h>
#include <string.h>

#include "runtime/isolate.h"

int cli_run_gpu_child(int (*child)(void *job), void *job, cli_gpu_report *report,
	size_t timing_bytes, void *timing, double timeout_s, char *device, char *why,
	size_t len)
{
	report->device = rt_shared_alloc(CLI_GPU_DEVICE_LEN);
	report->error = rt_shared_alloc(CLI_GPU_ERROR_LEN);
	report->timing = timing ? rt_shared_alloc(timing_bytes) : NULL;
	char status[512];
	rt_run_status st = rt_run_isolated(child, job, timeout_s, status, sizeof(status));
	if (st != RT_RUN_OK)
		snprintf(why, len, "the kernel %s%s%.900s", status,
			report->error[0] ? ": " : "", report->error);
	if (report->timing) {
		memcpy(timing, report->timing, timing_bytes);
		rt_shared_free(report->timing, timing_bytes);
	}
	if (device)
		snprintf(device, CLI_GPU_DEVICE_LEN, "%s", report->device);
	rt_shared_free(report->device, CLI_GPU_DEVICE_LEN);
	rt_shared_free(report->error, CLI_GPU_ERROR_LEN);
	return st != RT_RUN_OK;
}
