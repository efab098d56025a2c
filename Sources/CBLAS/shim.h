#include <cblas.h>

// Exported by OpenBLAS's pthread build but not declared in its headers: stops the library's worker threads;
// the next multi-threaded call starts them again.
int blas_thread_shutdown_(void);
