package main

// Halves of cross-face scenarios, the other half being the rift CLI or a
// Lua plugin run by the harness.

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// recvForHarness: `recv SUBJECT N` subscribes, prints "subscribed", then
// prints each of N payloads on its own line.
func recvForHarness(e *env) error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: recv SUBJECT N")
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		return err
	}
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(os.Args[2])
	if err != nil {
		return err
	}
	if err := nc.FlushTimeout(wait); err != nil {
		return err
	}
	fmt.Println("subscribed")
	_ = os.Stdout.Sync()
	for i := 0; i < n; i++ {
		m, err := sub.NextMsg(3 * wait)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		fmt.Printf("msg %s %s\n", m.Subject, m.Data)
	}
	return nil
}

// requestForHarness: `request SUBJECT PAYLOAD` retries until a responder
// answers (the harness starts it concurrently), then prints the reply.
func requestForHarness(e *env) error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: request SUBJECT PAYLOAD")
	}
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	deadline := time.Now().Add(3 * wait)
	for {
		m, err := nc.Request(os.Args[2], []byte(os.Args[3]), wait)
		if err == nil {
			fmt.Printf("reply %s\n", m.Data)
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond) // no responder yet: ask again
	}
}

// serveForHarness: `serve SUBJECT N` answers N requests with "nats got " +
// the payload, printing "subscribed" once it is.
func serveForHarness(e *env) error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: serve SUBJECT N")
	}
	n, err := strconv.Atoi(os.Args[3])
	if err != nil {
		return err
	}
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(os.Args[2])
	if err != nil {
		return err
	}
	if err := nc.FlushTimeout(wait); err != nil {
		return err
	}
	fmt.Println("subscribed")
	_ = os.Stdout.Sync()
	for i := 0; i < n; i++ {
		m, err := sub.NextMsg(3 * wait)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		if err := m.Respond(append([]byte("nats got "), m.Data...)); err != nil {
			return err
		}
	}
	return nc.FlushTimeout(wait)
}
