-- deadletter — keeps the records consumers gave up on. riftd publishes an
-- advisory on rift.events.consumer when a record has been delivered
-- max_deliver times without an ack; this plugin stores each one in the
-- stream "deadletter" under deadletter.<stream>, so an operator can look
-- at them later:
--
--   messaging.streams = {
--     orders     = { subjects = { "orders.>" } },
--     deadletter = { subjects = { "deadletter.>" } },
--   }
--   plugins = { { name = "deadletter", path = "examples/plugins/deadletter" } }
--
--   $ rift consumer open orders billing --max-deliver 5
--   ...five deliveries of record 42 without an ack...
--   $ rift consumer open deadletter ops --start first
--   $ rift consumer fetch deadletter ops
--   #1 (delivery 1) ... deadletter.orders: {"advisory":"max_deliver",
--      "consumer":"billing","deliveries":5,"sequence":42,"stream":"orders"}
--
-- The stored payload is the advisory itself (stream, consumer, sequence,
-- deliveries): the record stays in its stream until retention removes it.
local dead = rift.stream("deadletter")

rift.subscribe("rift.events.consumer", function(msg)
  local a = rift.json.decode(msg.payload)
  if type(a) ~= "table" or a.advisory ~= "max_deliver" then
    return
  end
  local r = dead:publish("deadletter." .. a.stream, msg.payload)
  rift.log("warn", string.format("deadletter: %s/%s record %d after %d "
    .. "deliveries, stored as %d", a.stream, a.consumer, a.sequence,
    a.deliveries, r.sequence))
end)

rift.log("info", "storing max_deliver advisories in stream deadletter")
