/*
 * A stand-in libnvidia-ml.so.1 for tests: the functions nvidia-ml-py (pynvml) calls, answering
 * from environment variables instead of a driver.
 *
 *   FAKE_NVML_DRIVER      driver version string              (default "580.82.07")
 *   FAKE_NVML_CUDA        CUDA driver version as NVML's int   (default 13000 = 13.0)
 *   FAKE_NVML_GPUS        "name:cc:memory_mib[:mig];..."      e.g. "NVIDIA H200:9.0:143771"
 *                         mig is 0 or 1; without it nvmlDeviceGetMigMode says NOT_SUPPORTED
 *   FAKE_NVML_INIT_ERROR  an NVML return code for nvmlInit*  (18 = LIB_RM_VERSION_MISMATCH)
 *
 * Compile with -DOMIT_<function> to leave one function out, as an older driver's library would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <stdint.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define MAX_GPUS 64

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;

typedef struct {
    char name[96];
    int major, minor;
    unsigned long long mem_mib;
    int mig; /* -1: not supported */
} fake_gpu;

static fake_gpu gpus[MAX_GPUS];
static int gpu_count = -1;
static int initialised = 0;

static void load(void) {
    if (gpu_count >= 0) return;
    gpu_count = 0;
    const char *spec = getenv("FAKE_NVML_GPUS");
    if (!spec || !*spec) return;
    char *copy = strdup(spec), *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item && gpu_count < MAX_GPUS;
         item = strtok_r(NULL, ";", &save)) {
        fake_gpu *g = &gpus[gpu_count];
        char *f_save = NULL;
        char *name = strtok_r(item, ":", &f_save);
        char *cc = strtok_r(NULL, ":", &f_save);
        char *mem = strtok_r(NULL, ":", &f_save);
        char *mig = strtok_r(NULL, ":", &f_save);
        if (!name) continue;
        snprintf(g->name, sizeof g->name, "%s", name);
        g->major = g->minor = 0;
        if (cc) sscanf(cc, "%d.%d", &g->major, &g->minor);
        g->mem_mib = mem ? strtoull(mem, NULL, 10) : 0;
        g->mig = mig ? atoi(mig) : -1;
        gpu_count++;
    }
    free(copy);
}

static int device_index(nvmlDevice_t device) {
    intptr_t i = (intptr_t)device - 1;
    load();
    return (i >= 0 && i < gpu_count) ? (int)i : -1;
}

static nvmlReturn_t copy_out(char *buf, unsigned int length, const char *text) {
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(buf, text);
    return NVML_SUCCESS;
}

static nvmlReturn_t do_init(void) {
    const char *hang = getenv("FAKE_NVML_HANG_SECONDS");  /* a wedged driver */
    if (hang && *hang) sleep((unsigned int)atoi(hang));
    const char *err = getenv("FAKE_NVML_INIT_ERROR");
    if (err && *err) return (nvmlReturn_t)atoi(err);
    load();
    initialised = 1;
    return NVML_SUCCESS;
}

#ifndef OMIT_nvmlInitWithFlags
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return do_init(); }
#endif
nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
nvmlReturn_t nvmlInit(void) { return do_init(); }

nvmlReturn_t nvmlShutdown(void) { initialised = 0; return NVML_SUCCESS; }

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    default: return "Unknown Error";
    }
}

#ifndef OMIT_nvmlSystemGetDriverVersion
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    const char *v = getenv("FAKE_NVML_DRIVER");
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return copy_out(version, length, v && *v ? v : "580.82.07");
}
#endif

static nvmlReturn_t cuda_version(int *out) {
    const char *v = getenv("FAKE_NVML_CUDA");
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!out) return NVML_ERROR_INVALID_ARGUMENT;
    *out = v && *v ? atoi(v) : 13000;
    return NVML_SUCCESS;
}
#ifndef OMIT_nvmlSystemGetCudaDriverVersion_v2
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return cuda_version(v); }
#endif
#ifndef OMIT_nvmlSystemGetCudaDriverVersion
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { return cuda_version(v); }
#endif

#ifndef OMIT_nvmlDeviceGetCount_v2
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)gpu_count;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetHandleByIndex_v2
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!device || (int)index >= gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    *device = (nvmlDevice_t)(intptr_t)(index + 1);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetName
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    int i = device_index(device);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    return copy_out(name, length, gpus[i].name);
}
#endif

#ifndef OMIT_nvmlDeviceGetCudaComputeCapability
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    int i = device_index(device);
    if (i < 0 || !major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = gpus[i].major;
    *minor = gpus[i].minor;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetMemoryInfo
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    int i = device_index(device);
    if (i < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = gpus[i].mem_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetMemoryInfo_v2
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    int i = device_index(device);
    if (i < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = gpus[i].mem_mib * 1024ULL * 1024ULL;
    memory->reserved = memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetUUID
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    char text[64];
    int i = device_index(device);
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(text, sizeof text, "GPU-00000000-0000-0000-0000-%012d", i);
    return copy_out(uuid, length, text);
}
#endif

#ifndef OMIT_nvmlDeviceGetMigMode
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    int i = device_index(device);
    if (i < 0 || !current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpus[i].mig < 0) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = (unsigned int)gpus[i].mig;
    return NVML_SUCCESS;
}
#endif
