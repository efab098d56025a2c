// A VFS that wraps SQLite's default one and changes a single thing: how a commit's WAL frames reach the file.
//
// SQLite writes each WAL frame with two calls, its 24-byte header and then its page, so a commit of five
// 1 KB pages costs ten pwrite calls. At synchronous=NORMAL nothing else in a commit is as expensive (each
// call costs more than copying the page). Here a run of frames is kept in memory and written with one call
// when its commit frame is complete, so a commit of up to 64 KB of frames costs one call.
//
// Why it is safe:
// - Other connections learn of new frames only from the wal-index header, which SQLite updates after the
//   commit frame's page has been written. That write is the one that sends the whole run to the file, and
//   its error (a full disk) is returned to SQLite exactly as an unbatched write's would be.
// - Frames still held are never part of a finished commit: a cache spill's frames, or the frames before
//   the commit frame. A crash loses them as it loses any uncommitted frames; recovery stops at the last
//   commit frame whose checksum chain is whole.
// - A transaction that ends without its commit frame (a rollback, a failed commit) releases the WAL's
//   write lock with frames still held. They are dropped right there: the next writer, in this process or
//   another, writes its own frames where they would have gone.
// - Every other operation on the WAL within the transaction (a read, sync, truncate, size, lock, file
//   control) writes what is held first, so SQLite never sees a file that differs from what it wrote.
// - Only a write where this handle's last write ended starts a run: a frame's header, whose page SQLite
//   writes next. A lone header write (SQLite rewriting the checksums of frames it overwrote within a
//   transaction) never starts one: SQLite reads each such frame first and rewrites it in place, behind
//   the end of the WAL, so it goes straight to the file.
#include "wal_batching.h"

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

enum {
    frame_header_size = 24,
    // The wal-index lock a writer holds for its whole transaction (lock 0 in SQLite's WAL format).
    wal_write_lock = 0,
    // Databases with frames held at one time in this process; beyond it, frames are written at once.
    max_holders = 64,
    // Larger runs (a big import) are written in pieces of this size. It must stay below 128 KB: the unix
    // VFS writes at most 0x1ffff bytes per call and reports a longer write as a full disk.
    run_capacity = 64 * 1024,
};

typedef struct {
    sqlite3_file base;      // first, as SQLite requires: what SQLite holds
    sqlite3_file *inner;    // the default VFS's file, allocated right after this struct
    const char *name;       // SQLite's, valid until close: the database's path, or the WAL's (path + "-wal")
    int is_wal;
    unsigned char *run;     // frames held: [run_offset, run_offset + run_length)
    int run_length;
    sqlite3_int64 run_offset;
    sqlite3_int64 written_end;      // where this handle's last write ended
    int last_was_commit_header;     // the next write is the page of a commit frame
} BatchedFile;

static sqlite3_vfs *inner_vfs;

// The WAL files holding frames. Only the connection holding a database's write lock writes its frames, so
// a database has at most one; the lock guards the list, and each file's frames are touched only by its own
// connection.
static pthread_mutex_t holders_lock = PTHREAD_MUTEX_INITIALIZER;
static BatchedFile *holders[max_holders];
static int holder_count;

static int add_holder(BatchedFile *file) {
    pthread_mutex_lock(&holders_lock);
    int added = holder_count < max_holders;
    if (added) holders[holder_count++] = file;
    pthread_mutex_unlock(&holders_lock);
    return added;
}

static void remove_holder(BatchedFile *file) {
    pthread_mutex_lock(&holders_lock);
    for (int i = 0; i < holder_count; i++) {
        if (holders[i] == file) {
            holders[i] = holders[--holder_count];
            break;
        }
    }
    pthread_mutex_unlock(&holders_lock);
}

static int is_wal_of(const char *wal_name, const char *database_name) {
    size_t length = strlen(database_name);
    return strncmp(wal_name, database_name, length) == 0 && strcmp(wal_name + length, "-wal") == 0;
}

static sqlite3_file *inner(sqlite3_file *file) { return ((BatchedFile *)file)->inner; }

static int write_run(BatchedFile *file) {
    if (file->run_length == 0) return SQLITE_OK;
    int length = file->run_length;
    file->run_length = 0;
    remove_holder(file);
    return file->inner->pMethods->xWrite(file->inner, file->run, length, file->run_offset);
}

// Forgets, unwritten, the frames held for the database at `database_name`: its write transaction ended
// without its commit frame.
static void drop_held_frames(const char *database_name) {
    pthread_mutex_lock(&holders_lock);
    for (int i = 0; i < holder_count; i++) {
        if (is_wal_of(holders[i]->name, database_name)) {
            holders[i]->run_length = 0;
            holders[i] = holders[--holder_count];
            break;
        }
    }
    pthread_mutex_unlock(&holders_lock);
}

static int commit_size(const void *header) {
    const unsigned char *bytes = (const unsigned char *)header + 4;
    return bytes[0] | bytes[1] | bytes[2] | bytes[3];
}

static int batched_write(sqlite3_file *handle, const void *data, int amount, sqlite3_int64 offset) {
    BatchedFile *file = (BatchedFile *)handle;
    if (!file->is_wal) return file->inner->pMethods->xWrite(file->inner, data, amount, offset);

    int continues_run = file->run_length > 0 && offset == file->run_offset + file->run_length
                        && file->run_length + amount <= run_capacity;
    if (file->run_length > 0 && !continues_run) {
        int rc = write_run(file);
        if (rc != SQLITE_OK) return rc;
    }
    int completes_commit = file->last_was_commit_header;
    file->last_was_commit_header = amount == frame_header_size && commit_size(data) != 0;
    int starts_run = !continues_run && offset == file->written_end && !completes_commit && amount <= run_capacity
                     && (file->run != NULL || (file->run = sqlite3_malloc(run_capacity)) != NULL)
                     && add_holder(file);
    file->written_end = offset + amount;

    if (!continues_run && !starts_run) return file->inner->pMethods->xWrite(file->inner, data, amount, offset);
    if (starts_run) file->run_offset = offset;
    memcpy(file->run + file->run_length, data, (size_t)amount);
    file->run_length += amount;
    return completes_commit ? write_run(file) : SQLITE_OK;
}

// Every other method forwards to the inner file, writing held frames first where the file is involved.
#define HELD_FRAMES_FIRST(handle)                                \
    do {                                                         \
        int held_rc = write_run((BatchedFile *)(handle));        \
        if (held_rc != SQLITE_OK) return held_rc;                \
    } while (0)

static int batched_close(sqlite3_file *handle) {
    BatchedFile *file = (BatchedFile *)handle;
    // A connection closes outside any transaction, so nothing is held (a held run would be uncommitted).
    if (file->run_length > 0) {
        file->run_length = 0;
        remove_holder(file);
    }
    sqlite3_free(file->run);
    file->run = NULL;
    return file->inner->pMethods->xClose(file->inner);
}

static int batched_read(sqlite3_file *f, void *data, int amount, sqlite3_int64 offset) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xRead(inner(f), data, amount, offset);
}

static int batched_truncate(sqlite3_file *f, sqlite3_int64 size) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xTruncate(inner(f), size);
}

static int batched_sync(sqlite3_file *f, int flags) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xSync(inner(f), flags);
}

static int batched_file_size(sqlite3_file *f, sqlite3_int64 *size) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xFileSize(inner(f), size);
}

static int batched_lock(sqlite3_file *f, int level) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xLock(inner(f), level);
}

static int batched_unlock(sqlite3_file *f, int level) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xUnlock(inner(f), level);
}

static int batched_check_reserved_lock(sqlite3_file *f, int *reserved) {
    return inner(f)->pMethods->xCheckReservedLock(inner(f), reserved);
}

static int batched_file_control(sqlite3_file *f, int op, void *argument) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xFileControl(inner(f), op, argument);
}

static int batched_sector_size(sqlite3_file *f) { return inner(f)->pMethods->xSectorSize(inner(f)); }

static int batched_device_characteristics(sqlite3_file *f) {
    return inner(f)->pMethods->xDeviceCharacteristics(inner(f));
}

static int batched_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **mapped) {
    return inner(f)->pMethods->xShmMap(inner(f), region, size, extend, mapped);
}

static int batched_shm_lock(sqlite3_file *f, int offset, int count, int flags) {
    // Frames held when the write lock is released belong to a transaction that ended without its commit frame.
    const char *name = ((BatchedFile *)f)->name;
    if (offset == wal_write_lock && flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE) && name != NULL) {
        drop_held_frames(name);
    }
    return inner(f)->pMethods->xShmLock(inner(f), offset, count, flags);
}

static void batched_shm_barrier(sqlite3_file *f) { inner(f)->pMethods->xShmBarrier(inner(f)); }

static int batched_shm_unmap(sqlite3_file *f, int delete_flag) {
    return inner(f)->pMethods->xShmUnmap(inner(f), delete_flag);
}

static int batched_fetch(sqlite3_file *f, sqlite3_int64 offset, int amount, void **pages) {
    HELD_FRAMES_FIRST(f);
    return inner(f)->pMethods->xFetch(inner(f), offset, amount, pages);
}

static int batched_unfetch(sqlite3_file *f, sqlite3_int64 offset, void *page) {
    return inner(f)->pMethods->xUnfetch(inner(f), offset, page);
}

static const sqlite3_io_methods batched_methods = {
    3,
    batched_close, batched_read, batched_write, batched_truncate, batched_sync, batched_file_size,
    batched_lock, batched_unlock, batched_check_reserved_lock, batched_file_control, batched_sector_size,
    batched_device_characteristics, batched_shm_map, batched_shm_lock, batched_shm_barrier, batched_shm_unmap,
    batched_fetch, batched_unfetch,
};

static int batched_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *handle, int flags, int *out_flags) {
    (void)vfs;
    BatchedFile *file = (BatchedFile *)handle;
    memset(file, 0, sizeof *file);
    file->inner = (sqlite3_file *)(file + 1);
    file->name = name;
    file->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
    file->written_end = -1;
    int rc = inner_vfs->xOpen(inner_vfs, name, file->inner, flags, out_flags);
    // SQLite closes a file whose pMethods is set even when the open failed, so the inner file gets closed.
    if (file->inner->pMethods != NULL) {
        // Forwarding assumes the inner file has every method of version 3 (the unix VFS does).
        if (file->inner->pMethods->iVersion < 3) {
            file->inner->pMethods->xClose(file->inner);
            return SQLITE_CANTOPEN;
        }
        file->base.pMethods = &batched_methods;
    }
    return rc;
}

static sqlite3_vfs batched_vfs;
static const char *registered_name;

const char *adapt_wal_batching_register(void) {
    // Swift calls this from one lazily initialised global, so it runs once.
    if (registered_name != NULL) return registered_name;
    if (sqlite3_initialize() != SQLITE_OK) return NULL;
    inner_vfs = sqlite3_vfs_find(NULL);
    if (inner_vfs == NULL) return NULL;
    batched_vfs = *inner_vfs;
    batched_vfs.zName = "adapt-batched-wal";
    batched_vfs.szOsFile = (int)sizeof(BatchedFile) + inner_vfs->szOsFile;
    batched_vfs.xOpen = batched_open;
    batched_vfs.pNext = NULL;
    if (sqlite3_vfs_register(&batched_vfs, 0) != SQLITE_OK) return NULL;
    registered_name = batched_vfs.zName;
    return registered_name;
}
