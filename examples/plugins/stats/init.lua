-- stats — keeps a running count of the messages published under demo.>
-- and answers requests on demo.stats with it as JSON.
--
--   $ rift req demo.echo hi
--   hi
--   $ rift req demo.stats ''
--   {"bytes":2,"messages":1,"since":1767225600,"subjects":{"demo.echo":1}}
--
-- The count lives in a global of the plugin's own Lua state, which
-- persists between messages (and starts again when the plugin reloads).
local counter = require("counter")

stats = stats or counter.new()

rift.subscribe("demo.>", function(msg)
  if msg.subject ~= "demo.stats" then
    stats:add(msg.subject, #msg.payload)
  end
end)

rift.subscribe("demo.stats", function(msg)
  msg:respond(rift.json.encode(stats:snapshot()))
end)

-- Once a minute, say how busy demo.> has been.
rift.every(60000, function()
  rift.log("info", "seen", stats.messages, "messages,", stats.bytes, "bytes")
end)
