package main

// Connection scenarios: TLS with the CA, token and user/password
// authentication, and the refusals (unknown CA, bad credentials).

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

func tlsWithCA(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	if err := nc.FlushTimeout(wait); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	st, err := nc.TLSConnectionState()
	if err != nil {
		return fmt.Errorf("not a TLS connection: %w", err)
	}
	if !st.HandshakeComplete || len(st.PeerCertificates) == 0 {
		return errors.New("TLS handshake incomplete or no server certificate")
	}
	if !nc.Opts.Secure && !strings.HasPrefix(nc.ConnectedUrl(), "tls://") {
		return fmt.Errorf("connection to %s is not secure", nc.ConnectedUrl())
	}
	if nc.ConnectedServerId() == "" {
		return errors.New("INFO carried no server_id")
	}
	return nil
}

func missingCA(e *env) error {
	o := []nats.Option{nats.Name("ni-noca"), nats.Timeout(wait), nats.NoReconnect(),
		nats.Secure(), nats.Token(e.alice)}
	nc, err := nats.Connect(e.url, o...)
	if err == nil {
		nc.Close()
		return errors.New("connected without the CA that signed the server's certificate")
	}
	if !strings.Contains(err.Error(), "certificate") {
		return fmt.Errorf("refused, but not for the certificate: %v", err)
	}
	return nil
}

func authToken(e *env) error {
	nc, err := nats.Connect(e.url, append(e.base("ni-token"), nats.Token(e.alice))...)
	if err != nil {
		return err
	}
	defer nc.Close()
	return pubSubRoundTrip(nc, "ni.open.token")
}

func authUserPass(e *env) error {
	nc, err := e.as("bob")
	if err != nil {
		return err
	}
	defer nc.Close()
	return pubSubRoundTrip(nc, "ni.open.userpass")
}

func pubSubRoundTrip(nc *nats.Conn, subject string) error {
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		return err
	}
	if err := nc.Publish(subject, []byte("round trip")); err != nil {
		return err
	}
	m, err := next(sub)
	if err != nil {
		return err
	}
	if string(m.Data) != "round trip" {
		return fmt.Errorf("got %q", m.Data)
	}
	return nil
}

// refused checks that a connect attempt failed with nats-server's
// "Authorization Violation".
func refused(nc *nats.Conn, err error) error {
	if err == nil {
		nc.Close()
		return errors.New("connected with wrong credentials")
	}
	if !errors.Is(err, nats.ErrAuthorization) &&
		!strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		return fmt.Errorf("refused, but not with Authorization Violation: %v", err)
	}
	return nil
}

func badToken(e *env) error {
	bad := "x" + e.alice[1:]
	return refused(nats.Connect(e.url, append(e.base("ni-badtoken"), nats.Token(bad))...))
}

func badPassword(e *env) error {
	return refused(nats.Connect(e.url, append(e.base("ni-badpass"),
		nats.UserInfo("bob", e.alice))...))
}

// plaintext: a nats:// connection on loopback, no TLS, still authenticated.
func plaintext(e *env) error {
	nc, err := e.as("alice")
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := nc.TLSConnectionState(); err == nil {
		return errors.New("a TLS connection, want plaintext")
	}
	return pubSubRoundTrip(nc, "ni.open.plain")
}
