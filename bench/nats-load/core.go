// core.go — core NATS scenarios: pub, sub, pubsub (streaming or batched
// with a flush barrier), req and reply (bench layer).
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// sampleEvery: one published message in sampleEvery carries its send time
// (CLOCK_REALTIME ns, little endian, payload bytes 0..7; 0 = no stamp), so
// end-to-end latency is sampled without a clock read per message. rift
// bench stamps the same way (docs/performance.md).
const sampleEvery = 64

var asyncErrors int64

func connect(c *config, name string) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.NoReconnect(),
		nats.Timeout(10 * time.Second),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if atomic.AddInt64(&asyncErrors, 1) == 1 {
				fmt.Fprintf(os.Stderr, "nats-load: %v\n", err)
			}
		}),
	}
	if c.ca != "" {
		opts = append(opts, nats.RootCAs(c.ca))
	}
	return nats.Connect(c.url, opts...)
}

func connectN(c *config, role string, n int) ([]*nats.Conn, error) {
	conns := make([]*nats.Conn, 0, n)
	for i := 0; i < n; i++ {
		nc, err := connect(c, fmt.Sprintf("nats-load-%s-%d", role, i))
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, nc)
	}
	return conns, nil
}

func closeAll(conns []*nats.Conn) {
	for _, nc := range conns {
		nc.Close()
	}
}

func makePayload(size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = 0x2A
	}
	if size >= 8 {
		binary.LittleEndian.PutUint64(p, 0)
	}
	return p
}

// split spreads total over n clients, the first ones taking the remainder.
func split(total, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = total / n
		if i < total%n {
			out[i]++
		}
	}
	return out
}

// publishN publishes n messages on nc, stamping every sampleEvery-th one
// when stamp is set, calling barrier after every batch messages (batch > 0)
// and flushing at the end. payload is private to the caller's goroutine.
func publishN(c *config, nc *nats.Conn, payload []byte, n int, stamp bool,
	barrier func(sent int) error) error {
	stamp = stamp && len(payload) >= 8
	for j := 0; j < n; j++ {
		if stamp && j%sampleEvery == 0 {
			binary.LittleEndian.PutUint64(payload, uint64(time.Now().UnixNano()))
		}
		if err := nc.Publish(c.subject, payload); err != nil {
			return err
		}
		if stamp && j%sampleEvery == 0 {
			// Publish has copied the bytes into the write buffer.
			binary.LittleEndian.PutUint64(payload, 0)
		}
		if j%progressStep == progressStep-1 {
			progressAdd(progressStep)
		}
		if c.batch > 0 && (j+1)%c.batch == 0 && j+1 < n {
			if err := barrier(j + 1); err != nil {
				return err
			}
		}
	}
	return barrier(n)
}

func runPub(c *config) (*result, error) {
	conns, err := connectN(c, "pub", c.pubs)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	counts := split(c.msgs, c.pubs)
	r := &result{clientRates: make([]float64, c.pubs)}
	var failed int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, nc := range conns {
		wg.Add(1)
		go func(i int, nc *nats.Conn) {
			defer wg.Done()
			payload := makePayload(c.size)
			<-start
			t := time.Now()
			err := publishN(c, nc, payload, counts[i], false, func(int) error {
				return nc.FlushTimeout(c.timeout)
			})
			if err != nil {
				fmt.Fprintf(os.Stderr, "nats-load: publisher %d: %v\n", i, err)
				atomic.AddInt64(&failed, int64(counts[i]))
				return
			}
			r.clientRates[i] = float64(counts[i]) / time.Since(t).Seconds()
		}(i, nc)
	}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.elapsed = time.Since(t0)
	r.cpu1 = markCPU(c.serverPIDs)
	r.errors = failed
	r.msgs = int64(c.msgs) - failed
	return r, nil
}

// subState is one subscriber's view; its handler runs on the client's
// delivery goroutine for that subscription.
type subState struct {
	n       int64 // received so far (atomic)
	expect  int64
	batch   int64
	lat     []int64
	done    chan struct{}
	batchCh chan struct{}
	first   int64 // unix ns of the first message (atomic)
	last    int64 // unix ns of the last message (atomic)
	sub     *nats.Subscription
}

func newSubState(expect, batch int64) *subState {
	return &subState{
		expect:  expect,
		batch:   batch,
		lat:     make([]int64, 0, expect/sampleEvery+1),
		done:    make(chan struct{}),
		batchCh: make(chan struct{}, 1),
	}
}

func (s *subState) handle(m *nats.Msg) {
	n := atomic.AddInt64(&s.n, 1)
	if n == 1 || n == s.expect || (len(m.Data) >= 8 && binary.LittleEndian.Uint64(m.Data) != 0) {
		now := time.Now().UnixNano()
		if n == 1 {
			atomic.StoreInt64(&s.first, now)
		}
		if len(m.Data) >= 8 {
			if ts := int64(binary.LittleEndian.Uint64(m.Data)); ts != 0 {
				s.lat = append(s.lat, now-ts)
			}
		}
		atomic.StoreInt64(&s.last, now)
	}
	if n%progressStep == 0 {
		progressAdd(progressStep)
	}
	if s.batch > 0 && n%s.batch == 0 && n < s.expect {
		s.batchCh <- struct{}{}
	}
	if n == s.expect {
		close(s.done)
	}
}

func subscribeAll(c *config, conns []*nats.Conn, expect, batch int64) ([]*subState, error) {
	states := make([]*subState, len(conns))
	for i, nc := range conns {
		st := newSubState(expect, batch)
		sub, err := nc.Subscribe(c.subject, st.handle)
		if err != nil {
			return nil, err
		}
		// At-most-once core NATS drops at the client past 65,536 pending
		// messages; the benchmark wants every message counted instead.
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			return nil, err
		}
		// The flush round trip guarantees the server has the interest
		// before anyone publishes.
		if err := nc.FlushTimeout(c.timeout); err != nil {
			return nil, err
		}
		st.sub = sub
		states[i] = st
	}
	return states, nil
}

// waitAll waits until every subscriber is done or none progressed for
// c.timeout; it reports whether all finished.
func waitAll(c *config, states []*subState) bool {
	total := func() int64 {
		var t int64
		for _, s := range states {
			t += atomic.LoadInt64(&s.n)
		}
		return t
	}
	lastN, lastChange := total(), time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, s := range states {
		for done := false; !done; {
			select {
			case <-s.done:
				done = true
			case <-tick.C:
				if n := total(); n != lastN {
					lastN, lastChange = n, time.Now()
				} else if time.Since(lastChange) > c.timeout {
					return false
				}
			}
		}
	}
	return true
}

// collect fills r from the subscribers: delivered messages, per-subscriber
// rates from t0, latency samples and losses.
func collect(r *result, states []*subState, t0 time.Time, firstAsStart bool) {
	var end int64
	for _, s := range states {
		n := atomic.LoadInt64(&s.n)
		last := atomic.LoadInt64(&s.last)
		start := t0.UnixNano()
		if firstAsStart {
			start = atomic.LoadInt64(&s.first)
		}
		if last > end {
			end = last
		}
		if last > start {
			r.clientRates = append(r.clientRates, float64(n)/(float64(last-start)/1e9))
		} else {
			r.clientRates = append(r.clientRates, 0)
		}
		r.msgs += n
		r.errors += s.expect - n
		if d, err := s.sub.Dropped(); err == nil {
			r.errors += int64(d)
		}
		r.lat = append(r.lat, s.lat...)
	}
	if end > t0.UnixNano() {
		r.elapsed = time.Duration(end - t0.UnixNano())
	}
}

func runPubSub(c *config) (*result, error) {
	sc := *c
	if c.subURL != "" {
		sc.url = c.subURL
	}
	subConns, err := connectN(&sc, "sub", c.subs)
	if err != nil {
		return nil, err
	}
	defer closeAll(subConns)
	pubConns, err := connectN(c, "pub", c.pubs)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubConns)
	states, err := subscribeAll(c, subConns, int64(c.msgs), int64(c.batch))
	if err != nil {
		return nil, err
	}
	if c.subURL != "" {
		if err := awaitInterest(c, pubConns[0], subConns); err != nil {
			return nil, err
		}
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs)*int64(c.subs))
	counts := split(c.msgs, c.pubs)
	r := &result{latWhat: "e2e"}
	var wg sync.WaitGroup
	var pubErr error
	var errOnce sync.Once
	start := make(chan struct{})
	for i, nc := range pubConns {
		wg.Add(1)
		go func(i int, nc *nats.Conn) {
			defer wg.Done()
			payload := makePayload(c.size)
			<-start
			err := publishN(c, nc, payload, counts[i], true, func(sent int) error {
				if err := nc.FlushTimeout(c.timeout); err != nil {
					return err
				}
				if c.batch == 0 {
					return nil
				}
				// The barrier of the original's pipelined scenario:
				// every subscriber has received the whole batch.
				for _, s := range states {
					ch := s.batchCh
					if sent == counts[i] {
						ch = nil
					}
					select {
					case <-ch:
					case <-s.done:
					case <-time.After(c.timeout):
						return fmt.Errorf("batch not delivered within %v", c.timeout)
					}
				}
				return nil
			})
			if err != nil {
				errOnce.Do(func() { pubErr = fmt.Errorf("publisher %d: %w", i, err) })
			}
		}(i, nc)
	}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	close(start)
	wg.Wait()
	if pubErr != nil {
		fmt.Fprintf(os.Stderr, "nats-load: %v\n", pubErr)
	}
	if !waitAll(c, states) {
		fmt.Fprintf(os.Stderr, "nats-load: subscribers stalled; counting what arrived\n")
	}
	r.cpu1 = markCPU(c.serverPIDs)
	collect(r, states, t0, false)
	return r, nil
}

func runSub(c *config) (*result, error) {
	conns, err := connectN(c, "sub", c.subs)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	states, err := subscribeAll(c, conns, int64(c.msgs), 0)
	if err != nil {
		return nil, err
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs)*int64(c.subs))
	fmt.Fprintf(os.Stderr, "nats-load: subscribed to %s, waiting for %d messages\n", c.subject, c.msgs)
	// Wait (unbounded) for the first message, then measure first to last.
	for atomic.LoadInt64(&states[0].n) == 0 {
		time.Sleep(time.Millisecond)
	}
	r := &result{latWhat: "e2e"}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Unix(0, atomic.LoadInt64(&states[0].first))
	if !waitAll(c, states) {
		fmt.Fprintf(os.Stderr, "nats-load: publisher stopped early; counting what arrived\n")
	}
	r.cpu1 = markCPU(c.serverPIDs)
	collect(r, states, t0, true)
	return r, nil
}

// echoResponder answers every request on c.subject with its own payload.
func echoResponder(c *config, nc *nats.Conn, expect int64) (*subState, error) {
	st := newSubState(expect, 0)
	sub, err := nc.Subscribe(c.subject, func(m *nats.Msg) {
		if err := m.Respond(m.Data); err != nil {
			atomic.AddInt64(&asyncErrors, 1)
		}
		n := atomic.AddInt64(&st.n, 1)
		now := time.Now().UnixNano()
		if n == 1 {
			atomic.StoreInt64(&st.first, now)
		}
		atomic.StoreInt64(&st.last, now)
		if n == st.expect {
			close(st.done)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	st.sub = sub
	return st, nc.FlushTimeout(c.timeout)
}

// awaitInterest waits until interest made on |subConns| (on another node)
// has reached the publishers' node: each subscriber connection answers
// SUBJECT.ready.<i>, subscribed after its real subscription on the same
// connection, so an answer means the earlier interest crossed the routes
// too (a cluster forwards one connection's interest in order).
func awaitInterest(c *config, pub *nats.Conn, subConns []*nats.Conn) error {
	for i, nc := range subConns {
		subj := fmt.Sprintf("%s.ready.%d", c.subject, i)
		sub, err := nc.Subscribe(subj, func(m *nats.Msg) { _ = m.Respond(nil) })
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		if err := nc.FlushTimeout(c.timeout); err != nil {
			return err
		}
		deadline := time.Now().Add(c.timeout)
		for {
			if _, err := pub.Request(subj, nil, 200*time.Millisecond); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("interest on %s did not reach the publishing node within %v", subj, c.timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func runReq(c *config) (*result, error) {
	rc := *c
	if c.responderURL != "" {
		rc.url = c.responderURL
	}
	respConn, err := connect(&rc, "nats-load-responder")
	if err != nil {
		return nil, err
	}
	defer respConn.Close()
	if _, err := echoResponder(c, respConn, -1); err != nil {
		return nil, err
	}
	conns, err := connectN(c, "req", c.pubs)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	if c.responderURL != "" {
		if err := awaitInterest(c, conns[0], []*nats.Conn{respConn}); err != nil {
			return nil, err
		}
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	counts := split(c.msgs, c.pubs)
	r := &result{latWhat: "rtt", clientRates: make([]float64, c.pubs)}
	lats := make([][]int64, c.pubs)
	var failed int64
	var wg, warm sync.WaitGroup
	start := make(chan struct{})
	for i, nc := range conns {
		wg.Add(1)
		warm.Add(1)
		go func(i int, nc *nats.Conn) {
			defer wg.Done()
			payload := makePayload(c.size)
			// Warm-up as the original (up to 1,000 unmeasured round trips).
			w := counts[i] / 10
			if w > 1000 {
				w = 1000
			}
			for j := 0; j < w; j++ {
				if _, err := nc.Request(c.subject, payload, c.timeout); err != nil {
					break
				}
			}
			warm.Done()
			lat := make([]int64, 0, counts[i])
			<-start
			t := time.Now()
			for j := 0; j < counts[i]; j++ {
				s := time.Now()
				if _, err := nc.Request(c.subject, payload, c.timeout); err != nil {
					if atomic.AddInt64(&failed, 1) == 1 {
						fmt.Fprintf(os.Stderr, "nats-load: request: %v\n", err)
					}
					continue
				}
				lat = append(lat, int64(time.Since(s)))
				if j%progressStep == progressStep-1 {
					progressAdd(progressStep)
				}
			}
			r.clientRates[i] = float64(len(lat)) / time.Since(t).Seconds()
			lats[i] = lat
		}(i, nc)
	}
	warm.Wait()
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.elapsed = time.Since(t0)
	r.cpu1 = markCPU(c.serverPIDs)
	for _, l := range lats {
		r.lat = append(r.lat, l...)
		r.msgs += int64(len(l))
	}
	r.errors = failed
	return r, nil
}

func runReply(c *config) (*result, error) {
	nc, err := connect(c, "nats-load-responder")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	st, err := echoResponder(c, nc, int64(c.msgs))
	if err != nil {
		return nil, err
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	fmt.Fprintf(os.Stderr, "nats-load: answering %d requests on %s\n", c.msgs, c.subject)
	for atomic.LoadInt64(&st.n) == 0 {
		time.Sleep(time.Millisecond)
	}
	r := &result{}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Unix(0, atomic.LoadInt64(&st.first))
	if !waitAll(c, []*subState{st}) {
		fmt.Fprintf(os.Stderr, "nats-load: requesters stopped early\n")
	}
	r.cpu1 = markCPU(c.serverPIDs)
	collect(r, []*subState{st}, t0, true)
	return r, nil
}
