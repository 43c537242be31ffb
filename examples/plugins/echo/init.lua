-- echo — answers every request on demo.echo with its own payload.
--
--   $ rift req demo.echo hi
--   hi
--
-- A plain publication to demo.echo (no reply subject) is ignored:
-- msg:respond returns nil when there is nobody to answer.
rift.subscribe("demo.echo", function(msg)
  msg:respond(msg.payload)
end)

rift.log("info", "answering requests on demo.echo")
