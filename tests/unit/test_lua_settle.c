/*
 * test_lua_settle.c — settling deliveries from Lua (tests layer):
 * consumer:nak, :term and :in_progress, max_deliver in rift.consumer's
 * config and the counters of consumer:info, with their errors.
 */
// labels: threads
#include "lua_stream_fixture.h"

#include "rift/broker.h"
#include "rift/stream.h"

typedef lua_stream_fx fixture;

static const char plugin_src[] =
    "local function err(f, ...) local ok, e = pcall(f, ...) "
    "return ok and 'ok' or (e:gsub('^.-:%d+: ', '')) end\n"
    "local cfg = {filter = 'events.>', start = 'first', ack_wait_ms = 60000,\n"
    "             max_deliver = 2}\n"
    "rift.subscribe('go', function(m)\n"
    "  local c = rift.consumer('events', 'w', cfg)\n"
    "  rift.publish('out.r', #c:fetch(10) .. '')\n"
    "  assert(c:nak(1) == true)\n"
    "  assert(c:term(2) == true)\n"
    "  assert(c:in_progress(3) == true)\n"
    "  local again = c:fetch(10)\n"
    "  rift.publish('out.r', #again .. ':' .. again[1].sequence .. ':' ..\n"
    "               again[1].delivery_count)\n"
    "  c:nak(1, 0)\n"
    "  rift.publish('out.r', #c:fetch(10) .. '')\n"
    "  local i = c:info()\n"
    "  rift.publish('out.r', i.pending .. ',' .. i.terminated .. ',' ..\n"
    "               i.max_delivered)\n"
    "  rift.publish('out.r', err(c.term, c, 2))\n"
    "  rift.publish('out.r', err(c.in_progress, c, 1))\n"
    "  rift.publish('out.r', err(c.nak, c, 3, 3600001))\n"
    "  rift.publish('out.r', err(c.nak, c, 3, 3600000))\n"
    "  cfg.max_deliver = 3\n"
    "  rift.publish('out.r', err(rift.consumer, 'events', 'w', cfg))\n"
    "end)\n";

RIFT_TEST(nak_term_in_progress_and_max_deliver) {
    fixture fx;
    CHECK(lsf_open(&fx, NULL));
    for (int i = 0; i < 3; i++) {
        CHECK_OK(rift_stream_publish(fx.events, "events.a", 8, NULL, 0,
                                     (const uint8_t *)"x", 1, NULL, NULL));
    }
    lt_plugin(fx.root, "p", plugin_src);
    rift_plugin_spec spec = lt_spec(fx.root, "p");
    spec.deadline_ms = 5000;
    rift_error err;
    CHECK_MSG(rift_plugin_host_apply(fx.h, &spec, 1, NULL, &err) == 0, "%s",
              err.text);
    CHECK_OK(rift_broker_publish(fx.b, "go", 2, NULL, 0, NULL, 0, NULL, NULL));
    CHECK_EQ_STR(lsf_next_out(&fx), "3");
    CHECK_EQ_STR(lsf_next_out(&fx), "1:1:2");
    CHECK_EQ_STR(lsf_next_out(&fx), "0");
    CHECK_EQ_STR(lsf_next_out(&fx), "1,1,1");
    CHECK_EQ_STR(lsf_next_out(&fx), "sequence is not pending acknowledgement");
    CHECK_EQ_STR(lsf_next_out(&fx), "sequence is not pending acknowledgement");
    CHECK_EQ_STR(lsf_next_out(&fx), "nak delay must be 0..3600000 ms");
    CHECK_EQ_STR(lsf_next_out(&fx), "ok");
    CHECK_EQ_STR(lsf_next_out(&fx),
                 "invalid messaging configuration: consumer "
                 "already exists with different max_deliver");
    lsf_close(&fx);
}
