/*
 * consumer_settle.h — the extension's settling of one delivery (store
 * layer, consumer_settle.c): NAK, TERM, in progress, and the advisories
 * of records dropped after max_deliver, which consumer.c's fetch hands
 * here to report once the stream lock is released.
 */
#ifndef RIFT_STORE_CONSUMER_SETTLE_H
#define RIFT_STORE_CONSUMER_SETTLE_H

#include "store/stream_types.h"

/* What a fetch copied under the lock to report its drops unlocked. */
typedef struct rift_advisory_note {
    rift_stream_advisory_fn fn;
    void *arg;
    const char *name; /* the consumer's: lives while the handle does */
    size_t name_len;
    char label[RIFT_ADVISORY_LABEL_MAX];
    size_t label_len;
    bool has_label;
} rift_advisory_note;

/* Under lock: copies the watch and the consumer's label into |note| when
 * |ndead| records were dropped. */
void rift_advisory_take(rift_consumer *c, rift_consumer_advisory *dead,
                        size_t ndead, rift_advisory_note *note);
/* Unlocked: reports every dropped record of |dead| (filled with the
 * names of |note|). */
void rift_advisory_fire(const rift_advisory_note *note,
                        rift_consumer_advisory *dead, size_t ndead);

#endif /* RIFT_STORE_CONSUMER_SETTLE_H */
