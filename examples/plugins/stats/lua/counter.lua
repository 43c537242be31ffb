-- counter — a running count of messages and payload bytes, per subject
-- and in total. Loaded by stats/init.lua with require("counter"): a
-- plugin's require path is its own lua/ folder.
local counter = {}
counter.__index = counter

-- At most this many subjects are counted one by one; the rest only add to
-- the totals, so a flood of distinct subjects cannot grow the table forever.
local MAX_SUBJECTS = 1000

function counter.new()
  return setmetatable({ messages = 0, bytes = 0, subjects = {}, n = 0,
                        since = os.time() }, counter)
end

function counter:add(subject, bytes)
  self.messages = self.messages + 1
  self.bytes = self.bytes + bytes
  local s = self.subjects[subject]
  if s then
    self.subjects[subject] = s + 1
  elseif self.n < MAX_SUBJECTS then
    self.n = self.n + 1
    self.subjects[subject] = 1
  end
end

function counter:snapshot()
  return { messages = self.messages, bytes = self.bytes,
           subjects = self.subjects, since = self.since }
end

return counter
