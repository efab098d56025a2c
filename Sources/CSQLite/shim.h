#include <sqlite3.h>

// sqlite3_config is variadic, which Swift cannot call. Turning memory statistics off spares every allocation
// SQLite makes a global mutex; it must run before the first connection is opened (SQLITE_MISUSE afterwards,
// which leaves the default and is harmless).
static inline int adapt_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
