/* A test double for libnvidia-ml.so.1: two fixed GPUs. Loaded by trainscope
 * through TRAINSCOPE_NVML_LIBRARY exactly as the real NVML would be; used only
 * because this machine has no NVIDIA GPU. Also answers the sampling calls the
 * resource monitor makes. */
#include <stdio.h>
#include <string.h>

typedef struct { unsigned long long total, free, used; } Memory;
typedef struct { unsigned int gpu, memory; } Utilization;
typedef void* Device;

static int initialised = 0;
static int devices[2] = {0, 1};

int nvmlInit_v2(void) { initialised = 1; return 0; }
int nvmlShutdown(void) { initialised = 0; return 0; }
const char* nvmlErrorString(int rc) { return rc == 0 ? "Success" : "Fake error"; }
int nvmlDeviceGetCount_v2(unsigned int* n) { if (!initialised) return 1; *n = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, Device* d) {
  if (i >= 2) return 2;
  *d = &devices[i];
  return 0;
}
static int idx(Device d) { return *(int*)d; }
int nvmlDeviceGetName(Device d, char* buf, unsigned int n) {
  snprintf(buf, n, "Fake GPU %c100", 'A' + idx(d));
  return 0;
}
int nvmlDeviceGetUUID(Device d, char* buf, unsigned int n) {
  snprintf(buf, n, "GPU-00000000-1111-2222-3333-00000000000%d", idx(d));
  return 0;
}
int nvmlDeviceGetSerial(Device d, char* buf, unsigned int n) {
  snprintf(buf, n, "SERIAL-%d", 1320 + idx(d));
  return 0;
}
int nvmlSystemGetDriverVersion(char* buf, unsigned int n) {
  snprintf(buf, n, "535.104.05");
  return 0;
}
int nvmlSystemGetCudaDriverVersion(int* v) { *v = 12020; return 0; }
int nvmlDeviceGetMemoryInfo(Device d, Memory* m) {
  m->total = 40ull << 30;
  m->used = (1ull + idx(d)) << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(Device d, int* major, int* minor) {
  *major = 8;
  *minor = idx(d);
  return 0;
}
int nvmlDeviceGetMaxClockInfo(Device d, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1410 : 1215;
  return 0;
}
int nvmlDeviceGetPowerManagementLimit(Device d, unsigned int* mw) { *mw = 400000; return 0; }

/* Sampling: fixed, per-device values; the energy counter advances on every
 * call, and the calling process appears as a compute process on GPU 0. */
#include <unistd.h>
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } ProcessInfo;
static unsigned long long energy_mj[2] = {1000000, 2000000};
int nvmlDeviceGetUtilizationRates(Device d, Utilization* u) {
  u->gpu = 40 + 10 * idx(d);
  u->memory = 20;
  return 0;
}
int nvmlDeviceGetPowerUsage(Device d, unsigned int* mw) { *mw = 150000 + 50000 * idx(d); return 0; }
int nvmlDeviceGetTemperature(Device d, int sensor, unsigned int* c) { *c = 60 + idx(d); return 0; }
int nvmlDeviceGetClockInfo(Device d, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1200 : 1000;
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(Device d, unsigned long long* mj) {
  energy_mj[idx(d)] += 150000; /* 150 J per reading */
  *mj = energy_mj[idx(d)];
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(Device d, unsigned int* count, ProcessInfo* infos) {
  if (idx(d) != 0 || *count < 1) { *count = 0; return 0; }
  infos[0].pid = (unsigned)getpid();
  infos[0].used = 3ull << 30;
  *count = 1;
  return 0;
}
