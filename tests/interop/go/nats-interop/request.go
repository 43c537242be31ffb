package main

// Request/reply scenarios: replies with headers, no-responders, the
// permission violations that leave the connection open, and riftd's inbox
// rule (request/reply without an `_INBOX.>` grant; nobody reads another
// identity's replies).

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// echo answers every request on |subject| with "re: " + the payload and
// the request's X-Ni header, from connection |nc|.
func echo(nc *nats.Conn, subject string) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Data = append([]byte("re: "), m.Data...)
		if v := m.Header.Get("X-Ni"); v != "" {
			r.Header.Set("X-Ni", v)
		}
		_ = m.RespondMsg(r)
	})
	if err != nil {
		return nil, err
	}
	return sub, nc.FlushTimeout(wait)
}

func requestReply(e *env) error {
	srv, err := e.as("alice")
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := echo(srv, "ni.open.svc"); err != nil {
		return err
	}
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	for i := 0; i < 20; i++ {
		m, err := nc.Request("ni.open.svc", []byte(fmt.Sprint(i)), wait)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if want := fmt.Sprintf("re: %d", i); string(m.Data) != want {
			return fmt.Errorf("reply %q, want %q", m.Data, want)
		}
	}
	q := nats.NewMsg("ni.open.svc")
	q.Header.Set("X-Ni", "carried")
	q.Data = []byte("h")
	m, err := nc.RequestMsg(q, wait)
	if err != nil {
		return fmt.Errorf("request with headers: %w", err)
	}
	if m.Header.Get("X-Ni") != "carried" || string(m.Data) != "re: h" {
		return fmt.Errorf("reply with headers: %q %v", m.Data, m.Header)
	}
	return nil
}

func noResponders(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	start := time.Now()
	_, err = nc.Request("ni.open.nobody", []byte("anyone?"), wait)
	if !errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("request without responders: got %v, want %v", err, nats.ErrNoResponders)
	}
	if time.Since(start) >= wait/2 {
		return fmt.Errorf("no-responders took %v: a timeout, not the 503 status", time.Since(start))
	}
	return nil
}

// asyncErrs collects the -ERR texts the server sent a connection.
type asyncErrs struct {
	mu   sync.Mutex
	errs []string
	ch   chan struct{}
}

func (a *asyncErrs) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	a.errs = append(a.errs, err.Error())
	a.mu.Unlock()
	select {
	case a.ch <- struct{}{}:
	default:
	}
}

// await waits until an error containing |text| arrived.
func (a *asyncErrs) await(text string) error {
	deadline := time.After(wait)
	for {
		a.mu.Lock()
		for _, e := range a.errs {
			if strings.Contains(strings.ToLower(e), strings.ToLower(text)) {
				a.mu.Unlock()
				return nil
			}
		}
		seen := append([]string(nil), a.errs...)
		a.mu.Unlock()
		select {
		case <-a.ch:
		case <-deadline:
			return fmt.Errorf("no error %q from the server (got %q)", text, seen)
		}
	}
}

func permissions(e *env) error {
	errs := &asyncErrs{ch: make(chan struct{}, 1)}
	nc, err := e.as("carol", nats.ErrorHandler(errs.handler))
	if err != nil {
		return err
	}
	defer nc.Close()
	watcher, err := e.as("alice")
	if err != nil {
		return err
	}
	defer watcher.Close()
	leak, err := watcher.SubscribeSync("ni.closed.>")
	if err != nil {
		return err
	}
	if err := watcher.FlushTimeout(wait); err != nil {
		return err
	}
	if err := nc.Publish("ni.closed.x", []byte("not allowed")); err != nil {
		return err
	}
	if err := errs.await(`Permissions Violation for Publish to "ni.closed.x"`); err != nil {
		return err
	}
	if _, err := nc.SubscribeSync("ni.closed.y"); err != nil {
		return err
	}
	if err := errs.await(`Permissions Violation for Subscription to "ni.closed.y"`); err != nil {
		return err
	}
	if !nc.IsConnected() {
		return fmt.Errorf("connection closed after a permission violation: %v", nc.LastError())
	}
	if err := pubSubRoundTrip(nc, "ni.open.perm"); err != nil {
		return fmt.Errorf("connection unusable after the violations: %w", err)
	}
	return none(leak, nc, watcher)
}

// inboxNoGrant: carol has no `_INBOX.>` grant on riftd, yet her requests
// get their replies (her connection claims its inbox prefix).
func inboxNoGrant(e *env) error {
	srv, err := e.as("alice")
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := echo(srv, "ni.open.svc"); err != nil {
		return err
	}
	nc, err := e.as("carol")
	if err != nil {
		return err
	}
	defer nc.Close()
	m, err := nc.Request("ni.open.svc", []byte("carol"), wait)
	if err != nil {
		return fmt.Errorf("request without an _INBOX grant: %w", err)
	}
	if string(m.Data) != "re: carol" {
		return fmt.Errorf("reply %q", m.Data)
	}
	return nil
}

// inboxIsolation is the attack: bob (who may subscribe to everything,
// `_INBOX.>` included) watches the request subject, learns carol's reply
// subject, and tries to read her replies by a broad and by an exact
// subscription. Neither may get a reply; carol still gets hers.
func inboxIsolation(e *env) error {
	srv, err := e.as("alice")
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := echo(srv, "ni.open.svc"); err != nil {
		return err
	}
	errs := &asyncErrs{ch: make(chan struct{}, 1)}
	bob, err := e.as("bob", nats.ErrorHandler(errs.handler))
	if err != nil {
		return err
	}
	defer bob.Close()
	spy, err := bob.SubscribeSync("ni.open.svc")
	if err != nil {
		return err
	}
	broad, err := bob.SubscribeSync("_INBOX.>")
	if err != nil {
		return err
	}
	if err := bob.FlushTimeout(wait); err != nil {
		return err
	}
	carol, err := e.as("carol")
	if err != nil {
		return err
	}
	defer carol.Close()
	if _, err := carol.Request("ni.open.svc", []byte("first"), wait); err != nil {
		return fmt.Errorf("carol's first request: %w", err)
	}
	seen, err := next(spy)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(seen.Reply, "_INBOX.") {
		return fmt.Errorf("request's reply subject %q is not an inbox", seen.Reply)
	}
	prefix := seen.Reply[:strings.LastIndexByte(seen.Reply, '.')]
	exact, _ := bob.SubscribeSync(prefix + ".>")
	_ = bob.FlushTimeout(wait)
	m, err := carol.Request("ni.open.svc", []byte("second"), wait)
	if err != nil {
		return fmt.Errorf("carol's second request: %w", err)
	}
	if string(m.Data) != "re: second" {
		return fmt.Errorf("carol's reply %q", m.Data)
	}
	if _, err := next(spy); err != nil {
		return err
	}
	if err := none(broad, srv, carol, bob); err != nil {
		return fmt.Errorf("bob read carol's reply through _INBOX.>: %w", err)
	}
	if exact != nil && exact.IsValid() {
		if err := none(exact, srv, carol, bob); err != nil {
			return fmt.Errorf("bob read carol's reply through %s.>: %w", prefix, err)
		}
	}
	return nil
}
