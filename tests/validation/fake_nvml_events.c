/*
 * The stand-in libnvidia-ml.so.1 of tests/detection/fake_nvml.c (every FAKE_NVML_* setting it
 * documents) with NVML's event sets added, for the Xid watch:
 *
 *   FAKE_NVML_XIDS   "gpu:xid@ms,..."  Xid `xid` on GPU `gpu`, waiting `ms` milliseconds after
 *                    the event set was created (0: waiting at once, as an Xid raised before the
 *                    run would be when validation begins to watch)
 *
 * Events are delivered by nvmlEventSetWait_v2 in time order, each once, for the GPUs registered
 * for Xid events; a wait with none due within its timeout answers NVML_ERROR_TIMEOUT.
 * Build: cc -shared -fPIC -I tests/detection -o libnvidia-ml.so.1 fake_nvml_events.c
 */
#include "fake_nvml.c"
#include <time.h>

#define NVML_ERROR_TIMEOUT 10
#define NVML_EVENT_TYPE_XID 0x8ULL
#define MAX_EVENTS 64

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

typedef struct { int gpu; unsigned long long xid; double ms; int delivered; } fake_event;

static fake_event events[MAX_EVENTS];
static int event_count = 0;
static unsigned long long registered = 0;  /* bit i: GPU i is registered for Xid events */
static double created_at = 0;
static int the_set = 0;  /* the one event set's address is its handle */

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void load_events(void) {
    event_count = 0;
    const char *spec = getenv("FAKE_NVML_XIDS");
    if (!spec || !*spec) return;
    char *copy = strdup(spec), *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && event_count < MAX_EVENTS;
         item = strtok_r(NULL, ",", &save)) {
        fake_event *e = &events[event_count];
        double ms = 0;
        if (sscanf(item, "%d:%llu@%lf", &e->gpu, &e->xid, &ms) < 2) continue;
        e->ms = ms;
        e->delivered = 0;
        event_count++;
    }
    free(copy);
}

nvmlReturn_t nvmlEventSetCreate(void **set) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    load_events();
    registered = 0;
    created_at = now_ms();
    *set = &the_set;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, void *set) {
    int i = device_index(device);
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (i < 0 || set != &the_set) return NVML_ERROR_INVALID_ARGUMENT;
    if (!(types & NVML_EVENT_TYPE_XID)) return NVML_ERROR_NOT_SUPPORTED;
    registered |= 1ULL << i;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    int i = device_index(device);
    if (i < 0 || !index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned int)i;
    return NVML_SUCCESS;
}

static fake_event *next_event(void) {
    fake_event *best = NULL;
    for (int k = 0; k < event_count; k++) {
        fake_event *e = &events[k];
        if (!e->delivered && (registered >> e->gpu & 1) && (!best || e->ms < best->ms)) best = e;
    }
    return best;
}

nvmlReturn_t nvmlEventSetWait_v2(void *set, nvmlEventData_t *data, unsigned int timeoutms) {
    if (set != &the_set || !data) return NVML_ERROR_INVALID_ARGUMENT;
    double deadline = now_ms() + timeoutms;
    for (;;) {
        fake_event *e = next_event();
        double t = now_ms();
        if (e && created_at + e->ms <= t) {
            e->delivered = 1;
            memset(data, 0, sizeof *data);
            data->device = (nvmlDevice_t)(intptr_t)(e->gpu + 1);
            data->eventType = NVML_EVENT_TYPE_XID;
            data->eventData = e->xid;
            return NVML_SUCCESS;
        }
        if (t >= deadline) return NVML_ERROR_TIMEOUT;
        double until = e && created_at + e->ms < deadline ? created_at + e->ms : deadline;
        usleep((useconds_t)((until - t) * 1000) + 1);
    }
}

nvmlReturn_t nvmlEventSetFree(void *set) {
    return set == &the_set ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
