// The floor under enqueue→start on PostgreSQL, for scripts/bench/queue_pg_bench.py: one libpq connection commits
// an insert and a NOTIFY (the least an enqueue that wakes a worker does), a second one, listening, receives it,
// then commits an update of the inserted row (the least a claim that is durable before its job starts does: one
// more commit and its WAL flush). Both are polled from this one thread, so no thread hand-off is counted. Prints
// two latencies per line, in milliseconds from just before the enqueue's commit was sent: to the notification's
// arrival, and to the claim's commit returning.
//
//   cc -O2 notify_floor.c -I"$(pg_config --includedir)" -lpq -o notify_floor
//   ./notify_floor CONNINFO COUNT INTERVAL_MS
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double milliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

static void run(PGconn *connection, const char *sql) {
    PGresult *result = PQexec(connection, sql);
    ExecStatusType status = PQresultStatus(result);
    PQclear(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        fprintf(stderr, "notify_floor: %s: %s", sql, PQerrorMessage(connection));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: notify_floor CONNINFO COUNT INTERVAL_MS\n");
        return 2;
    }
    int count = atoi(argv[2]), interval = atoi(argv[3]);
    PGconn *sender = PQconnectdb(argv[1]), *listener = PQconnectdb(argv[1]);
    if (PQstatus(sender) != CONNECTION_OK || PQstatus(listener) != CONNECTION_OK) {
        fprintf(stderr, "notify_floor: cannot connect: %s", PQerrorMessage(PQstatus(sender) != CONNECTION_OK ? sender : listener));
        return 1;
    }
    run(sender, "SET client_min_messages = warning");
    run(sender, "CREATE TABLE IF NOT EXISTS notify_floor (id bigserial PRIMARY KEY, claimed boolean NOT NULL DEFAULT false)");
    run(listener, "LISTEN notify_floor");
    for (int i = 0; i < count; i++) {
        usleep(interval * 1000);
        double start = milliseconds();
        run(sender, "BEGIN; INSERT INTO notify_floor DEFAULT VALUES; NOTIFY notify_floor; COMMIT");
        struct pollfd socket = {PQsocket(listener), POLLIN, 0};
        PGnotify *notification;
        while ((notification = PQnotifies(listener)) == NULL) {
            if (poll(&socket, 1, 10000) <= 0 || PQconsumeInput(listener) != 1) {
                fprintf(stderr, "notify_floor: no notification: %s", PQerrorMessage(listener));
                return 1;
            }
        }
        PQfreemem(notification);
        double received = milliseconds() - start;
        run(listener, "UPDATE notify_floor SET claimed = true WHERE id = (SELECT max(id) FROM notify_floor)");
        printf("%.3f %.3f\n", received, milliseconds() - start);
    }
    PQfinish(sender);
    PQfinish(listener);
    return 0;
}
