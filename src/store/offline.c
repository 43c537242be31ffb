/*
 * offline.c — rift_store_verify and rift_store_repair (store layer): a
 * stream directory nobody has open, opened read-only or repairing (the
 * same recovery as an open, recover.c) and closed again; a repair is
 * verified afterwards. Above stream.c: it only opens and closes.
 */
#include "store/offline.h"
#include "store/stream_open.h"

#include <string.h>

int rift_store_offline(const char *path, rift_store_report *report,
                       rift_open_mode mode, const rift_vfs *vfs,
                       rift_error *err) {
    rift_store_report local;
    if (report == NULL) {
        report = &local;
    }
    memset(report, 0, sizeof(*report));
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    s.storage_path = path;
    s.max_messages = UINT64_MAX;
    s.max_bytes = UINT64_MAX;
    s.max_payload_bytes = RIFT_MAX_PAYLOAD_LIMIT;
    s.max_consumers = UINT32_MAX;
    s.vfs = vfs;
    rift_stream *st = NULL;
    int rc = rift_stream_new_mode(&st, &s, mode, report, err);
    if (rc != 0) {
        return rc;
    }
    rift_stream_del(st);
    return 0;
}

int rift_store_verify(const char *path, rift_store_report *report,
                      rift_error *err) {
    return rift_store_offline(path, report, RIFT_OPEN_VERIFY, NULL, err);
}

int rift_store_repair(const char *path, rift_store_report *report,
                      rift_error *err) {
    int rc = rift_store_offline(path, report, RIFT_OPEN_REPAIR, NULL, err);
    if (rc != 0) {
        return rc;
    }
    rift_store_report again;
    rc = rift_store_offline(path, &again, RIFT_OPEN_VERIFY, NULL, err);
    if (report != NULL) {
        report->segments = again.segments;
        report->records = again.records;
        report->first_sequence = again.first_sequence;
        report->last_sequence = again.last_sequence;
        report->next_sequence = again.next_sequence;
        report->segment_bytes = again.segment_bytes;
        report->state_events = again.state_events;
        report->consumers = again.consumers;
    }
    return rc;
}
