//! rift-quinn-peer: an independent Rift messaging protocol v1 peer on
//! Quinn 0.9 + rustls 0.20 (Debian 12's crates), written from the protocol
//! reference, for rift's interop tests.
//!
//!   rift-quinn-peer client --addr IP:PORT --server-name NAME --ca CA.pem
//!                          --token TOKEN [--scenario all|auth|badauth]
//!       Runs a scenario against a Rift server (riftd) and prints one line
//!       per check; the last line is "ALL OK" when every check passed.
//!   rift-quinn-peer stub --listen IP:PORT --cert CERT.pem --key KEY.pem
//!                        --token TOKEN
//!       A small Rift server (auth, publish, subscribe, request, stream
//!       publish/consumer) that rift's C client is tested against. Prints
//!       "listening on IP:PORT" once bound.
//!
//! The "all" scenario needs an identity allowed to publish `interop.>`,
//! `nobody.>` and `_INBOX.>` and to subscribe `interop.>` and `_INBOX.>`,
//! without control.
//!
//! RIFT_ALPN overrides the ALPN offered or accepted (negative tests).
use anyhow::{anyhow, bail, Context, Result};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

const ALPN: &[u8] = b"rift-messaging/1";
const MAX_FRAME: u32 = 1_114_112;
const MAX_AUTH_FRAME: u32 = 4_099;

const OP_AUTH: u8 = 1;
const OP_OK: u8 = 2;
const OP_ERROR: u8 = 3;
const OP_PUBLISH: u8 = 4;
const OP_PUBLISH_ACK: u8 = 5;
const OP_SUBSCRIBE: u8 = 6;
const OP_MESSAGE: u8 = 7;
const OP_PING: u8 = 8;
const OP_REQUEST: u8 = 9;
const OP_STREAM_PUBLISH: u8 = 10;
const OP_STORED: u8 = 11;
const OP_CONSUMER_OPEN: u8 = 12;
const OP_CONSUMER_FETCH: u8 = 13;
const OP_DELIVERY: u8 = 14;
const OP_ACK: u8 = 15;

// ---- Framing ----

fn put_str(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u16).to_be_bytes());
    b.extend_from_slice(s);
}

/// A whole frame: u32 BE body length, opcode, then |fields|.
fn frame(op: u8, fields: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + fields.len());
    out.extend_from_slice(&((fields.len() + 1) as u32).to_be_bytes());
    out.push(op);
    out.extend_from_slice(fields);
    out
}

fn msg_fields(subject: &[u8], reply: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    put_str(&mut b, subject);
    put_str(&mut b, reply);
    b.extend_from_slice(payload);
    b
}

fn error_frame(code: u16, text: &str) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    put_str(&mut b, text.as_bytes());
    frame(OP_ERROR, &b)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b, pos: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() - self.pos < n {
            bail!("truncated frame");
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into()?))
    }
    fn str(&mut self) -> Result<String> {
        let n = self.u16()? as usize;
        if n > 4096 || self.b.len() - self.pos < n {
            bail!("invalid string length");
        }
        let s = self.take(n)?;
        Ok(std::str::from_utf8(s)
            .map_err(|_| anyhow!("string must be UTF-8"))?
            .to_owned())
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.b[self.pos..];
        self.pos = self.b.len();
        s
    }
    fn end(&self) -> Result<()> {
        if self.pos != self.b.len() {
            bail!("unexpected trailing frame bytes");
        }
        Ok(())
    }
}

/// Reads one frame body; None on a clean end of stream before a header.
async fn read_frame(recv: &mut quinn::RecvStream, limit: u32) -> Result<Option<Vec<u8>>> {
    let mut hdr = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match recv.read(&mut hdr[got..]).await.context("reading frame header")? {
            Some(n) => got += n,
            None if got == 0 => return Ok(None),
            None => bail!("stream ended inside a frame header"),
        }
    }
    let n = u32::from_be_bytes(hdr);
    if n == 0 || n > limit {
        bail!("frame length exceeds limit or is zero");
    }
    let mut body = vec![0u8; n as usize];
    recv.read_exact(&mut body).await.context("reading frame body")?;
    Ok(Some(body))
}

/// A frame that must arrive; ERROR frames become errors "ERROR(code): text".
async fn expect_frame(recv: &mut quinn::RecvStream) -> Result<Vec<u8>> {
    let body = read_frame(recv, MAX_FRAME)
        .await?
        .ok_or_else(|| anyhow!("stream ended"))?;
    if body[0] == OP_ERROR {
        let mut r = Reader::new(&body[1..]);
        let code = r.u16()?;
        let text = r.str()?;
        bail!("ERROR({}): {}", code, text);
    }
    Ok(body)
}

async fn expect_ok(recv: &mut quinn::RecvStream) -> Result<()> {
    let body = expect_frame(recv).await?;
    if body != [OP_OK] {
        bail!("expected OK, got opcode {}", body[0]);
    }
    Ok(())
}

/// Reads an ERROR frame and returns (code, text).
async fn expect_error(recv: &mut quinn::RecvStream) -> Result<(u16, String)> {
    let body = read_frame(recv, MAX_FRAME)
        .await?
        .ok_or_else(|| anyhow!("stream ended before ERROR"))?;
    if body[0] != OP_ERROR {
        bail!("expected ERROR, got opcode {}", body[0]);
    }
    let mut r = Reader::new(&body[1..]);
    let code = r.u16()?;
    let text = r.str()?;
    r.end()?;
    Ok((code, text))
}

struct Message {
    subject: String,
    reply: String,
    payload: Vec<u8>,
}

fn parse_message(body: &[u8]) -> Result<Message> {
    if body[0] != OP_MESSAGE {
        bail!("expected MESSAGE, got opcode {}", body[0]);
    }
    let mut r = Reader::new(&body[1..]);
    let subject = r.str()?;
    let reply = r.str()?;
    let payload = r.rest().to_vec();
    Ok(Message { subject, reply, payload })
}

// ---- TLS ----

fn alpn() -> Vec<u8> {
    std::env::var("RIFT_ALPN")
        .map(|s| s.into_bytes())
        .unwrap_or_else(|_| ALPN.to_vec())
}

fn load_certs(path: &str) -> Result<Vec<rustls::Certificate>> {
    let pem = std::fs::read(path).with_context(|| format!("reading {}", path))?;
    let certs = rustls_pemfile::certs(&mut &*pem).context("parsing PEM certificates")?;
    if certs.is_empty() {
        bail!("no certificates in {}", path);
    }
    Ok(certs.into_iter().map(rustls::Certificate).collect())
}

fn load_key(path: &str) -> Result<rustls::PrivateKey> {
    let pem = std::fs::read(path).with_context(|| format!("reading {}", path))?;
    for item in rustls_pemfile::read_all(&mut &*pem).context("parsing PEM key")? {
        match item {
            rustls_pemfile::Item::PKCS8Key(k)
            | rustls_pemfile::Item::RSAKey(k)
            | rustls_pemfile::Item::ECKey(k) => return Ok(rustls::PrivateKey(k)),
            _ => {}
        }
    }
    Err(anyhow!("no private key in {}", path))
}

/// TLS 1.3 session tickets the server sent (rustls stores each under a key
/// starting with "session"); a Rift server sends none (§9: no 0-RTT).
static TICKETS: AtomicUsize = AtomicUsize::new(0);

struct TicketLog;

impl rustls::client::StoresClientSessions for TicketLog {
    fn put(&self, key: Vec<u8>, _value: Vec<u8>) -> bool {
        if key.starts_with(b"session") {
            TICKETS.fetch_add(1, Ordering::SeqCst);
        }
        true
    }
    fn get(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

fn client_config(ca: &str) -> Result<quinn::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in load_certs(ca)? {
        roots.add(&c).context("adding CA certificate")?;
    }
    let mut crypto = rustls::ClientConfig::builder()
        .with_safe_default_cipher_suites()
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    crypto.alpn_protocols = vec![alpn()];
    // Ask for tickets and 0-RTT the way a resuming client would.
    crypto.session_storage = Arc::new(TicketLog);
    crypto.enable_tickets = true;
    crypto.enable_early_data = true;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

fn server_config(cert: &str, key: &str) -> Result<quinn::ServerConfig> {
    let mut crypto = rustls::ServerConfig::builder()
        .with_safe_default_cipher_suites()
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(load_certs(cert)?, load_key(key)?)?;
    crypto.alpn_protocols = vec![alpn()];
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_uni_streams(0u32.into());
    transport.max_concurrent_bidi_streams(128u32.into());
    cfg.transport = Arc::new(transport);
    Ok(cfg)
}

// ---- Arguments ----

struct Args(HashMap<String, String>);

impl Args {
    fn parse(list: &[String]) -> Result<Args> {
        let mut m = HashMap::new();
        let mut it = list.iter();
        while let Some(k) = it.next() {
            let key = k
                .strip_prefix("--")
                .ok_or_else(|| anyhow!("unexpected argument {}", k))?;
            let v = it.next().ok_or_else(|| anyhow!("--{} needs a value", key))?;
            m.insert(key.to_owned(), v.clone());
        }
        Ok(Args(m))
    }
    fn get(&self, k: &str) -> Result<&str> {
        self.0
            .get(k)
            .map(String::as_str)
            .ok_or_else(|| anyhow!("missing --{}", k))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let result = match argv.get(1).map(String::as_str) {
        Some("client") => client_main(&argv[2..]).await,
        Some("stub") => stub_main(&argv[2..]).await,
        _ => Err(anyhow!("usage: rift-quinn-peer client|stub --help")),
    };
    if let Err(e) = result {
        println!("FAILED: {:#}", e);
        std::process::exit(1);
    }
}

// ---- Client scenarios against a Rift server ----

async fn connect(a: &Args) -> Result<(quinn::Endpoint, quinn::Connection)> {
    let addr: SocketAddr = a.get("addr")?.parse().context("--addr")?;
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut endpoint = quinn::Endpoint::client(bind)?;
    endpoint.set_default_client_config(client_config(a.get("ca")?)?);
    let conn = endpoint
        .connect(addr, a.get("server-name")?)?
        .await
        .context("QUIC/TLS handshake")?;
    Ok((endpoint, conn))
}

async fn authenticate(conn: &quinn::Connection, token: &str) -> Result<()> {
    let (mut send, mut recv) = conn.open_bi().await.context("opening auth stream")?;
    let mut f = Vec::new();
    put_str(&mut f, token.as_bytes());
    send.write_all(&frame(OP_AUTH, &f)).await?;
    send.finish().await.context("finishing auth stream")?;
    expect_ok(&mut recv).await.context("auth reply")?;
    if read_frame(&mut recv, MAX_FRAME).await?.is_some() {
        bail!("auth stream carried more than OK");
    }
    Ok(())
}

async fn client_main(argv: &[String]) -> Result<()> {
    let a = Args::parse(argv)?;
    let scenario = a.0.get("scenario").map(String::as_str).unwrap_or("all");
    let (endpoint, conn) = connect(&a).await?;
    let token = a.get("token")?;
    match scenario {
        "auth" => {
            authenticate(&conn, token).await?;
            println!("auth ok");
            no_tickets()?;
        }
        "badauth" => {
            let r = authenticate(&conn, token).await;
            let reason = conn.closed().await;
            match reason {
                quinn::ConnectionError::ApplicationClosed(c) => {
                    println!(
                        "closed code={} reason={}",
                        u64::from(c.error_code),
                        String::from_utf8_lossy(&c.reason)
                    );
                }
                other => bail!("unexpected close {:?} (auth result {:?})", other, r.err()),
            }
            endpoint.wait_idle().await;
            println!("ALL OK");
            return Ok(());
        }
        "all" => {
            authenticate(&conn, token).await?;
            println!("auth ok");
            run_all(&conn).await?;
            no_tickets()?;
        }
        other => bail!("unknown scenario {}", other),
    }
    conn.close(0u32.into(), b"client closed");
    endpoint.wait_idle().await;
    println!("ALL OK");
    Ok(())
}

/// No session tickets, hence no resumption and no 0-RTT (§2.1). A server
/// sends tickets with or right after the end of its handshake, so they are
/// in by the time the AUTH round trip is over.
fn no_tickets() -> Result<()> {
    let tickets = TICKETS.load(Ordering::SeqCst);
    if tickets != 0 {
        bail!("the server sent {} TLS session ticket(s)", tickets);
    }
    println!("no session tickets ok");
    Ok(())
}

async fn run_all(conn: &quinn::Connection) -> Result<()> {
    // PING barrier on a publisher stream.
    let (mut ps, mut pr) = conn.open_bi().await?;
    ps.write_all(&frame(OP_PING, &[])).await?;
    expect_ok(&mut pr).await.context("PING")?;
    println!("ping ok");

    // Subscribe, then PUBLISH_ACK a binary payload and receive it.
    let (mut ss, mut sr) = conn.open_bi().await?;
    let mut f = Vec::new();
    put_str(&mut f, b"interop.>");
    put_str(&mut f, b"");
    ss.write_all(&frame(OP_SUBSCRIBE, &f)).await?;
    expect_ok(&mut sr).await.context("SUBSCRIBE")?;
    let payload: Vec<u8> = (0..=255u8).collect();
    ps.write_all(&frame(OP_PUBLISH_ACK, &msg_fields(b"interop.a", b"", &payload)))
        .await?;
    expect_ok(&mut pr).await.context("PUBLISH_ACK")?;
    let m = parse_message(&expect_frame(&mut sr).await?)?;
    if m.subject != "interop.a" || !m.reply.is_empty() || m.payload != payload {
        bail!("MESSAGE mismatch: subject {} reply {}", m.subject, m.reply);
    }
    println!("publish_ack + message ok");

    // 1,000 unconfirmed PUBLISH frames, PING barrier, in-order delivery.
    let mut batch = Vec::new();
    for i in 0..1000u32 {
        batch.extend_from_slice(&frame(
            OP_PUBLISH,
            &msg_fields(b"interop.seq", b"", &i.to_be_bytes()),
        ));
    }
    ps.write_all(&batch).await?;
    ps.write_all(&frame(OP_PING, &[])).await?;
    expect_ok(&mut pr).await.context("PING after batch")?;
    for i in 0..1000u32 {
        let m = parse_message(&expect_frame(&mut sr).await?)?;
        if m.payload != i.to_be_bytes() {
            bail!("message {} out of order", i);
        }
    }
    println!("ordered batch ok");

    // Request/reply with a responder on a queue subscription.
    let (mut rs, mut rr) = conn.open_bi().await?;
    let mut f = Vec::new();
    put_str(&mut f, b"interop.echo");
    put_str(&mut f, b"responders");
    rs.write_all(&frame(OP_SUBSCRIBE, &f)).await?;
    expect_ok(&mut rr).await.context("responder SUBSCRIBE")?;
    let (mut rps, mut rpr) = conn.open_bi().await?;
    let responder = tokio::spawn(async move {
        let m = parse_message(&expect_frame(&mut rr).await?)?;
        rps.write_all(&frame(
            OP_PUBLISH_ACK,
            &msg_fields(m.reply.as_bytes(), b"", &m.payload),
        ))
        .await?;
        expect_ok(&mut rpr).await.context("responder PUBLISH_ACK")?;
        Ok::<String, anyhow::Error>(m.reply)
    });
    let (mut qs, mut qr) = conn.open_bi().await?;
    let mut f = 5000u32.to_be_bytes().to_vec();
    put_str(&mut f, b"interop.echo");
    f.extend_from_slice(b"\x00\x01binary\xff");
    qs.write_all(&frame(OP_REQUEST, &f)).await?;
    qs.finish().await?;
    let reply = parse_message(&expect_frame(&mut qr).await?)?;
    let inbox = responder.await??;
    if reply.payload != b"\x00\x01binary\xff" || reply.subject != inbox {
        bail!("request reply mismatch (subject {})", reply.subject);
    }
    if inbox.len() != 39
        || !inbox.starts_with("_INBOX.")
        || !inbox[7..].bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        bail!("inbox {} is not _INBOX. + 32 lowercase hex digits", inbox);
    }
    if read_frame(&mut qr, MAX_FRAME).await?.is_some() {
        bail!("request stream carried more than one MESSAGE");
    }
    println!("request ok ({})", inbox);

    // No responders.
    let (mut qs, mut qr) = conn.open_bi().await?;
    let mut f = 1000u32.to_be_bytes().to_vec();
    put_str(&mut f, b"nobody.home");
    qs.write_all(&frame(OP_REQUEST, &f)).await?;
    qs.finish().await?;
    let (code, text) = expect_error(&mut qr).await?;
    if code != 2 || text != "no responders available" {
        bail!("no-responders: got ERROR({}, {})", code, text);
    }
    println!("no responders ok");

    // Permission: rift.events is never publishable remotely.
    let (mut es, mut er) = conn.open_bi().await?;
    es.write_all(&frame(OP_PUBLISH_ACK, &msg_fields(b"rift.events.x", b"", b"{}")))
        .await?;
    let (code, text) = expect_error(&mut er).await?;
    if code != 1 || text != "publication not permitted" {
        bail!("permission: got ERROR({}, {})", code, text);
    }
    if read_frame(&mut er, MAX_FRAME).await?.is_some() {
        bail!("stream not finished after ERROR");
    }
    println!("permission denied ok");

    // A malformed frame on its own stream, and the connection still works.
    let (mut ms, mut mr) = conn.open_bi().await?;
    ms.write_all(&[0, 0, 0, 0]).await?;
    let (code, text) = expect_error(&mut mr).await?;
    if code != 2 || text != "frame length exceeds limit or is zero" {
        bail!("malformed: got ERROR({}, {})", code, text);
    }
    if read_frame(&mut mr, MAX_FRAME).await?.is_some() {
        bail!("malformed: stream not finished after ERROR");
    }
    // §2.7 / §9: after ERROR and FIN the server stops our sending half
    // with code 0.
    match tokio::time::timeout(Duration::from_secs(5), ms.stopped()).await {
        Ok(Ok(code)) if u64::from(code) == 0 => {}
        other => bail!("malformed: expected STOP_SENDING(0), got {:?}", other),
    }
    ps.write_all(&frame(OP_PING, &[])).await?;
    expect_ok(&mut pr).await.context("PING after malformed frame")?;
    println!("malformed frame ok (ERROR, FIN, STOP_SENDING(0))");

    // A clean FIN on a publisher stream draws ERROR(2, "QUIC stream closed").
    ps.finish().await?;
    let (code, text) = expect_error(&mut pr).await?;
    if code != 2 || text != "QUIC stream closed" {
        bail!("publisher FIN: got ERROR({}, {})", code, text);
    }
    println!("publisher fin ok");
    Ok(())
}

// ---- Stub server for rift's C client ----

#[derive(Clone)]
struct Delivery {
    subject: String,
    reply: String,
    payload: Vec<u8>,
}

struct Record {
    seq: u64,
    ts: u64,
    subject: String,
    reply: String,
    payload: Vec<u8>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    subs: Vec<(u64, String, String, mpsc::UnboundedSender<Delivery>)>,
    queue_turn: HashMap<String, u64>,
    streams: HashMap<String, Vec<Record>>,
    cursors: HashMap<(String, String), (String, u64)>,
}

type Shared = Arc<Mutex<State>>;

fn matches(pattern: &str, subject: &str) -> bool {
    let p: Vec<&str> = pattern.split('.').collect();
    let s: Vec<&str> = subject.split('.').collect();
    for (i, t) in p.iter().enumerate() {
        if *t == ">" {
            return s.len() > i;
        }
        if i >= s.len() || (*t != "*" && *t != s[i]) {
            return false;
        }
    }
    p.len() == s.len()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Routes to plain subscribers and one member per queue group.
fn route(state: &Shared, d: Delivery) -> usize {
    let mut st = state.lock().unwrap();
    let mut delivered = 0;
    let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, (_, pat, queue, tx)) in st.subs.iter().enumerate() {
        if !matches(pat, &d.subject) {
            continue;
        }
        if queue.is_empty() {
            if tx.send(d.clone()).is_ok() {
                delivered += 1;
            }
        } else {
            groups.entry(queue.clone()).or_default().push(i);
        }
    }
    for (q, members) in groups {
        let turn = st.queue_turn.entry(q).or_insert(0);
        let pick = members[(*turn as usize) % members.len()];
        *turn += 1;
        if st.subs[pick].3.send(d.clone()).is_ok() {
            delivered += 1;
        }
    }
    delivered
}

fn new_inbox() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h1 = RandomState::new().build_hasher();
    h1.write_u64(now_ms());
    let mut h2 = RandomState::new().build_hasher();
    h2.write_u64(h1.finish());
    format!("_INBOX.{:016x}{:016x}", h1.finish(), h2.finish())
}

async fn stub_main(argv: &[String]) -> Result<()> {
    let a = Args::parse(argv)?;
    let addr: SocketAddr = a.get("listen")?.parse().context("--listen")?;
    let endpoint = quinn::Endpoint::server(server_config(a.get("cert")?, a.get("key")?)?, addr)?;
    println!("listening on {}", endpoint.local_addr()?);
    let token = a.get("token")?.to_owned();
    let state: Shared = Arc::new(Mutex::new(State::default()));
    while let Some(connecting) = endpoint.accept().await {
        let token = token.clone();
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(e) = stub_connection(connecting, token, state).await {
                eprintln!("stub: connection: {:#}", e);
            }
        });
    }
    Ok(())
}

async fn stub_connection(connecting: quinn::Connecting, token: String, state: Shared) -> Result<()> {
    let conn = connecting.await?;
    let auth = tokio::time::timeout(Duration::from_secs(5), async {
        let (mut send, mut recv) = conn.accept_bi().await?;
        let body = read_frame(&mut recv, MAX_AUTH_FRAME)
            .await?
            .ok_or_else(|| anyhow!("no AUTH"))?;
        let mut r = Reader::new(&body);
        if r.take(1)? != [OP_AUTH] {
            bail!("first frame is not AUTH");
        }
        let presented = r.str()?;
        r.end()?;
        if presented != token {
            send.write_all(&error_frame(1, "authentication failed")).await.ok();
            bail!("unknown token");
        }
        send.write_all(&frame(OP_OK, &[])).await?;
        send.finish().await?;
        Ok(())
    })
    .await;
    if !matches!(auth, Ok(Ok(()))) {
        conn.close(1u32.into(), b"authentication failed");
        return Ok(());
    }
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(_) => return Ok(()),
        };
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(e) = stub_stream(send, recv, state).await {
                eprintln!("stub: stream: {:#}", e);
            }
        });
    }
}

async fn stub_stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, state: Shared) -> Result<()> {
    loop {
        let body = match read_frame(&mut recv, MAX_FRAME).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                send.write_all(&error_frame(2, "QUIC stream closed")).await?;
                send.finish().await.ok();
                return Ok(());
            }
            Err(e) => {
                send.write_all(&error_frame(2, &e.to_string())).await?;
                send.finish().await.ok();
                return Ok(());
            }
        };
        let mut r = Reader::new(&body[1..]);
        match body[0] {
            OP_PUBLISH | OP_PUBLISH_ACK => {
                let subject = r.str()?;
                let reply = r.str()?;
                let payload = r.rest().to_vec();
                route(&state, Delivery { subject, reply, payload });
                if body[0] == OP_PUBLISH_ACK {
                    send.write_all(&frame(OP_OK, &[])).await?;
                }
            }
            OP_PING => {
                r.end()?;
                send.write_all(&frame(OP_OK, &[])).await?;
            }
            OP_SUBSCRIBE => {
                let pattern = r.str()?;
                let queue = r.str()?;
                r.end()?;
                let (tx, mut rx) = mpsc::unbounded_channel();
                let id = {
                    let mut st = state.lock().unwrap();
                    st.next_id += 1;
                    let id = st.next_id;
                    st.subs.push((id, pattern, queue, tx));
                    id
                };
                send.write_all(&frame(OP_OK, &[])).await?;
                while let Some(d) = rx.recv().await {
                    let f = frame(OP_MESSAGE, &msg_fields(d.subject.as_bytes(), d.reply.as_bytes(), &d.payload));
                    if send.write_all(&f).await.is_err() {
                        break;
                    }
                }
                state.lock().unwrap().subs.retain(|s| s.0 != id);
                return Ok(());
            }
            OP_REQUEST => {
                let timeout = r.u32()?;
                let subject = r.str()?;
                let payload = r.rest().to_vec();
                let inbox = new_inbox();
                let (tx, mut rx) = mpsc::unbounded_channel();
                let id = {
                    let mut st = state.lock().unwrap();
                    st.next_id += 1;
                    let id = st.next_id;
                    st.subs.push((id, inbox.clone(), String::new(), tx));
                    id
                };
                let n = route(&state, Delivery { subject, reply: inbox.clone(), payload });
                let out = if n == 0 {
                    error_frame(2, "no responders available")
                } else {
                    match tokio::time::timeout(Duration::from_millis(timeout as u64), rx.recv()).await {
                        Ok(Some(d)) => frame(OP_MESSAGE, &msg_fields(inbox.as_bytes(), d.reply.as_bytes(), &d.payload)),
                        _ => error_frame(2, "request timed out"),
                    }
                };
                state.lock().unwrap().subs.retain(|s| s.0 != id);
                send.write_all(&out).await?;
                send.finish().await.ok();
                return Ok(());
            }
            OP_STREAM_PUBLISH => {
                let stream = r.str()?;
                let subject = r.str()?;
                let reply = r.str()?;
                let payload = r.rest().to_vec();
                let (seq, ts) = {
                    let mut st = state.lock().unwrap();
                    let recs = st.streams.entry(stream).or_default();
                    let seq = recs.len() as u64 + 1;
                    let ts = now_ms();
                    recs.push(Record { seq, ts, subject, reply, payload });
                    (seq, ts)
                };
                let mut f = seq.to_be_bytes().to_vec();
                f.extend_from_slice(&ts.to_be_bytes());
                send.write_all(&frame(OP_STORED, &f)).await?;
                send.finish().await.ok();
                return Ok(());
            }
            OP_CONSUMER_OPEN => {
                let stream = r.str()?;
                let name = r.str()?;
                let filter = r.str()?;
                let start = r.u64()?;
                let _ack_wait = r.u32()?;
                let _max_pending = r.u32()?;
                r.end()?;
                state
                    .lock()
                    .unwrap()
                    .cursors
                    .entry((stream, name))
                    .or_insert((filter, start));
                send.write_all(&frame(OP_OK, &[])).await?;
                send.finish().await.ok();
                return Ok(());
            }
            OP_CONSUMER_FETCH => {
                let stream = r.str()?;
                let name = r.str()?;
                let limit = r.u32()?;
                r.end()?;
                let fetched = stub_fetch(&state, &stream, name, limit);
                let Some(out) = fetched else {
                    send.write_all(&error_frame(2, "consumer does not exist")).await?;
                    send.finish().await.ok();
                    return Ok(());
                };
                for f in out {
                    send.write_all(&f).await?;
                }
                send.write_all(&frame(OP_OK, &[])).await?;
                send.finish().await.ok();
                return Ok(());
            }
            OP_ACK => {
                let _stream = r.str()?;
                let _name = r.str()?;
                let _seq = r.u64()?;
                r.end()?;
                send.write_all(&frame(OP_OK, &[])).await?;
                send.finish().await.ok();
                return Ok(());
            }
            _ => {
                send.write_all(&error_frame(2, "unknown opcode")).await?;
                send.finish().await.ok();
                return Ok(());
            }
        }
    }
}

/// Collects up to |limit| DELIVERY frames for a stub consumer; None when the
/// consumer was never opened.
fn stub_fetch(state: &Shared, stream: &str, name: String, limit: u32) -> Option<Vec<Vec<u8>>> {
    let mut guard = state.lock().unwrap();
    let st = &mut *guard;
    let (filter, cursor) = st.cursors.get_mut(&(stream.to_owned(), name))?;
    let mut out = Vec::new();
    if let Some(recs) = st.streams.get(stream) {
        let start = *cursor;
        for rec in recs.iter().filter(|r| r.seq >= start) {
            if out.len() as u32 >= limit {
                break;
            }
            *cursor = rec.seq + 1;
            if !matches(filter, &rec.subject) {
                continue;
            }
            let mut f = rec.seq.to_be_bytes().to_vec();
            f.extend_from_slice(&rec.ts.to_be_bytes());
            f.extend_from_slice(&1u32.to_be_bytes());
            f.extend_from_slice(&msg_fields(rec.subject.as_bytes(), rec.reply.as_bytes(), &rec.payload));
            out.push(frame(OP_DELIVERY, &f));
        }
    }
    Some(out)
}
