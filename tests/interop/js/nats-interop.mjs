// nats-interop.mjs — the official NATS JavaScript client (nats.js v2 from
// npm, tests/interop/js/package.json) driven by rift's integration tests
// (tests layer). Same contract as the Go client
// (tests/interop/go/nats-interop/main.go): `node nats-interop.mjs
// SCENARIO`, the server and credentials in NI_* variables, exit status 0
// when the scenario held, 1 when it failed (reason on stderr), and the
// line "await-restart" when the harness should restart the server.
import { connect, headers as newHeaders, StringCodec, ErrorCode } from "nats";

const WAIT = 10000;
const sc = StringCodec();
const env = process.env;

// opts builds connection options for "alice" (NI_AUTH's way), "bob" or
// "carol": the CA, bounded timeouts, no reconnect.
function opts(who, extra = {}) {
  const o = {
    servers: env.NI_URL, timeout: WAIT, reconnect: false, name: `ni-js-${who}`,
    tls: env.NI_CA ? { caFile: env.NI_CA } : undefined,
  };
  if (who === "alice" && env.NI_AUTH === "token") o.token = env.NI_ALICE_TOKEN;
  else if (who === "alice") Object.assign(o, { user: "alice", pass: env.NI_ALICE_TOKEN });
  else if (who === "bob") Object.assign(o, { user: "bob", pass: env.NI_BOB_TOKEN });
  else if (who === "carol") Object.assign(o, { user: "carol", pass: env.NI_CAROL_TOKEN });
  return Object.assign(o, extra);
}

const as = (who, extra) => connect(opts(who, extra));

function within(ms, what, promise) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

// next receives one message from an async-iterable subscription (whose
// iterator may be taken once: it is kept).
const iterators = new WeakMap();
async function next(sub) {
  if (!iterators.has(sub)) iterators.set(sub, sub[Symbol.asyncIterator]());
  const it = iterators.get(sub);
  const r = await within(WAIT, `message on ${sub.getSubject()}`, it.next());
  if (r.done) throw new Error(`subscription ${sub.getSubject()} ended`);
  return r.value;
}

function check(cond, text) {
  if (!cond) throw new Error(text);
}

async function roundTrip(nc, subject) {
  const sub = nc.subscribe(subject);
  nc.publish(subject, sc.encode("round trip"));
  const m = await next(sub);
  check(sc.decode(m.data) === "round trip", `got ${sc.decode(m.data)}`);
  sub.unsubscribe();
}

async function refused(o, pattern, what) {
  let nc;
  try {
    nc = await connect(o);
  } catch (err) {
    check(pattern.test(`${err.code} ${err.message}`),
      `refused ${what}, but with ${err.code} ${err.message}`);
    return;
  }
  await nc.close();
  throw new Error(`connected ${what}`);
}

const scenarios = {
  async tls_ca() {
    const nc = await as("alice");
    check(nc.info && nc.info.tls_required, "INFO does not say tls_required");
    await roundTrip(nc, "ni.open.tls");
    await nc.close();
  },
  async missing_ca() {
    const o = opts("alice");
    o.tls = {};
    await refused(o, /certificate|self.signed|UNABLE|verify/i, "without the CA");
  },
  async auth_token() {
    const nc = await connect(opts("", { token: env.NI_ALICE_TOKEN }));
    await roundTrip(nc, "ni.open.token");
    await nc.close();
  },
  async auth_userpass() {
    const nc = await as("bob");
    await roundTrip(nc, "ni.open.userpass");
    await nc.close();
  },
  async bad_token() {
    await refused(opts("", { token: "x-not-a-token-0123456789abcdef0123456789" }),
      /AUTHORIZATION_VIOLATION|Authorization Violation/i, "with a bad token");
  },
  async wildcards() {
    const nc = await as("alice");
    const star = nc.subscribe("ni.open.wc.*");
    const tail = nc.subscribe("ni.open.wc.>");
    nc.publish("ni.open.wc.a.b", sc.encode("deep"));
    nc.publish("ni.open.wc.a", sc.encode("one"));
    check(sc.decode((await next(star)).data) === "one", "* matched too much");
    check(sc.decode((await next(tail)).data) === "deep", "> missed a.b");
    check(sc.decode((await next(tail)).data) === "one", "> missed a");
    // A marker published last: the next message * gets must be it.
    nc.publish("ni.open.wc.end", sc.encode("end"));
    check(sc.decode((await next(star)).data) === "end", "* got a deeper subject");
    await nc.close();
  },
  async queue() {
    const nc = await as("alice");
    const n = 200;
    const counts = [0, 0];
    const members = [0, 1].map((i) => nc.subscribe("ni.open.q", {
      queue: "workers", callback: () => { counts[i]++; },
    }));
    const pub = await as("alice");
    await nc.flush();
    for (let i = 0; i < n; i++) pub.publish("ni.open.q", sc.encode(`${i}`));
    await pub.flush();
    await nc.flush();
    check(counts[0] + counts[1] === n, `the group got ${counts} of ${n}`);
    check(counts[0] > 0 && counts[1] > 0, `one member got nothing: ${counts}`);
    members.forEach((s) => s.unsubscribe());
    await pub.close();
    await nc.close();
  },
  async headers() {
    const nc = await as("alice");
    const sub = nc.subscribe("ni.open.hdr");
    const h = newHeaders();
    h.append("X-Ni", "from js");
    h.append("X-Ni-Two", "a");
    h.append("X-Ni-Two", "b");
    nc.publish("ni.open.hdr", sc.encode("body"), { headers: h });
    const m = await next(sub);
    check(m.headers && m.headers.get("X-Ni") === "from js", "header lost");
    check(m.headers.values("X-Ni-Two").join("|") === "a|b", "multi-value header lost");
    check(sc.decode(m.data) === "body", "payload changed");
    await nc.close();
  },
  async request_reply() {
    const srv = await as("alice");
    srv.subscribe("ni.open.svc", {
      callback: (_, m) => m.respond(sc.encode(`re: ${sc.decode(m.data)}`)),
    });
    await srv.flush();
    const nc = await as("alice");
    for (let i = 0; i < 10; i++) {
      const r = await nc.request("ni.open.svc", sc.encode(`${i}`), { timeout: WAIT });
      check(sc.decode(r.data) === `re: ${i}`, `reply ${sc.decode(r.data)}`);
    }
    await nc.close();
    await srv.close();
  },
  async no_responders() {
    const nc = await as("alice");
    try {
      await nc.request("ni.open.nobody", sc.encode("anyone?"), { timeout: WAIT });
      throw new Error("a reply without responders");
    } catch (err) {
      check(err.code === ErrorCode.NoResponders, `got ${err.code} ${err.message}`);
    }
    await nc.close();
  },
  async permissions() {
    const nc = await as("carol");
    const errors = [];
    (async () => {
      for await (const s of nc.status()) {
        // The -ERR text, as nats.js parsed it ("Permissions Violation for
        // Publish to \"x\"" becomes operation "publish", subject "x").
        if (s.type === "error" && s.permissionContext) {
          errors.push(`${s.permissionContext.operation} ${s.permissionContext.subject}`);
        }
      }
    })();
    nc.publish("ni.closed.x", sc.encode("no"));
    await nc.flush();
    await within(WAIT, "the permissions violation", (async () => {
      while (!errors.includes("publish ni.closed.x")) {
        await nc.flush();
      }
    })());
    check(!nc.isClosed(), "connection closed after a permission violation");
    await roundTrip(nc, "ni.open.perm");
    await nc.close();
  },
  async reconnect() {
    const nc = await as("alice", {
      reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100,
      reconnectJitter: 0, reconnectJitterTLS: 0,
    });
    const sub = nc.subscribe("ni.open.rc");
    await nc.flush();
    const back = (async () => {
      for await (const s of nc.status()) if (s.type === "reconnect") return;
    })();
    console.log("await-restart");
    await within(3 * WAIT, "reconnect after the restart", back);
    nc.publish("ni.open.rc", sc.encode("after"));
    const m = await next(sub);
    check(sc.decode(m.data) === "after", `got ${sc.decode(m.data)}`);
    await nc.close();
  },
};

const name = process.argv[2];
if (!scenarios[name]) {
  console.error(`usage: node nats-interop.mjs SCENARIO\nscenarios: ${Object.keys(scenarios)}`);
  process.exit(2);
}
try {
  await within(6 * WAIT, name, scenarios[name]());
  console.log(`ok ${name} against ${env.NI_TARGET}`);
  process.exit(0);
} catch (err) {
  console.error(`FAIL ${name} against ${env.NI_TARGET}: ${err.stack || err}`);
  process.exit(1);
}
