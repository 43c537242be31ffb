// stan-interop.js — node-nats-streaming 0.3.2 (the NATS Streaming client
// for Node.js, on nats@1.4.12; tests/interop/js/package.json) driven by
// tests/integration/test_stan_js.c against riftd's STAN service (tests
// layer). Same contract as nats-interop.mjs: `node stan-interop.js
// SCENARIO`, the NATS URL in NI_URL and the cluster in NI_STAN_CLUSTER,
// exit status 0 when the scenario held, 1 when it failed (reason on
// stderr). CommonJS: the package predates ES modules.
'use strict'

const stan = require('node-nats-streaming')
// The protocol messages the client ships (for a hand-made PubMsg).
const proto = require('node-nats-streaming/lib/pb')

const WAIT = 10000
const CLUSTER = process.env.NI_STAN_CLUSTER || 'test-cluster'
const URL = process.env.NI_URL

function check (cond, text) {
  if (!cond) throw new Error(text)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// once resolves with the first |ok| event of |emitter|, rejects on its
// 'error' event or after WAIT.
function once (emitter, ok, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(reject, new Error(`timed out: ${what}`)), WAIT)
    const onOk = (v) => done(resolve, v)
    const onErr = (err) => done(reject, new Error(`${what}: ${err && err.message ? err.message : err}`))
    function done (f, v) {
      clearTimeout(timer)
      emitter.removeListener(ok, onOk)
      emitter.removeListener('error', onErr)
      f(v)
    }
    emitter.on(ok, onOk)
    emitter.on('error', onErr)
  })
}

async function connect (id, opts = {}) {
  const sc = stan.connect(CLUSTER, id, Object.assign({ url: URL, maxReconnectAttempts: 0 }, opts))
  await once(sc, 'connect', `connect ${id}`)
  return sc
}

async function close (sc) {
  const closed = once(sc, 'close', 'close')
  sc.close()
  const err = await closed
  check(!err, `close answered ${err && err.message}`)
}

// publish resolves with the guid once the PubAck for it arrived, checking
// it is the guid publish() returned.
function publish (sc, channel, data) {
  return new Promise((resolve, reject) => {
    let guid = null
    let acked = null
    const t = setTimeout(() => reject(new Error(`no PubAck on ${channel}`)), WAIT)
    guid = sc.publish(channel, data, (err, g) => {
      clearTimeout(t)
      if (err) {
        reject(new Error(`PubAck error: ${err.message || err}`))
        return
      }
      acked = g
      // The handler may run before publish() returned (never with a real
      // server, but do not depend on it).
      setImmediate(() => {
        if (guid !== acked) reject(new Error(`PubAck guid ${acked}, published ${guid}`))
        else resolve(guid)
      })
    })
  })
}

async function publishN (sc, channel, from, to) {
  for (let i = from; i <= to; i++) await publish(sc, channel, `m${i}`)
}

// subscribe resolves with a ready subscription whose deliveries are
// recorded in sub.got (messages, in arrival order); sub.waitFor(n) waits
// until at least n arrived.
async function subscribe (sc, channel, opts, qGroup) {
  const sub = qGroup ? sc.subscribe(channel, qGroup, opts) : sc.subscribe(channel, opts)
  sub.got = []
  let waiter = null
  sub.on('message', (m) => {
    sub.got.push(m)
    if (waiter && sub.got.length >= waiter.n) {
      const w = waiter
      waiter = null
      clearTimeout(w.t)
      w.resolve()
    }
  })
  sub.waitFor = (n) => new Promise((resolve, reject) => {
    if (sub.got.length >= n) {
      resolve()
      return
    }
    waiter = {
      n,
      resolve,
      t: setTimeout(() => reject(new Error(`${channel}: ${sub.got.length} of ${n} messages`)), WAIT)
    }
  })
  await once(sub, 'ready', `subscribe ${channel}`)
  return sub
}

const seqs = (sub) => sub.got.map((m) => Number(m.getSequence()))

function checkSeqs (sub, want, what) {
  const got = seqs(sub)
  check(JSON.stringify(got) === JSON.stringify(want),
    `${what}: sequences ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
}

const range = (a, b) => Array.from({ length: b - a + 1 }, (_, i) => a + i)

async function unsubscribe (sub) {
  const done = once(sub, 'unsubscribed', 'unsubscribe')
  sub.unsubscribe()
  await done
}

async function closeSub (sub) {
  const done = once(sub, 'closed', 'subscription close')
  sub.close()
  await done
}

// quiet checks that |sub| receives nothing more for |ms|.
async function quiet (sub, ms, what) {
  const n = sub.got.length
  await sleep(ms)
  check(sub.got.length === n, `${what}: ${sub.got.length - n} unexpected deliveries`)
}

const scenarios = {
  // Publish with ack: every PubAck names the guid publish() returned; the
  // data and sequences come back in order.
  async publish_ack (sc) {
    const guids = new Set()
    for (let i = 1; i <= 5; i++) guids.add(await publish(sc, 'js.pub', `m${i}`))
    check(guids.size === 5, `guids not unique: ${[...guids]}`)
    const sub = await subscribe(sc, 'js.pub', sc.subscriptionOptions().setDeliverAllAvailable())
    await sub.waitFor(5)
    checkSeqs(sub, range(1, 5), 'deliver all')
    check(sub.got.map((m) => m.getData()).join() === 'm1,m2,m3,m4,m5',
      `data ${sub.got.map((m) => m.getData())}`)
    const ts = sub.got[0].getTimestamp().getTime()
    check(Math.abs(Date.now() - ts) < 60000, `timestamp ${sub.got[0].getTimestamp()} is not now`)
    await unsubscribe(sub)
  },

  // All available, from a sequence, last received and new only.
  async start_positions (sc) {
    await publishN(sc, 'js.start', 1, 10)
    const o = () => sc.subscriptionOptions()
    const all = await subscribe(sc, 'js.start', o().setDeliverAllAvailable())
    const from7 = await subscribe(sc, 'js.start', o().setStartAtSequence(7))
    const last = await subscribe(sc, 'js.start', o().setStartWithLastReceived())
    const fresh = await subscribe(sc, 'js.start', o())
    await all.waitFor(10)
    await from7.waitFor(4)
    await last.waitFor(1)
    await quiet(fresh, 300, 'new only before publishing')
    await publish(sc, 'js.start', 'm11')
    await all.waitFor(11)
    await from7.waitFor(5)
    await last.waitFor(2)
    await fresh.waitFor(1)
    checkSeqs(all, range(1, 11), 'deliverAllAvailable')
    checkSeqs(from7, range(7, 11), 'startAtSequence(7)')
    checkSeqs(last, [10, 11], 'startWithLastReceived')
    checkSeqs(fresh, [11], 'new only')
    for (const s of [all, from7, last, fresh]) await unsubscribe(s)
  },

  // startAtTimeDelta: messages older than the delta are skipped. The
  // delta points into the middle of a 3 s gap, computed just before the
  // subscribe, so a stall of up to 1.5 s anywhere cannot move it across a
  // message.
  async start_time_delta (sc) {
    await publishN(sc, 'js.delta', 1, 3)
    const before = Date.now()
    await sleep(3000)
    const after = Date.now()
    await publishN(sc, 'js.delta', 4, 5)
    const delta = Math.round(Date.now() - (before + after) / 2)
    const sub = await subscribe(sc, 'js.delta', sc.subscriptionOptions().setStartAtTimeDelta(delta))
    await sub.waitFor(2)
    await quiet(sub, 300, 'time delta')
    checkSeqs(sub, [4, 5], `startAtTimeDelta(${delta} ms)`)
    await unsubscribe(sub)
  },

  // Close keeps a durable: it resumes after the last acknowledged message
  // and its start position is ignored.
  async durable_resume (sc) {
    const o = () => sc.subscriptionOptions().setDurableName('audit').setDeliverAllAvailable()
    await publishN(sc, 'js.durable', 1, 3)
    let sub = await subscribe(sc, 'js.durable', o())
    await sub.waitFor(3)
    await quiet(sub, 200, 'before close')
    await closeSub(sub)
    await publishN(sc, 'js.durable', 4, 5)
    sub = await subscribe(sc, 'js.durable', o().setStartAtSequence(1))
    await sub.waitFor(2)
    await quiet(sub, 300, 'resumed durable')
    checkSeqs(sub, [4, 5], 'resumed durable')
    await closeSub(sub)
    // A new connection of the same client resumes it too.
    await close(sc)
    const sc2 = await connect('js-durable')
    sub = await subscribe(sc2, 'js.durable', sc2.subscriptionOptions().setDurableName('audit'))
    await publish(sc2, 'js.durable', 'm6')
    await sub.waitFor(1)
    checkSeqs(sub, [6], 'durable after reconnect')
    await unsubscribe(sub)
    return sc2
  },

  // Unsubscribe deletes the durable: subscribing again starts afresh.
  async unsubscribe_deletes_durable (sc) {
    const o = () => sc.subscriptionOptions().setDurableName('gone').setDeliverAllAvailable()
    await publishN(sc, 'js.unsub', 1, 3)
    let sub = await subscribe(sc, 'js.unsub', o())
    await sub.waitFor(3)
    await unsubscribe(sub)
    sub = await subscribe(sc, 'js.unsub', o())
    await sub.waitFor(3)
    checkSeqs(sub, [1, 2, 3], 'durable after unsubscribe')
    await unsubscribe(sub)
  },

  // A queue group splits a channel: with nothing acknowledged the member
  // with fewest pending gets each message, so two members get 10 each, and
  // every message reaches exactly one of them.
  async queue_group (sc) {
    const sc2 = await connect('js-queue-b')
    const o = (c) => c.subscriptionOptions().setManualAckMode(true).setAckWait(30000)
    const a = await subscribe(sc, 'js.queue', o(sc), 'workers')
    const b = await subscribe(sc2, 'js.queue', o(sc2), 'workers')
    await publishN(sc, 'js.queue', 1, 20)
    await new Promise((resolve, reject) => {
      const t0 = Date.now()
      const poll = () => {
        if (a.got.length + b.got.length >= 20) resolve()
        else if (Date.now() - t0 > WAIT) reject(new Error(`queue: ${a.got.length} + ${b.got.length} of 20`))
        else setTimeout(poll, 20)
      }
      poll()
    })
    await sleep(200)
    const all = seqs(a).concat(seqs(b)).sort((x, y) => x - y)
    check(JSON.stringify(all) === JSON.stringify(range(1, 20)),
      `queue members got ${JSON.stringify(seqs(a))} and ${JSON.stringify(seqs(b))}`)
    check(a.got.length === 10 && b.got.length === 10,
      `queue split ${a.got.length}/${b.got.length}, want 10/10`)
    for (const m of a.got.concat(b.got)) m.ack()
    await unsubscribe(a)
    await unsubscribe(b)
    await close(sc2)
  },

  // Manual acks and ack wait: an unacknowledged message comes again after
  // the ack wait, flagged redelivered, and stops once acknowledged.
  async ack_wait_redelivery (sc) {
    const sub = await subscribe(sc, 'js.redeliver',
      sc.subscriptionOptions().setManualAckMode(true).setAckWait(1000).setDeliverAllAvailable())
    await publish(sc, 'js.redeliver', 'once')
    await sub.waitFor(1)
    const first = sub.got[0]
    check(!first.isRedelivered(), 'first delivery flagged redelivered')
    await sub.waitFor(2)
    const again = sub.got[1]
    check(Number(again.getSequence()) === 1, `redelivered sequence ${again.getSequence()}`)
    check(again.isRedelivered(), 'second delivery not flagged redelivered')
    check(again.getRedeliveryCount() >= 1, `redelivery count ${again.getRedeliveryCount()}`)
    again.ack()
    await quiet(sub, 2500, 'after the ack')
    await unsubscribe(sub)
  },

  // maxInFlight: no more than N unacknowledged messages are out; each ack
  // lets one more through.
  async max_in_flight (sc) {
    await publishN(sc, 'js.inflight', 1, 10)
    const sub = await subscribe(sc, 'js.inflight', sc.subscriptionOptions()
      .setManualAckMode(true).setAckWait(30000).setMaxInFlight(3).setDeliverAllAvailable())
    await sub.waitFor(3)
    await quiet(sub, 500, 'maxInFlight 3')
    checkSeqs(sub, [1, 2, 3], 'first window')
    sub.got[0].ack()
    await sub.waitFor(4)
    await quiet(sub, 300, 'after one ack')
    check(Number(sub.got[3].getSequence()) === 4, `after one ack got ${sub.got[3].getSequence()}`)
    for (let i = 1; i < 10; i++) {
      await sub.waitFor(i + 1)
      sub.got[i].ack()
    }
    await sub.waitFor(10)
    checkSeqs(sub, range(1, 10), 'all through a window of 3')
    await unsubscribe(sub)
  },

  // A second connection with a live client's ID is refused (the first
  // answers the server's heartbeat probe).
  async duplicate_client_id (sc) {
    const dup = stan.connect(CLUSTER, 'js-duplicate_client_id', { url: URL, maxReconnectAttempts: 0 })
    let err = null
    try {
      await once(dup, 'connect', 'second connect')
    } catch (e) {
      err = e
    }
    check(err !== null, 'second client with the same ID connected')
    check(/stan: clientID already registered/.test(err.message), `refused with "${err.message}"`)
    // The first one still works.
    await publish(sc, 'js.dup', 'still here')
  },

  // Close: the server answers the CloseRequest and forgets the client — a
  // PubMsg still naming it (sent raw from another connection) is refused
  // — publishing afterwards fails in the client, and the ID can connect
  // again.
  async close (sc) {
    await publish(sc, 'js.close', 'before')
    const old = { id: sc.clientID, connId: sc.connId, pub: sc.pubPrefix }
    await close(sc)
    let err = null
    sc.publish('js.close', 'after', (e) => { err = e })
    check(err && /Connection closed/.test(err.message), `publish after close: ${err}`)
    const probe = await connect('js-close-probe')
    const answer = await rawPublish(probe, old, 'js.close', 'stale')
    check(/stan: invalid publish request/.test(answer),
      `PubMsg of the closed client answered "${answer}"`)
    await close(probe)
    const again = await connect('js-close')
    await publish(again, 'js.close', 'after')
    return again
  }
}

// rawPublish sends a PubMsg for client |who| ({id, connId, pub}) over
// |sc|'s NATS connection and resolves with the PubAck's error text.
function rawPublish (sc, who, channel, data) {
  const pm = new proto.pb.PubMsg()
  pm.setClientId(who.id)
  pm.setConnId(who.connId)
  pm.setGuid(`raw-${Date.now()}`)
  pm.setSubject(channel)
  pm.setData(new Uint8Array(Buffer.from(data)))
  return new Promise((resolve, reject) => {
    sc.nc.requestOne(`${who.pub}.${channel}`, Buffer.from(pm.serializeBinary()), {}, WAIT, (msg) => {
      if (msg instanceof Error) {
        reject(new Error(`raw PubMsg: ${msg.message}`))
        return
      }
      resolve(proto.pb.PubAck.deserializeBinary(Buffer.from(msg, 'binary')).getError())
    })
  })
}

async function main () {
  const name = process.argv[2]
  const run = scenarios[name]
  if (!run) {
    console.error(`stan-interop: unknown scenario ${name}; known: ${Object.keys(scenarios).join(' ')}`)
    process.exit(2)
  }
  check(URL, 'NI_URL is not set')
  const id = `js-${name === 'durable_resume' ? 'durable' : name === 'close' ? 'close' : name}`
  const sc = await connect(id)
  const last = (await run(sc)) || sc
  await close(last)
  console.log(`stan-interop: ${name} ok`)
}

main().then(() => process.exit(0), (err) => {
  console.error(`stan-interop: ${process.argv[2]}: ${err.stack || err}`)
  process.exit(1)
})
