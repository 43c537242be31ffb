// js.go — JetStream scenarios: acknowledged stream publish (synchronous or
// with an async window), a durable pull consumer doing fetch + ack, and a
// push consumer with a bound on unacknowledged messages (bench layer).
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

const consumerName = "bench"

// resetStream recreates the stream empty so every run starts from the same
// state (the rift side cannot delete configured streams, so it appends;
// both write sequential records and neither has to compact in a run).
func resetStream(c *config, js nats.JetStreamContext) error {
	if err := js.DeleteStream(c.stream); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
		return fmt.Errorf("delete stream %s: %w", c.stream, err)
	}
	storage := nats.FileStorage
	if c.storage == "memory" {
		storage = nats.MemoryStorage
	}
	cfg := &nats.StreamConfig{
		Name:      c.stream,
		Subjects:  []string{c.subject},
		Storage:   storage,
		Retention: nats.LimitsPolicy,
		MaxMsgs:   -1,
		MaxBytes:  -1,
		Replicas:  c.replicas,
	}
	if c.msgID {
		// riftd's replicated streams' window (REPL_DUPLICATE_WINDOW_MS).
		cfg.Duplicates = 45 * time.Second
	}
	_, err := js.AddStream(cfg)
	if err != nil {
		return fmt.Errorf("add stream %s: %w", c.stream, err)
	}
	return nil
}

// checkStored returns how many of want messages are missing from the stream.
func checkStored(js nats.JetStreamContext, c *config, want int64) int64 {
	info, err := js.StreamInfo(c.stream)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nats-load: stream info: %v\n", err)
		return want
	}
	if got := int64(info.State.Msgs); got < want {
		return want - got
	}
	return 0
}

var msgIDs int64

// publishOne publishes one message; with --msg-id it carries what riftd
// adds to a replicated stream's publish: a Nats-Msg-Id, which JetStream
// remembers for the stream's duplicate window so that a retry is stored
// once, and a timestamp header.
func publishOne(c *config, js nats.JetStreamContext, payload []byte) (nats.PubAckFuture, error) {
	if !c.msgID {
		return js.PublishAsync(c.subject, payload)
	}
	m := nats.NewMsg(c.subject)
	m.Data = payload
	m.Header.Set("Rift-Ts", strconv.FormatInt(time.Now().UnixMilli(), 10))
	id := fmt.Sprintf("bench.%d.%d", os.Getpid(), atomic.AddInt64(&msgIDs, 1))
	return js.PublishMsgAsync(m, nats.MsgId(id))
}

// publishAsyncN publishes n messages with at most window unacknowledged and
// waits for every ack; it returns the failures.
func publishAsyncN(c *config, js nats.JetStreamContext, payload []byte, n int, failed *int64) {
	for j := 0; j < n; j++ {
		if _, err := publishOne(c, js, payload); err != nil {
			if atomic.AddInt64(failed, 1) == 1 {
				fmt.Fprintf(os.Stderr, "nats-load: async publish: %v\n", err)
			}
		}
		if j%progressStep == progressStep-1 {
			progressAdd(progressStep)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(c.timeout):
		fmt.Fprintf(os.Stderr, "nats-load: %d publish acks missing after %v\n",
			js.PublishAsyncPending(), c.timeout)
		atomic.AddInt64(failed, int64(js.PublishAsyncPending()))
	}
}

func jsContext(c *config, nc *nats.Conn, failed *int64) (nats.JetStreamContext, error) {
	opts := []nats.JSOpt{
		nats.MaxWait(c.timeout),
		nats.PublishAsyncErrHandler(func(_ nats.JetStream, _ *nats.Msg, err error) {
			if atomic.AddInt64(failed, 1) == 1 {
				fmt.Fprintf(os.Stderr, "nats-load: publish ack: %v\n", err)
			}
		}),
	}
	if c.batch > 1 {
		opts = append(opts, nats.PublishAsyncMaxPending(c.batch))
	}
	return nc.JetStream(opts...)
}

func runStream(c *config) (*result, error) {
	admin, err := connect(c, "nats-load-admin")
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	var failed int64
	adminJS, err := jsContext(c, admin, &failed)
	if err != nil {
		return nil, err
	}
	if err := resetStream(c, adminJS); err != nil {
		return nil, err
	}
	conns, err := connectN(c, "jspub", c.pubs)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	ctxs := make([]nats.JetStreamContext, c.pubs)
	for i, nc := range conns {
		if ctxs[i], err = jsContext(c, nc, &failed); err != nil {
			return nil, err
		}
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	counts := split(c.msgs, c.pubs)
	r := &result{clientRates: make([]float64, c.pubs)}
	if c.batch <= 1 {
		r.latWhat = "ack"
	}
	lats := make([][]int64, c.pubs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range conns {
		wg.Add(1)
		go func(i int, js nats.JetStreamContext) {
			defer wg.Done()
			payload := makePayload(c.size)
			<-start
			t := time.Now()
			before := atomic.LoadInt64(&failed)
			if c.batch > 1 {
				publishAsyncN(c, js, payload, counts[i], &failed)
			} else {
				lat := make([]int64, 0, counts[i])
				for j := 0; j < counts[i]; j++ {
					s := time.Now()
					if _, err := js.Publish(c.subject, payload); err != nil {
						if atomic.AddInt64(&failed, 1) == 1 {
							fmt.Fprintf(os.Stderr, "nats-load: publish: %v\n", err)
						}
						continue
					}
					lat = append(lat, int64(time.Since(s)))
					if j%progressStep == progressStep-1 {
						progressAdd(progressStep)
					}
				}
				lats[i] = lat
			}
			// Other publishers' failures may land in between; the
			// per-client rate is approximate only when some fail.
			ok := int64(counts[i]) - (atomic.LoadInt64(&failed) - before)
			r.clientRates[i] = float64(ok) / time.Since(t).Seconds()
		}(i, ctxs[i])
	}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.elapsed = time.Since(t0)
	r.cpu1 = markCPU(c.serverPIDs)
	for _, l := range lats {
		r.lat = append(r.lat, l...)
	}
	r.errors = atomic.LoadInt64(&failed)
	r.msgs = int64(c.msgs) - r.errors
	if missing := checkStored(adminJS, c, r.msgs); missing > 0 {
		r.errors += missing
		r.msgs -= missing
	}
	return r, nil
}

// prefill recreates the stream with --msgs messages (an async window of
// 256; not measured) and returns the admin connection and its context.
func prefill(c *config) (*nats.Conn, nats.JetStreamContext, error) {
	admin, err := connect(c, "nats-load-admin")
	if err != nil {
		return nil, nil, err
	}
	var failed int64
	fillCfg := *c
	fillCfg.batch = 256
	adminJS, err := jsContext(&fillCfg, admin, &failed)
	if err == nil {
		err = resetStream(c, adminJS)
	}
	if err == nil {
		publishAsyncN(c, adminJS, makePayload(c.size), c.msgs, &failed)
		if failed > 0 || checkStored(adminJS, c, int64(c.msgs)) > 0 {
			err = fmt.Errorf("prefill of %d messages failed", c.msgs)
		}
	}
	if err != nil {
		admin.Close()
		return nil, nil, err
	}
	atomic.StoreInt64(&progress, 0)
	return admin, adminJS, nil
}

func runConsume(c *config) (*result, error) {
	admin, adminJS, err := prefill(c)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	_, err = adminJS.AddConsumer(c.stream, &nats.ConsumerConfig{
		Durable:       consumerName,
		DeliverPolicy: nats.DeliverAllPolicy,
		AckPolicy:     nats.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxAckPending: c.maxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("add consumer: %w", err)
	}
	nc, err := connect(c, "nats-load-consumer")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(c.timeout))
	if err != nil {
		return nil, err
	}
	sub, err := js.PullSubscribe(c.subject, consumerName, nats.Bind(c.stream, consumerName))
	if err != nil {
		return nil, fmt.Errorf("pull subscribe: %w", err)
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	r := &result{latWhat: "fetch"}
	got := 0
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	for got < c.msgs {
		want := c.batch
		if c.msgs-got < want {
			want = c.msgs - got
		}
		s := time.Now()
		msgs, err := sub.Fetch(want, nats.MaxWait(c.timeout))
		if len(msgs) > 0 {
			r.lat = append(r.lat, int64(time.Since(s)))
		}
		for _, m := range msgs {
			// Fire-and-forget acks; the final flush is the barrier.
			if err := m.Ack(); err != nil {
				r.errors++
			}
		}
		got += len(msgs)
		progressAdd(int64(len(msgs)))
		if err != nil && len(msgs) == 0 {
			fmt.Fprintf(os.Stderr, "nats-load: fetch: %v\n", err)
			break
		}
	}
	if err := nc.FlushTimeout(c.timeout); err != nil {
		return nil, err
	}
	r.elapsed = time.Since(t0)
	r.cpu1 = markCPU(c.serverPIDs)
	r.msgs = int64(got)
	r.errors += int64(c.msgs - got)
	r.clientRates = []float64{r.rate()}
	// Every ack must have been applied: the server handles a connection's
	// messages in order, so after the flush round trip none is pending.
	if info, err := adminJS.ConsumerInfo(c.stream, consumerName); err == nil {
		r.errors += int64(info.NumAckPending)
	}
	return r, nil
}

// runPush is the JetStream counterpart of a NATS Streaming subscription
// with maxInFlight: a push consumer, deliver all, explicit acks, at most
// --batch unacknowledged (max_ack_pending), measured from the subscribe
// until every prefilled message was delivered once (redeliveries count
// as errors).
func runPush(c *config) (*result, error) {
	admin, _, err := prefill(c)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	nc, err := connect(c, "nats-load-consumer")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(c.timeout))
	if err != nil {
		return nil, err
	}
	atomic.StoreInt64(&progressTotal, int64(c.msgs))
	seen := make([]bool, c.msgs+1)
	var fresh, dups int64
	done := make(chan struct{})
	r := &result{}
	r.cpu0 = markCPU(c.serverPIDs)
	t0 := time.Now()
	sub, err := js.Subscribe(c.subject, func(m *nats.Msg) {
		// One callback at a time per subscription: seen needs no lock.
		meta, err := m.Metadata()
		if err == nil && meta.Sequence.Stream >= 1 && meta.Sequence.Stream <= uint64(c.msgs) &&
			!seen[meta.Sequence.Stream] {
			seen[meta.Sequence.Stream] = true
			if atomic.AddInt64(&fresh, 1) == int64(c.msgs) {
				close(done)
			}
		} else {
			atomic.AddInt64(&dups, 1)
		}
		_ = m.Ack()
		progressAdd(1)
	}, nats.DeliverAll(), nats.ManualAck(), nats.AckExplicit(),
		nats.MaxAckPending(c.batch), nats.AckWait(30*time.Second),
		nats.BindStream(c.stream))
	if err != nil {
		return nil, fmt.Errorf("push subscribe: %w", err)
	}
	// Deliveries must not wait in the client: the bound is the server's.
	_ = sub.SetPendingLimits(-1, -1)
	select {
	case <-done:
	case <-time.After(c.timeout):
		fmt.Fprintf(os.Stderr, "nats-load: push: %d of %d after %v\n",
			atomic.LoadInt64(&fresh), c.msgs, c.timeout)
	}
	r.elapsed = time.Since(t0)
	r.cpu1 = markCPU(c.serverPIDs)
	_ = sub.Unsubscribe()
	r.msgs = atomic.LoadInt64(&fresh)
	r.errors = int64(c.msgs) - r.msgs + atomic.LoadInt64(&dups)
	r.clientRates = []float64{r.rate()}
	return r, nil
}
