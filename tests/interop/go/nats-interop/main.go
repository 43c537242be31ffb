// nats-interop — the official NATS Go client (nats.go, as Debian ships it)
// driven by rift's integration tests (tests layer). Each run is one
// scenario against one server, riftd's NATS listener or nats-server; the
// test harness (tests/integration/test_nats_interop_go.c) starts the
// server, then this program, and reads its exit status: 0 = the scenario
// held, 1 = it failed (the reason on stderr), 2 = bad usage.
//
// The server and the principals come from the environment (the harness
// sets them; docs/nats.md has the rules being tested):
//
//	NI_URL       tls://127.0.0.1:PORT (or nats:// for plaintext)
//	NI_CA        the CA certificate file that signed the server's
//	NI_AUTH      "token" or "user": how the full-access principal alice
//	             authenticates (nats-server cannot mix the two in one config)
//	NI_ALICE_TOKEN, NI_BOB_TOKEN, NI_CAROL_TOKEN
//	             alice and bob may use everything; carol may publish and
//	             subscribe under ni.open.> only
//	NI_TARGET    "riftd" or "nats-server"
//
// Built offline in GOPATH mode against Debian's sources (CMake target
// nats_interop_go, the same recipe as bench/nats-load).
package main

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
)

// wait bounds every wait for an event; a scenario never blocks longer.
const wait = 10 * time.Second

type env struct {
	url, ca, auth, target string
	alice, bob, carol     string
}

type scenario func(e *env) error

var scenarios = map[string]scenario{
	"tls_ca":             tlsWithCA,
	"plaintext":          plaintext,
	"missing_ca":         missingCA,
	"auth_token":         authToken,
	"auth_userpass":      authUserPass,
	"bad_token":          badToken,
	"bad_password":       badPassword,
	"wildcards":          wildcards,
	"queue":              queueGroups,
	"unsub_max":          unsubMax,
	"no_echo":            noEcho,
	"headers":            headers,
	"request_reply":      requestReply,
	"no_responders":      noResponders,
	"ordered_10k":        ordered10k,
	"max_payload":        maxPayload,
	"max_payload_server": maxPayloadServer,
	"permissions":        permissions,
	"slow_consumer":      slowConsumer,
	"reconnect":          reconnect,
	"inbox_no_grant":     inboxNoGrant,
	"inbox_isolation":    inboxIsolation,
	"recv":               recvForHarness,
	"request":            requestForHarness,
	"serve":              serveForHarness,
}

func main() {
	if len(os.Args) < 2 || scenarios[os.Args[1]] == nil {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: nats-interop SCENARIO [ARGS]\nscenarios: %v\n", names)
		os.Exit(2)
	}
	e := &env{
		url: os.Getenv("NI_URL"), ca: os.Getenv("NI_CA"),
		auth: os.Getenv("NI_AUTH"), target: os.Getenv("NI_TARGET"),
		alice: os.Getenv("NI_ALICE_TOKEN"), bob: os.Getenv("NI_BOB_TOKEN"),
		carol: os.Getenv("NI_CAROL_TOKEN"),
	}
	if e.url == "" {
		fmt.Fprintln(os.Stderr, "nats-interop: NI_URL is not set")
		os.Exit(2)
	}
	if err := scenarios[os.Args[1]](e); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL %s against %s: %v\n", os.Args[1], e.target, err)
		os.Exit(1)
	}
	fmt.Printf("ok %s against %s\n", os.Args[1], e.target)
}

// base are the options every connection gets: the CA, bounded timeouts,
// no reconnect unless a scenario asks for it, asynchronous errors kept.
func (e *env) base(name string) []nats.Option {
	o := []nats.Option{nats.Name(name), nats.Timeout(wait), nats.NoReconnect()}
	if e.ca != "" {
		o = append(o, nats.RootCAs(e.ca))
	}
	return o
}

// as connects as one principal ("alice", "bob", "carol"), alice as NI_AUTH
// says and the others with user/password.
func (e *env) as(who string, extra ...nats.Option) (*nats.Conn, error) {
	o := e.base("ni-" + who)
	switch who {
	case "alice":
		if e.auth == "token" {
			o = append(o, nats.Token(e.alice))
		} else {
			o = append(o, nats.UserInfo("alice", e.alice))
		}
	case "bob":
		o = append(o, nats.UserInfo("bob", e.bob))
	case "carol":
		o = append(o, nats.UserInfo("carol", e.carol))
	}
	nc, err := nats.Connect(e.url, append(o, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", who, err)
	}
	return nc, nil
}

// next receives one message within the wait bound.
func next(sub *nats.Subscription) (*nats.Msg, error) {
	m, err := sub.NextMsg(wait)
	if err != nil {
		return nil, fmt.Errorf("receive on %q: %w", sub.Subject, err)
	}
	return m, nil
}

// none checks that nothing more arrives on |sub| once the server has
// answered a PING on every connection given (so anything in flight landed).
func none(sub *nats.Subscription, conns ...*nats.Conn) error {
	for _, nc := range conns {
		if err := nc.FlushTimeout(wait); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	if n, _, _ := sub.Pending(); n != 0 {
		m, _ := sub.NextMsg(0)
		return fmt.Errorf("unexpected message on %q: %q (%d pending)", sub.Subject, m.Data, n)
	}
	return nil
}
