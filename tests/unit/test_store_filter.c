/*
 * test_store_filter.c — a consumer's filter must reach the stream (tests
 * of the store layer): a filter that overlaps none of the stream's
 * subjects is refused before it takes one of the stream's consumer slots.
 */
#include "test.h"

#include "rift/stream.h"

static int open_with(rift_stream *st, const char *name, const char *filter,
                     rift_error *err) {
    rift_consumer_config cfg;
    rift_consumer_config_default(&cfg);
    cfg.filter = filter;
    cfg.filter_len = strlen(filter);
    rift_consumer *c = NULL;
    int rc = rift_stream_consumer_open(st, name, strlen(name), &cfg, &c, err);
    rift_consumer_close(c);
    return rc;
}

RIFT_TEST(filters_must_overlap_the_stream_subjects) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    const char *subjects[] = {"orders.*", "events.>"};
    s.subjects = subjects;
    s.subjects_count = 2;
    s.max_consumers = 4;
    rift_stream *st;
    rift_error err;
    CHECK_OK(rift_stream_new(&st, &s, &err));
    static const char text[] = "invalid messaging configuration: consumer "
                               "filter matches none of the stream's subjects";
    const char *refused[] = {"nomatch.>", "orders", "orders.a.b", "events",
                             "*"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        CHECK_MSG(open_with(st, "c", refused[i], &err) ==
                          RIFT_ERR_INVALID_CONFIG &&
                      strcmp(err.text, text) == 0,
                  "%s: %s", refused[i], err.text);
    }
    /* None of them took a slot: all four are still free. */
    CHECK_OK(open_with(st, "a", "orders.x", &err));
    CHECK_OK(open_with(st, "b", ">", &err));
    CHECK_OK(open_with(st, "c", "*.x.y", &err)); /* events.x.y */
    CHECK_OK(open_with(st, "d", "*.*", &err));
    rift_stream_info info;
    CHECK_OK(rift_stream_get_info(st, &info, &err));
    CHECK_EQ_INT(info.consumer_count, 4);
    rift_stream_info_free(&info);
    rift_stream_del(st);
}

RIFT_TEST(default_subjects_accept_every_filter) {
    rift_stream_settings s;
    rift_stream_settings_default(&s);
    rift_stream *st;
    rift_error err;
    CHECK_OK(rift_stream_new(&st, &s, &err));
    CHECK_OK(open_with(st, "a", "x", &err));
    CHECK_OK(open_with(st, "b", "x.*.>", &err));
    rift_stream_del(st);
}
