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
 * Node health (each a ';'-separated list by GPU index, the last entry standing for every later
 * GPU; an entry "err:N" makes that GPU's query return NVML code N, e.g. err:3 = NOT_SUPPORTED,
 * err:15 = GPU_IS_LOST; unset means the default, a healthy data-centre GPU):
 *   FAKE_NVML_ECC_MODE          current[/pending], 0 or 1                     (default 1)
 *   FAKE_NVML_ECC_UNCORRECTED   volatile/aggregate uncorrected error counts   (default 0/0)
 *   FAKE_NVML_RETIRED_PENDING   retired pages pending, 0 or 1                 (default 0)
 *   FAKE_NVML_REMAPPED_ROWS     correctable/uncorrectable/pending/failure     (default 0/0/0/0)
 *   FAKE_NVML_CLOCK_REASONS     clocks event (throttle) reason bits, e.g. 0x40 (default 0)
 *   FAKE_NVML_SM_CLOCK          current/max SM clock in MHz                   (default 1980/1980)
 *   FAKE_NVML_PCIE              gen/max gen/width/max width                   (default 5/5/16/16)
 *   FAKE_NVML_NVLINK            link states, "1,1,0,1" (1 = up)       (default: no NVLink)
 *   FAKE_NVML_PERSISTENCE       persistence mode, 0 or 1                      (default 1)
 *   FAKE_NVML_COMPUTE_MODE      0 default, 2 prohibited, 3 exclusive-process  (default 0)
 *   FAKE_NVML_PROCESSES         compute processes, "pid/used_mib,..."         (default none)
 *   FAKE_NVML_MEMORY_USED_MIB   memory in use                                 (default 0)
 * The PCI bus id of GPU i is 00000000:(i+1):00.0.
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

/* GPU `gpu`'s entry in the ';'-separated list in `var` (empty entries kept), or NULL when unset. */
static const char *gpu_entry(const char *var, int gpu, char *out, size_t size) {
    const char *spec = getenv(var), *start, *end;
    if (!spec || !*spec) return NULL;
    start = spec;
    for (int k = 0; k < gpu && (end = strchr(start, ';')) != NULL; k++) start = end + 1;
    end = strchr(start, ';');
    size_t n = end ? (size_t)(end - start) : strlen(start);
    if (n >= size) n = size - 1;
    memcpy(out, start, n);
    out[n] = '\0';
    return out;
}

/* Reads up to n '/'-separated numbers for GPU `gpu` from `var` over the defaults in `values`;
 * returns the NVML code an "err:N" entry asks for, else NVML_SUCCESS. */
static nvmlReturn_t gpu_values(const char *var, int gpu, unsigned long long *values, int n,
                               int *parsed) {
    char text[256];
    const char *entry = gpu_entry(var, gpu, text, sizeof text);
    if (parsed) *parsed = 0;
    if (!entry) return NVML_SUCCESS;
    if (strncmp(entry, "err:", 4) == 0) return (nvmlReturn_t)atoi(entry + 4);
    char *cursor = text;
    for (int k = 0; k < n && *cursor; k++) {
        char *next;
        unsigned long long v = strtoull(cursor, &next, 0);
        if (next == cursor) break;
        values[k] = v;
        if (parsed) (*parsed)++;
        cursor = *next == '/' ? next + 1 : next;
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t used_bytes(int gpu, unsigned long long total, unsigned long long *used) {
    unsigned long long mib = 0;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_MEMORY_USED_MIB", gpu, &mib, 1, NULL);
    *used = mib * 1024ULL * 1024ULL;
    if (*used > total) *used = total;
    return rc;
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
    nvmlReturn_t rc = used_bytes(i, memory->total, &memory->used);
    memory->free = memory->total - memory->used;
    return rc;
}
#endif

#ifndef OMIT_nvmlDeviceGetMemoryInfo_v2
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    int i = device_index(device);
    if (i < 0 || !memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = gpus[i].mem_mib * 1024ULL * 1024ULL;
    memory->reserved = 0;
    nvmlReturn_t rc = used_bytes(i, memory->total, &memory->used);
    memory->free = memory->total - memory->used;
    return rc;
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

/* ------------------------------------------------------------------ node health queries */

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;

#define CHECK_DEVICE(i, out) \
    int i = device_index(device); \
    if (i < 0 || !(out)) return NVML_ERROR_INVALID_ARGUMENT;

#ifndef OMIT_nvmlDeviceGetPciInfo_v3
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    CHECK_DEVICE(i, pci)
    memset(pci, 0, sizeof *pci);
    pci->bus = (unsigned int)(i + 1);
    pci->pciDeviceId = 0x233510DE;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetEccMode
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int *current, int *pending) {
    CHECK_DEVICE(i, current && pending)
    unsigned long long v[2] = {1, 1};
    int parsed;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_ECC_MODE", i, v, 2, &parsed);
    if (rc != NVML_SUCCESS) return rc;
    *current = (int)v[0];
    *pending = (int)(parsed == 1 ? v[0] : v[1]);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetTotalEccErrors
/* errorType 1 = uncorrected (0 = corrected, always 0 here); counterType 0 volatile, 1 aggregate */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                         unsigned long long *count) {
    CHECK_DEVICE(i, count)
    if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long v[2] = {0, 0};
    nvmlReturn_t rc = gpu_values("FAKE_NVML_ECC_UNCORRECTED", i, v, 2, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *count = errorType == 1 ? v[counterType] : 0;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetRetiredPagesPendingStatus
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int *pending) {
    CHECK_DEVICE(i, pending)
    unsigned long long v = 0;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_RETIRED_PENDING", i, &v, 1, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *pending = (int)v;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetRemappedRows
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corr, unsigned int *unc,
                                       unsigned int *pending, unsigned int *failure) {
    CHECK_DEVICE(i, corr && unc && pending && failure)
    unsigned long long v[4] = {0, 0, 0, 0};
    nvmlReturn_t rc = gpu_values("FAKE_NVML_REMAPPED_ROWS", i, v, 4, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *corr = (unsigned int)v[0];
    *unc = (unsigned int)v[1];
    *pending = (unsigned int)v[2];
    *failure = (unsigned int)v[3];
    return NVML_SUCCESS;
}
#endif

static nvmlReturn_t clock_reasons(nvmlDevice_t device, unsigned long long *reasons) {
    CHECK_DEVICE(i, reasons)
    unsigned long long v = 0;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_CLOCK_REASONS", i, &v, 1, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *reasons = v;
    return NVML_SUCCESS;
}
#ifndef OMIT_nvmlDeviceGetCurrentClocksEventReasons
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
    return clock_reasons(d, r);
}
#endif
#ifndef OMIT_nvmlDeviceGetCurrentClocksThrottleReasons
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
    return clock_reasons(d, r);
}
#endif

/* clock type 0 = graphics, 1 = SM: both answer the SM clock; other domains are not modelled */
static nvmlReturn_t sm_clock(nvmlDevice_t device, int type, unsigned int *clock, int which) {
    CHECK_DEVICE(i, clock)
    if (type != 0 && type != 1) return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long v[2] = {1980, 1980};
    nvmlReturn_t rc = gpu_values("FAKE_NVML_SM_CLOCK", i, v, 2, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *clock = (unsigned int)v[which];
    return NVML_SUCCESS;
}
#ifndef OMIT_nvmlDeviceGetClockInfo
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *clock) {
    return sm_clock(d, type, clock, 0);
}
#endif
#ifndef OMIT_nvmlDeviceGetMaxClockInfo
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *clock) {
    return sm_clock(d, type, clock, 1);
}
#endif

static nvmlReturn_t pcie(nvmlDevice_t device, unsigned int *value, int which) {
    CHECK_DEVICE(i, value)
    unsigned long long v[4] = {5, 5, 16, 16};
    nvmlReturn_t rc = gpu_values("FAKE_NVML_PCIE", i, v, 4, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *value = (unsigned int)v[which];
    return NVML_SUCCESS;
}
#ifndef OMIT_nvmlDeviceGetCurrPcieLinkGeneration
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
    return pcie(d, v, 0);
}
#endif
#ifndef OMIT_nvmlDeviceGetMaxPcieLinkGeneration
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) {
    return pcie(d, v, 1);
}
#endif
#ifndef OMIT_nvmlDeviceGetCurrPcieLinkWidth
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
    return pcie(d, v, 2);
}
#endif
#ifndef OMIT_nvmlDeviceGetMaxPcieLinkWidth
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) {
    return pcie(d, v, 3);
}
#endif

#ifndef OMIT_nvmlDeviceGetNvLinkState
/* A GPU without FAKE_NVML_NVLINK has no NVLink: every link is NOT_SUPPORTED, as on PCIe cards;
 * past its listed links a GPU answers INVALID_ARGUMENT, as the driver does past the last link. */
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *active) {
    char text[256];
    CHECK_DEVICE(i, active)
    const char *entry = gpu_entry("FAKE_NVML_NVLINK", i, text, sizeof text);
    if (!entry || !*entry) return NVML_ERROR_NOT_SUPPORTED;
    if (strncmp(entry, "err:", 4) == 0) return (nvmlReturn_t)atoi(entry + 4);
    const char *cursor = entry;
    for (unsigned int k = 0; k < link; k++) {
        cursor = strchr(cursor, ',');
        if (!cursor) return NVML_ERROR_INVALID_ARGUMENT;
        cursor++;
    }
    *active = atoi(cursor);
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetPersistenceMode
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int *mode) {
    CHECK_DEVICE(i, mode)
    unsigned long long v = 1;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_PERSISTENCE", i, &v, 1, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *mode = (int)v;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetComputeMode
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int *mode) {
    CHECK_DEVICE(i, mode)
    unsigned long long v = 0;
    nvmlReturn_t rc = gpu_values("FAKE_NVML_COMPUTE_MODE", i, &v, 1, NULL);
    if (rc != NVML_SUCCESS) return rc;
    *mode = (int)v;
    return NVML_SUCCESS;
}
#endif

#ifndef OMIT_nvmlDeviceGetComputeRunningProcesses_v3
/* NVML's two-call protocol: too small a buffer (or none) answers the count with
 * INSUFFICIENT_SIZE; no processes is SUCCESS with a count of 0. */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                                     nvmlProcessInfo_v2_t *infos) {
    char text[256];
    nvmlProcessInfo_v2_t found[16];
    unsigned int n = 0;
    CHECK_DEVICE(i, count)
    const char *entry = gpu_entry("FAKE_NVML_PROCESSES", i, text, sizeof text);
    if (entry && strncmp(entry, "err:", 4) == 0) return (nvmlReturn_t)atoi(entry + 4);
    for (const char *cursor = entry; cursor && *cursor && n < 16;) {
        char *next;
        unsigned long long pid = strtoull(cursor, &next, 10), mib = 0;
        if (next == cursor) break;
        if (*next == '/') mib = strtoull(next + 1, &next, 10);
        found[n].pid = (unsigned int)pid;
        found[n].usedGpuMemory = mib * 1024ULL * 1024ULL;
        found[n].gpuInstanceId = found[n].computeInstanceId = 0xFFFFFFFFu;
        n++;
        cursor = *next == ',' ? next + 1 : NULL;
    }
    if (n == 0) {
        *count = 0;
        return NVML_SUCCESS;
    }
    if (!infos || *count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(infos, found, n * sizeof found[0]);
    *count = n;
    return NVML_SUCCESS;
}
#endif
