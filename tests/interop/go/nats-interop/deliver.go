package main

// Delivery scenarios: wildcards, queue groups, UNSUB max, echo=false,
// headers, 10,000 messages in order, the 1 MiB payload limit.

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
)

// drain receives exactly |n| messages and returns their subjects sorted.
func drain(sub *nats.Subscription, n int) ([]string, error) {
	var got []string
	for i := 0; i < n; i++ {
		m, err := next(sub)
		if err != nil {
			return got, err
		}
		got = append(got, m.Subject)
	}
	sort.Strings(got)
	return got, nil
}

func wildcards(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	want := map[string][]string{
		"ni.open.wc.*":   {"ni.open.wc.a"},
		"ni.open.wc.>":   {"ni.open.wc.a", "ni.open.wc.a.b", "ni.open.wc.b.c"},
		"ni.open.*.*.c":  {"ni.open.wc.b.c"},
		"ni.open.wc.a.b": {"ni.open.wc.a.b"},
	}
	subs := map[string]*nats.Subscription{}
	for p := range want {
		if subs[p], err = nc.SubscribeSync(p); err != nil {
			return err
		}
	}
	for _, s := range []string{"ni.open.wc.a", "ni.open.wc.a.b", "ni.open.wc.b.c", "ni.open.other"} {
		if err := nc.Publish(s, []byte(s)); err != nil {
			return err
		}
	}
	for p, w := range want {
		got, err := drain(subs[p], len(w))
		if err != nil {
			return fmt.Errorf("pattern %s: %w (got %v)", p, err, got)
		}
		if strings.Join(got, " ") != strings.Join(w, " ") {
			return fmt.Errorf("pattern %s got %v, want %v", p, got, w)
		}
		if err := none(subs[p], nc); err != nil {
			return fmt.Errorf("pattern %s: %w", p, err)
		}
	}
	return nil
}

func queueGroups(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	const n = 300
	var members []*nats.Subscription
	for i := 0; i < 3; i++ {
		s, err := nc.QueueSubscribeSync("ni.open.q", "workers")
		if err != nil {
			return err
		}
		members = append(members, s)
	}
	plain, err := nc.SubscribeSync("ni.open.q")
	if err != nil {
		return err
	}
	pub, err := e.as("alice")
	if err != nil {
		return err
	}
	defer pub.Close()
	if err := pub.FlushTimeout(wait); err != nil {
		return err
	}
	if err := nc.FlushTimeout(wait); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := pub.Publish("ni.open.q", []byte(fmt.Sprint(i))); err != nil {
			return err
		}
	}
	// Once the publisher's PING is answered the server has routed every
	// message; once the subscribers' is, every delivery is in their queues.
	if err := pub.FlushTimeout(wait); err != nil {
		return err
	}
	if err := nc.FlushTimeout(wait); err != nil {
		return err
	}
	if _, err := drain(plain, n); err != nil {
		return fmt.Errorf("plain subscriber: %w", err)
	}
	seen := map[string]bool{}
	for i, s := range members {
		cnt, _, _ := s.Pending()
		if cnt == 0 {
			return fmt.Errorf("queue member %d got nothing of %d", i, n)
		}
		for j := 0; j < cnt; j++ {
			m, err := next(s)
			if err != nil {
				return err
			}
			if seen[string(m.Data)] {
				return fmt.Errorf("message %s delivered twice in the group", m.Data)
			}
			seen[string(m.Data)] = true
		}
	}
	if len(seen) != n {
		return fmt.Errorf("the group got %d distinct messages of %d", len(seen), n)
	}
	return nil
}

func unsubMax(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("ni.open.max")
	if err != nil {
		return err
	}
	if err := sub.AutoUnsubscribe(3); err != nil {
		return err
	}
	// Another connection publishes, so the client's own count of
	// deliveries is not what enforces the limit: the server's UNSUB max is.
	other, err := nc.SubscribeSync("ni.open.max")
	if err != nil {
		return err
	}
	for i := 0; i < 10; i++ {
		if err := nc.Publish("ni.open.max", []byte{byte('0' + i)}); err != nil {
			return err
		}
	}
	if _, err := drain(other, 10); err != nil {
		return err
	}
	got, err := drain(sub, 3)
	if err != nil {
		return fmt.Errorf("%w (got %d)", err, len(got))
	}
	if sub.IsValid() {
		return errors.New("subscription still valid after its 3 messages")
	}
	return nil
}

func noEcho(e *env) error {
	quiet, err := e.as("alice", nats.NoEcho())
	if err != nil {
		return err
	}
	defer quiet.Close()
	loud, err := e.as("alice")
	if err != nil {
		return err
	}
	defer loud.Close()
	qs, err := quiet.SubscribeSync("ni.open.echo")
	if err != nil {
		return err
	}
	ls, err := loud.SubscribeSync("ni.open.echo")
	if err != nil {
		return err
	}
	if err := quiet.FlushTimeout(wait); err != nil {
		return err
	}
	if err := loud.FlushTimeout(wait); err != nil {
		return err
	}
	if err := quiet.Publish("ni.open.echo", []byte("from quiet")); err != nil {
		return err
	}
	if err := quiet.FlushTimeout(wait); err != nil {
		return err
	}
	if err := loud.Publish("ni.open.echo", []byte("from loud")); err != nil {
		return err
	}
	m, err := next(qs)
	if err != nil {
		return err
	}
	if string(m.Data) != "from loud" {
		return fmt.Errorf("echo=false connection received its own message %q", m.Data)
	}
	if err := none(qs, loud, quiet); err != nil {
		return err
	}
	// The echoing connection sees both, its own included.
	for _, want := range []string{"from quiet", "from loud"} {
		m, err := next(ls)
		if err != nil {
			return err
		}
		if string(m.Data) != want {
			return fmt.Errorf("echoing connection got %q, want %q", m.Data, want)
		}
	}
	return nil
}

func headers(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	if !nc.HeadersSupported() {
		return errors.New("server INFO does not announce headers")
	}
	sub, err := nc.SubscribeSync("ni.open.hdr")
	if err != nil {
		return err
	}
	out := nats.NewMsg("ni.open.hdr")
	out.Header.Add("X-Ni-One", "1")
	out.Header.Add("X-Ni-Two", "a")
	out.Header.Add("X-Ni-Two", "b c")
	out.Data = []byte("with headers")
	if err := nc.PublishMsg(out); err != nil {
		return err
	}
	if err := nc.Publish("ni.open.hdr", []byte("without")); err != nil {
		return err
	}
	m, err := next(sub)
	if err != nil {
		return err
	}
	if string(m.Data) != "with headers" || m.Header.Get("X-Ni-One") != "1" ||
		strings.Join(m.Header.Values("X-Ni-Two"), "|") != "a|b c" {
		return fmt.Errorf("headers lost: data %q header %v", m.Data, m.Header)
	}
	m, err = next(sub)
	if err != nil {
		return err
	}
	if string(m.Data) != "without" || len(m.Header) != 0 {
		return fmt.Errorf("plain message came back as %q with %v", m.Data, m.Header)
	}
	return nil
}

func ordered10k(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	pub, err := e.as("alice")
	if err != nil {
		return err
	}
	defer pub.Close()
	const n = 10000
	ch := make(chan *nats.Msg, n)
	sub, err := nc.ChanSubscribe("ni.open.seq", ch)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.FlushTimeout(wait); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := pub.Publish("ni.open.seq", []byte(fmt.Sprintf("%08d", i))); err != nil {
			return err
		}
	}
	if err := pub.FlushTimeout(wait); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		m, err := recvChan(ch)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if want := fmt.Sprintf("%08d", i); string(m.Data) != want {
			return fmt.Errorf("message %d is %q: out of order or lost", i, m.Data)
		}
	}
	return nil
}

func maxPayload(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	const mib = 1 << 20
	if nc.MaxPayload() != mib {
		return fmt.Errorf("INFO max_payload is %d, want %d", nc.MaxPayload(), mib)
	}
	sub, err := nc.SubscribeSync("ni.open.big")
	if err != nil {
		return err
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), mib/16)
	if err := nc.Publish("ni.open.big", big); err != nil {
		return fmt.Errorf("1 MiB publish: %w", err)
	}
	m, err := next(sub)
	if err != nil {
		return err
	}
	if !bytes.Equal(m.Data, big) {
		return fmt.Errorf("1 MiB payload came back as %d bytes, different", len(m.Data))
	}
	over := append(big, 'x')
	if err := nc.Publish("ni.open.big", over); !errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("1 MiB + 1 publish: got %v, want %v", err, nats.ErrMaxPayload)
	}
	if err := pubSubRoundTrip(nc, "ni.open.after"); err != nil {
		return fmt.Errorf("connection unusable after the refused payload: %w", err)
	}
	return none(sub, nc)
}
