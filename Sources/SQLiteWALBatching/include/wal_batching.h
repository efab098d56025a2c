#ifndef ADAPT_WAL_BATCHING_H
#define ADAPT_WAL_BATCHING_H

/// Registers (once; later calls return the same) a VFS over SQLite's default one that writes a transaction's
/// WAL frames with one write call instead of two per frame. Returns its name for sqlite3_open_v2, or NULL if
/// it could not be registered (connections then use the default VFS, which is equally correct).
const char *adapt_wal_batching_register(void);

#endif
