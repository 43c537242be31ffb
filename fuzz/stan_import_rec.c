/*
 * stan_import_rec.c — libFuzzer target for the reader of
 * nats-streaming-server file stores (src/stan/import_rec.c and the
 * subs.dat replay of import_subs.c; fuzz layer). The first byte picks the
 * file kind, the rest is the file:
 *   0  subs.dat, replayed into the subscription table;
 *   1  a msgs.N.dat slice (untyped records, each decoded as a MsgProto);
 *   2  any typed file, each record fed to every record decoder.
 * The target aborts when an invariant breaks:
 * - the reader fails only with RIFT_ERR_STORAGE (or NOMEM) and a text
 *   naming the file and an offset;
 * - a record lies inside the input: at + 8 + len is the next offset and
 *   len is within the limit;
 * - decoded strings lie inside the record;
 * - after a replay every subscription's pending set holds exactly the
 *   count it claims, of distinct non-zero sequences, at most the limit.
 */
#include "fuzz_require.h"
#include "stan/import_internal.h"
#include "stan/proto.h"

#include <stdio.h>
#include <string.h>

#define PATH "fuzz.dat"

static void in_record(stan_imp_str s, const uint8_t *p, size_t len) {
    if (s.len) {
        REQUIRE((const uint8_t *)s.p >= p &&
                (const uint8_t *)s.p + s.len <= p + len);
    }
}

static void check_error(int rc, const rift_error *err) {
    REQUIRE(rc == RIFT_ERR_STORAGE || rc == RIFT_ERR_NOMEM ||
            rc == RIFT_ERR_LIMIT);
    if (rc == RIFT_ERR_STORAGE) {
        REQUIRE(strncmp(err->text, PATH ": offset ",
                        strlen(PATH ": offset ")) == 0);
    }
}

static void replay_subs(FILE *f) {
    stan_imp_subs t;
    rift_error err = {0};
    int rc = stan_imp_subs_read(&t, f, PATH, NULL, &err);
    if (rc != 0) {
        check_error(rc, &err);
    }
    static uint64_t buf[STAN_IMP_MAX_PENDING];
    for (size_t i = 0; i < t.n; i++) {
        REQUIRE(i == 0 || t.v[i - 1].id < t.v[i].id);
        const stan_imp_sub *s = &t.v[i];
        REQUIRE(s->pending.n <= STAN_IMP_MAX_PENDING);
        size_t n = stan_imp_sub_pending_sorted(s, buf);
        REQUIRE(n == s->pending.n);
        for (size_t k = 0; k < n; k++) {
            REQUIRE(buf[k] != 0 && (k == 0 || buf[k - 1] < buf[k]));
        }
    }
    stan_imp_subs_free(&t);
}

static void read_records(FILE *f, bool typed) {
    stan_imp_reader r;
    rift_error err = {0};
    size_t max = typed ? 0xFFFFFF : 1u << 20;
    int rc = stan_imp_reader_init(&r, f, PATH, typed, max, NULL, &err);
    while (rc == 0) {
        uint8_t type = 0xEE;
        const uint8_t *p;
        size_t len;
        uint64_t before = r.off;
        int n = stan_imp_reader_next(&r, &type, &p, &len, &err);
        if (n <= 0) {
            rc = n;
            break;
        }
        REQUIRE(r.at == before && r.off == before + 8 + len && len <= max);
        REQUIRE(typed || type == 0);
        const char *why = NULL;
        if (!typed) {
            rift_stan_msg_proto m;
            if (rift_stan_decode_msg_proto(p, len, &m, NULL) == 0) {
                in_record((stan_imp_str){m.data.p, m.data.len}, p, len);
                in_record((stan_imp_str){m.subject.p, m.subject.len}, p, len);
            }
            continue;
        }
        stan_imp_sub_state st;
        if (stan_imp_decode_sub_state(p, len, &st, &why) == 0) {
            in_record(st.client_id, p, len);
            in_record(st.q_group, p, len);
            in_record(st.durable_name, p, len);
            in_record(st.inbox, p, len);
            in_record(st.ack_inbox, p, len);
        } else {
            REQUIRE(why != NULL);
        }
        stan_imp_sub_update u;
        (void)stan_imp_decode_sub_update(p, len, &u, &why);
        stan_imp_str s;
        if (stan_imp_decode_str_field(p, len, 1, &s, &why) == 0) {
            in_record(s, p, len);
        }
    }
    if (rc != 0) {
        check_error(rc, &err);
    }
    stan_imp_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) {
        return 0;
    }
    FILE *f = fmemopen((void *)(uintptr_t)(data + 1), size - 1, "rb");
    REQUIRE(f != NULL);
    switch (data[0] % 3) {
    case 0:
        replay_subs(f);
        break;
    case 1:
        read_records(f, false);
        break;
    default:
        read_records(f, true);
        break;
    }
    fclose(f);
    return 0;
}
