/*
 * Stand-ins for the CUDA runtime (libcudart.so.12) and cuBLAS (libcublas.so.12) for tests: the
 * two version queries the validation probe makes, answering from environment variables.
 *
 *   -DSTAND_IN_CUDART   cudaRuntimeGetVersion: FAKE_CUDART_VERSION as CUDA's int (12080 = 12.8)
 *   -DSTAND_IN_CUBLAS   cublasGetProperty: FAKE_CUBLAS_VERSION "major.minor.patch"
 *
 * An unset variable makes the query fail (error 1), as a library that cannot answer would.
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef STAND_IN_CUDART
int cudaRuntimeGetVersion(int *version) {
    const char *text = getenv("FAKE_CUDART_VERSION");
    if (!text || !*text) return 1;
    *version = atoi(text);
    return 0;
}
#endif

#ifdef STAND_IN_CUBLAS
int cublasGetProperty(int type, int *value) {
    const char *text = getenv("FAKE_CUBLAS_VERSION");
    int parts[3] = {0, 0, 0};
    if (!text || !*text || type < 0 || type > 2) return 1;
    if (sscanf(text, "%d.%d.%d", &parts[0], &parts[1], &parts[2]) < 1) return 1;
    *value = parts[type];
    return 0;
}
#endif
