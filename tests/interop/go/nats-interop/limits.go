package main

// Scenarios about the connection's life: a slow consumer is cut off while
// the publisher carries on, and a client reconnects after the server
// restarts (the harness restarts it when told "await-restart").

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// stallDialer hands nats.go TCP connections whose reads can be stopped:
// the client stays a real nats.go connection, but its socket is not read,
// as a consumer that cannot keep up.
type stallDialer struct {
	mu      sync.Mutex
	stalled bool
	resume  chan struct{}
}

type stallConn struct {
	net.Conn
	d *stallDialer
}

func (d *stallDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, wait)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, d: d}, nil
}

func (d *stallDialer) stall(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if on && !d.stalled {
		d.resume = make(chan struct{})
	} else if !on && d.stalled {
		close(d.resume)
	}
	d.stalled = on
}

func (c *stallConn) Read(b []byte) (int, error) {
	c.d.mu.Lock()
	stalled, resume := c.d.stalled, c.d.resume
	c.d.mu.Unlock()
	if stalled {
		<-resume
	}
	return c.Conn.Read(b)
}

// slowConsumer: the server's max_pending is 32 MiB (the harness's
// config). A subscriber stops reading; the publisher sends 64 MiB; the
// server must cut the subscriber off, never stall the publisher, and a
// healthy subscriber must get every message.
func slowConsumer(e *env) error {
	d := &stallDialer{}
	closed := make(chan struct{})
	slow, err := e.as("alice", nats.SetCustomDialer(d),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return err
	}
	defer slow.Close()
	if _, err := slow.Subscribe("ni.open.flood", func(*nats.Msg) {}); err != nil {
		return err
	}
	if err := slow.FlushTimeout(wait); err != nil {
		return err
	}
	healthy, err := e.as("alice")
	if err != nil {
		return err
	}
	defer healthy.Close()
	const n, size = 1024, 64 << 10
	ch := make(chan *nats.Msg, n)
	if _, err := healthy.ChanSubscribe("ni.open.flood", ch); err != nil {
		return err
	}
	if err := healthy.FlushTimeout(wait); err != nil {
		return err
	}
	pub, err := e.as("alice")
	if err != nil {
		return err
	}
	defer pub.Close()
	d.stall(true)
	payload := bytes.Repeat([]byte{'s'}, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := pub.Publish("ni.open.flood", payload); err != nil {
			return fmt.Errorf("publish %d: %w", i, err)
		}
		if i%64 == 63 {
			if err := pub.FlushTimeout(wait); err != nil {
				return fmt.Errorf("publisher stalled by the slow consumer: %w", err)
			}
		}
	}
	if err := pub.FlushTimeout(wait); err != nil {
		return fmt.Errorf("publisher stalled by the slow consumer: %w", err)
	}
	published := time.Since(start)
	for i := 0; i < n; i++ {
		if _, err := recvChan(ch); err != nil {
			return fmt.Errorf("healthy subscriber, message %d: %w", i, err)
		}
	}
	d.stall(false)
	select {
	case <-closed:
	case <-time.After(wait):
		return errors.New("the slow consumer was not disconnected by the server")
	}
	fmt.Printf("published %d x %d B in %v while a consumer stalled\n", n, size, published)
	return nil
}

// allowReconnect undoes base's NoReconnect.
func allowReconnect(o *nats.Options) error {
	o.AllowReconnect = true
	return nil
}

func recvChan(ch chan *nats.Msg) (*nats.Msg, error) {
	select {
	case m := <-ch:
		return m, nil
	case <-time.After(wait):
		return nil, errors.New("timed out")
	}
}

// reconnect: subscribe, tell the harness to restart the server, and check
// that the client reconnected by itself, resubscribed, and delivers again.
func reconnect(e *env) error {
	down := make(chan struct{}, 1)
	up := make(chan struct{}, 1)
	nc, err := e.as("alice", allowReconnect, nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case down <- struct{}{}:
			default:
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case up <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("ni.open.rc")
	if err != nil {
		return err
	}
	if err := pubSubRoundTrip(nc, "ni.open.rc.before"); err != nil {
		return err
	}
	fmt.Println("await-restart")
	_ = os.Stdout.Sync()
	select {
	case <-down:
	case <-time.After(3 * wait):
		return errors.New("the server did not go away")
	}
	select {
	case <-up:
	case <-time.After(3 * wait):
		return fmt.Errorf("no reconnect after the restart: %v", nc.LastError())
	}
	if err := nc.Publish("ni.open.rc", []byte("after")); err != nil {
		return err
	}
	m, err := next(sub)
	if err != nil {
		return fmt.Errorf("subscription not restored after reconnect: %w", err)
	}
	if string(m.Data) != "after" {
		return fmt.Errorf("got %q", m.Data)
	}
	return nil
}
