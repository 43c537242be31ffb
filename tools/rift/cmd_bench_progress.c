/*
 * cmd_bench_progress.c — the progress bar of `rift bench` (tools layer):
 * a thread redraws one line on stderr five times a second from counters
 * the hot loops bump in steps of BENCH_PROGRESS_STEP, so the bar costs
 * them one relaxed atomic add per step. Drawn only when stderr is a
 * terminal (or --progress on), never into a pipe or a file.
 */
#include "cmd_bench.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_uint_fast64_t done_count;
static atomic_uint_fast64_t total_count;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool running;
    bool stop;
    const char *name;
} bar = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

void bench_progress_add(uint64_t n) {
    atomic_fetch_add_explicit(&done_count, n, memory_order_relaxed);
}

void bench_progress_reset(uint64_t total) {
    atomic_store_explicit(&done_count, 0, memory_order_relaxed);
    atomic_store_explicit(&total_count, total, memory_order_relaxed);
}

static void draw(void) {
    uint64_t n = atomic_load_explicit(&done_count, memory_order_relaxed);
    uint64_t total = atomic_load_explicit(&total_count, memory_order_relaxed);
    if (total == 0) {
        return;
    }
    double frac = (double)n / (double)total;
    frac = frac > 1 ? 1 : frac;
    char hashes[31];
    int k = (int)(frac * 30);
    memset(hashes, '#', (size_t)k);
    memset(hashes + k, '.', (size_t)(30 - k));
    hashes[30] = '\0';
    fprintf(stderr, "\r%-8s [%s] %3.0f%% %llu/%llu", bar.name, hashes,
            frac * 100, (unsigned long long)n, (unsigned long long)total);
    fflush(stderr);
}

static void *bar_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&bar.mu);
    while (!bar.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&bar.cv, &bar.mu, &ts);
        if (!bar.stop) {
            draw();
        }
    }
    pthread_mutex_unlock(&bar.mu);
    /* Erase the line so the report starts clean. */
    fprintf(stderr, "\r%70s\r", "");
    fflush(stderr);
    return NULL;
}

void bench_progress_start(const bench_cfg *cfg) {
    bool on = cfg->progress == BENCH_PROGRESS_ON ||
              (cfg->progress == BENCH_PROGRESS_AUTO && isatty(STDERR_FILENO));
    if (!on) {
        return;
    }
    bar.name = cfg->scenario_name;
    bar.stop = false;
    if (pthread_create(&bar.thread, NULL, bar_main, NULL) == 0) {
        bar.running = true;
    }
}

void bench_progress_stop(void) {
    if (!bar.running) {
        return;
    }
    pthread_mutex_lock(&bar.mu);
    bar.stop = true;
    pthread_cond_signal(&bar.cv);
    pthread_mutex_unlock(&bar.mu);
    pthread_join(bar.thread, NULL);
    bar.running = false;
}
