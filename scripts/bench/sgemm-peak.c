// The machine's practical single-precision matrix-multiply rate: C = A·B with square N×N operands on the
// system OpenBLAS (the library the adapt executable links), with a fixed thread count.
//
//   cc -O2 -o sgemm-peak sgemm-peak.c -lopenblas && ./sgemm-peak N THREADS REPEATS
//
// One untimed call warms the caches and the thread pool; then REPEATS calls are timed one by one and
// the best and median rates are printed as one JSON object (2·N³ floating-point operations per call), both
// per wall-clock second and per CPU second of the process (all its threads): on a shared machine the second
// one is what the cores deliver while this program actually runs on them.
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

// Declared by OpenBLAS's cblas.h on most builds; repeated here so a header without them still compiles.
void openblas_set_num_threads(int);
char *openblas_get_config(void);
char *openblas_get_corename(void);

static double seconds_on(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: sgemm-peak N THREADS REPEATS\n");
        return 2;
    }
    int n = atoi(argv[1]), threads = atoi(argv[2]), repeats = atoi(argv[3]);
    if (n < 16 || threads < 1 || repeats < 1) {
        fprintf(stderr, "sgemm-peak: N must be at least 16, THREADS and REPEATS at least 1\n");
        return 2;
    }
    openblas_set_num_threads(threads);
    size_t count = (size_t)n * (size_t)n;
    float *a = malloc(count * sizeof(float)), *b = malloc(count * sizeof(float)), *c = malloc(count * sizeof(float));
    double *rates = malloc((size_t)repeats * sizeof(double)), *cpu_rates = malloc((size_t)repeats * sizeof(double));
    if (!a || !b || !c || !rates || !cpu_rates) {
        fprintf(stderr, "sgemm-peak: out of memory for N = %d\n", n);
        return 1;
    }
    // Values in [-0.5, 0.5): no denormals, no overflow, nothing the kernel could skip.
    unsigned state = 12345u;
    for (size_t i = 0; i < count; i++) {
        state = state * 1664525u + 1013904223u;
        a[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
        state = state * 1664525u + 1013904223u;
        b[i] = (float)(state >> 8) / 16777216.0f - 0.5f;
        c[i] = 0.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double flops = 2.0 * (double)n * (double)n * (double)n;
    for (int r = 0; r < repeats; r++) {
        double t0 = seconds_on(CLOCK_MONOTONIC), c0 = seconds_on(CLOCK_PROCESS_CPUTIME_ID);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        rates[r] = flops / (seconds_on(CLOCK_MONOTONIC) - t0) / 1e9;
        cpu_rates[r] = flops / (seconds_on(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e9;
    }
    qsort(rates, (size_t)repeats, sizeof(double), by_value);
    qsort(cpu_rates, (size_t)repeats, sizeof(double), by_value);
    printf("{\"n\": %d, \"threads\": %d, \"repeats\": %d, \"best_gflops\": %.2f, \"median_gflops\": %.2f, "
           "\"best_gflops_per_cpu_second\": %.2f, \"median_gflops_per_cpu_second\": %.2f, "
           "\"core\": \"%s\", \"config\": \"%s\", \"checksum\": %.6g}\n",
           n, threads, repeats, rates[repeats - 1], rates[repeats / 2], cpu_rates[repeats - 1],
           cpu_rates[repeats / 2], openblas_get_corename(),
           openblas_get_config(), (double)c[count / 2 + 7]);
    free(a); free(b); free(c); free(rates); free(cpu_rates);
    return 0;
}
