// nats-load — rift's own load generator for nats-server and JetStream
// (bench layer). It drives the same workloads as `rift bench` so that
// bench/compare.sh can put the two side by side, and it writes the same CSV
// columns (the contract is in docs/performance.md, "CSV columns").
//
// It uses only the official Go client as Debian ships it
// (golang-github-nats-io-go-nats-dev) and builds offline in GOPATH mode:
//
//	cd bench/nats-load && GO111MODULE=off GOPATH=/usr/share/gocode \
//	    GOPROXY=off go build -o /tmp/nats-load .
//
// Usage: nats-load SCENARIO [flags]; `nats-load help` lists them.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// config holds every flag. Flag names match `rift bench` so one command
// line, with only the connection flags changed, drives either tool.
type config struct {
	scenario      string
	url           string
	responderURL  string
	subURL        string
	ca            string
	msgs          int
	size          int
	pubs          int
	subs          int
	batch         int
	subject       string
	stream        string
	storage       string
	replicas      int
	maxAckPending int
	msgID         bool
	csv           string
	label         string
	serverPIDs    []int
	timeout       time.Duration
	progress      string
}

var scenarios = []struct{ name, help string }{
	{"pub", "publish only: --pubs publishers, no subscriber; --batch N = flush barrier every N"},
	{"sub", "subscribe only: receive --msgs messages published by someone else"},
	{"pubsub", "--pubs publishers -> --subs subscribers; --batch N = publish N, flush, wait until received"},
	{"req", "sequential request/reply round trips (--pubs requesters, one in-process echo responder, on --responder-url if given)"},
	{"reply", "echo responder only: answer --msgs requests sent by someone else"},
	{"stream", "JetStream publish, each publisher waits for acks; --batch W = async window (1 = synchronous)"},
	{"consume", "JetStream pull consumer: prefill --msgs, then fetch --batch (<=256) + ack each"},
	{"push", "JetStream push consumer: prefill --msgs, then receive + ack each, --batch = max unacknowledged"},
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: nats-load SCENARIO [flags]\n\nscenarios:\n")
	for _, s := range scenarios {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", s.name, s.help)
	}
	fmt.Fprintf(os.Stderr, "\nflags:\n")
	flag.PrintDefaults()
}

func parseArgs(args []string) (*config, error) {
	c := &config{}
	fs := flag.CommandLine
	fs.StringVar(&c.url, "url", "nats://127.0.0.1:4222", "server URL (nats:// plain TCP, tls:// TLS)")
	fs.StringVar(&c.responderURL, "responder-url", "", "req: connect the echo responder here instead of --url (another node of a cluster)")
	fs.StringVar(&c.subURL, "sub-url", "", "pubsub: connect the subscribers here instead of --url (another node of a cluster)")
	fs.StringVar(&c.ca, "ca", "", "PEM file of the CA that signed the server certificate (TLS)")
	fs.IntVar(&c.msgs, "msgs", 100000, "messages (or requests) to measure, in total")
	fs.IntVar(&c.size, "size", 64, "payload bytes")
	fs.IntVar(&c.pubs, "pubs", 1, "publishers (requesters for req), one connection each")
	fs.IntVar(&c.subs, "subs", 1, "subscribers for pubsub, one connection each")
	fs.IntVar(&c.batch, "batch", 0, "pub/pubsub: barrier every N; stream: async window; consume: fetch size; push: max unacknowledged")
	fs.StringVar(&c.subject, "subject", "", "subject (default bench.SCENARIO)")
	fs.StringVar(&c.stream, "stream", "bench", "JetStream stream name (stream, consume)")
	fs.StringVar(&c.storage, "storage", "file", "JetStream storage: file or memory")
	fs.IntVar(&c.replicas, "replicas", 1, "JetStream stream replicas (1..5; more than 1 needs a cluster)")
	fs.IntVar(&c.maxAckPending, "max-ack-pending", 65536, "consume: consumer max_ack_pending")
	fs.BoolVar(&c.msgID, "msg-id", false, "stream: send each publish as riftd does, with a Nats-Msg-Id (deduplicated) and a timestamp header")
	fs.StringVar(&c.csv, "csv", "", "append one CSV row to FILE (header written when FILE is new)")
	fs.StringVar(&c.label, "label", "", "free tag copied into the CSV label column")
	var pids string
	fs.StringVar(&pids, "server-pid", "", "measure these local server processes' CPU over the measured window (PID[,PID...], summed)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up when no progress for this long")
	fs.StringVar(&c.progress, "progress", "auto", "progress bar: auto (terminal only), on, off")
	fs.Usage = usage
	if len(args) < 1 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		usage()
		os.Exit(2)
	}
	c.scenario = args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	for _, f := range strings.Split(pids, ",") {
		if f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--server-pid: %q is not a process id", f)
		}
		c.serverPIDs = append(c.serverPIDs, pid)
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	known := false
	for _, s := range scenarios {
		known = known || s.name == c.scenario
	}
	switch {
	case !known:
		return nil, fmt.Errorf("unknown scenario %q", c.scenario)
	case c.msgs < 1:
		return nil, fmt.Errorf("--msgs must be at least 1")
	case c.size < 0 || c.size > 1<<20:
		return nil, fmt.Errorf("--size must be 0..1048576")
	case c.pubs < 1 || c.subs < 1:
		return nil, fmt.Errorf("--pubs and --subs must be at least 1")
	case c.batch < 0:
		return nil, fmt.Errorf("--batch must not be negative")
	case c.storage != "file" && c.storage != "memory":
		return nil, fmt.Errorf("--storage must be file or memory")
	case c.replicas < 1 || c.replicas > 5:
		return nil, fmt.Errorf("--replicas must be 1..5")
	case c.scenario == "consume" && c.batch > 256:
		return nil, fmt.Errorf("--batch for consume is at most 256 (rift's MAX_FETCH)")
	case c.scenario == "pubsub" && c.batch > 0 && c.pubs != 1:
		return nil, fmt.Errorf("pubsub --batch needs exactly one publisher")
	}
	if c.subject == "" {
		c.subject = "bench." + c.scenario
	}
	if c.scenario == "consume" && c.batch == 0 {
		c.batch = 256
	}
	if c.scenario == "push" && c.batch == 0 {
		c.batch = 1024
	}
	if c.scenario == "stream" && c.batch == 0 {
		c.batch = 1
	}
	return c, nil
}

// transport names the CSV transport column from the URL scheme.
func (c *config) transport() string {
	u, err := url.Parse(c.url)
	if err == nil && (u.Scheme == "tls" || c.ca != "") {
		return "tls"
	}
	return "tcp"
}

func main() {
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "nats-load: %v\n", err)
		os.Exit(2)
	}
	run := map[string]func(*config) (*result, error){
		"pub":     runPub,
		"sub":     runSub,
		"pubsub":  runPubSub,
		"req":     runReq,
		"reply":   runReply,
		"stream":  runStream,
		"consume": runConsume,
		"push":    runPush,
	}[cfg.scenario]
	stopProgress := startProgress(cfg)
	res, err := run(cfg)
	stopProgress()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nats-load %s: %v\n", cfg.scenario, err)
		os.Exit(1)
	}
	res.fill(cfg)
	res.report(os.Stdout)
	if cfg.csv != "" {
		if err := res.appendCSV(cfg.csv); err != nil {
			fmt.Fprintf(os.Stderr, "nats-load: %v\n", err)
			os.Exit(1)
		}
	}
	if res.errors > 0 {
		// The row is still written (its errors column says how many were
		// lost), but the exit code tells scripts the run was not clean.
		os.Exit(3)
	}
}
