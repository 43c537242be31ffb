package main

// The server's own max_payload check, reached by a real nats.go client:
// nats.go refuses an oversized publish itself, so this scenario raises the
// limit it reads from INFO (the plaintext INFO before the TLS upgrade is
// rewritten, "1048576" to "2097152", same length) and then publishes
// 1 MiB + 1 byte. The server must close the connection (nats-server sends
// -ERR 'Maximum Payload Violation' first, which the client may not get to
// read) and deliver nothing.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
)

type infoRewriter struct{}

type rewriteConn struct {
	net.Conn
	r    *bufio.Reader
	head []byte // the rewritten INFO line, until read
	done bool
}

func (infoRewriter) Dial(network, address string) (net.Conn, error) {
	c, err := net.DialTimeout(network, address, wait)
	if err != nil {
		return nil, err
	}
	return &rewriteConn{Conn: c, r: bufio.NewReader(c)}, nil
}

func (c *rewriteConn) Read(b []byte) (int, error) {
	if !c.done {
		c.done = true
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return 0, err
		}
		c.head = bytes.Replace(line, []byte(`"max_payload":1048576`),
			[]byte(`"max_payload":2097152`), 1)
	}
	if len(c.head) > 0 {
		n := copy(b, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.r.Read(b)
}

func maxPayloadServer(e *env) error {
	watcher, err := e.as("alice")
	if err != nil {
		return err
	}
	defer watcher.Close()
	leak, err := watcher.SubscribeSync("ni.open.over")
	if err != nil {
		return err
	}
	if err := watcher.FlushTimeout(wait); err != nil {
		return err
	}
	closed := make(chan struct{})
	nc, err := e.as("alice", nats.SetCustomDialer(infoRewriter{}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return err
	}
	defer nc.Close()
	if nc.MaxPayload() != 2<<20 {
		return fmt.Errorf("INFO max_payload not rewritten (%d): INFO not as expected", nc.MaxPayload())
	}
	// Both servers refuse at the PUB line, before the payload arrives, so
	// the client may see the -ERR or only its write failing on the closed
	// socket; either way the connection must end and nothing be delivered.
	over := bytes.Repeat([]byte{'o'}, 1<<20+1)
	if err := nc.Publish("ni.open.over", over); errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("client refused the publish itself: %w", err)
	}
	_ = nc.FlushTimeout(wait)
	select {
	case <-closed:
	case <-time.After(wait):
		return errors.New("the server kept the connection after 1 MiB + 1 byte")
	}
	if err := nc.LastError(); err != nil {
		fmt.Printf("connection ended with: %v\n", err)
	}
	return none(leak, watcher)
}
