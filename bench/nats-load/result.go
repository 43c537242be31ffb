// result.go — one measurement: derived rates, latency percentiles, CPU
// accounting, the human report and the CSV row (bench layer).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// csvHeader is the column contract shared with `rift bench --csv`
// (docs/performance.md). Append new columns at the end only.
var csvHeader = []string{
	"impl", "transport", "label", "scenario", "size", "msgs", "pubs", "subs",
	"batch", "seconds", "msgs_per_s", "mb_per_s", "lat_what", "p50_us",
	"p95_us", "p99_us", "max_us", "client_min_mps", "client_avg_mps",
	"client_max_mps", "errors", "client_cpu_s", "server_cpu_s",
}

type result struct {
	msgs        int64         // messages counted in msgs_per_s
	elapsed     time.Duration // measured window
	latWhat     string        // what one latency sample is; "" = none
	lat         []int64       // samples in ns
	clientRates []float64     // msgs/s of each counted client
	errors      int64         // lost, dropped or failed messages
	cpu0, cpu1  cpuMark       // CPU at the start and end of the window

	// Copied from the config by fill.
	cfg *config
}

func (r *result) fill(c *config) { r.cfg = c }

// cpuMark is process CPU (user+system seconds) of this process and, when
// known, of the server.
type cpuMark struct {
	self   float64
	server float64 // < 0 when unknown
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc/<pid>/stat.
const clockTick = 100.0

// markCPU reads this process's CPU and the sum over the server processes
// (a cluster's servers are several); unknown if any cannot be read.
func markCPU(serverPIDs []int) cpuMark {
	var ru syscall.Rusage
	m := cpuMark{server: -1}
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		m.self = float64(ru.Utime.Sec+ru.Stime.Sec) +
			float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	if len(serverPIDs) > 0 {
		m.server = 0
	}
	for _, pid := range serverPIDs {
		t := procCPU(pid)
		if t < 0 {
			m.server = -1
			break
		}
		m.server += t
	}
	return m
}

// procCPU reads utime+stime of a whole process (all threads) from
// /proc/<pid>/stat; fields 14 and 15, counted after the ")" that ends the
// command name because the name itself may contain spaces.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return -1
	}
	ut, e1 := strconv.ParseFloat(f[11], 64)
	st, e2 := strconv.ParseFloat(f[12], 64)
	if e1 != nil || e2 != nil {
		return -1
	}
	return (ut + st) / clockTick
}

func (r *result) seconds() float64 { return r.elapsed.Seconds() }

func (r *result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.msgs) / r.seconds()
}

// percentile uses the original benchmark's rule: the sorted sample at
// index floor((n-1)*p/100). Samples must already be sorted.
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

func us(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }

func (r *result) clientStats() (min, avg, max float64) {
	if len(r.clientRates) == 0 {
		return 0, 0, 0
	}
	min, max = r.clientRates[0], r.clientRates[0]
	for _, v := range r.clientRates {
		avg += v
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	return min, avg / float64(len(r.clientRates)), max
}

func (r *result) cpu() (client, server float64) {
	client = r.cpu1.self - r.cpu0.self
	server = -1
	if r.cpu0.server >= 0 && r.cpu1.server >= 0 {
		server = r.cpu1.server - r.cpu0.server
	}
	return client, server
}

func (r *result) row() []string {
	c := r.cfg
	sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	mn, avg, mx := r.clientStats()
	ccpu, scpu := r.cpu()
	row := []string{
		"nats", c.transport(), c.label, c.scenario, strconv.Itoa(c.size),
		strconv.FormatInt(r.msgs, 10), strconv.Itoa(c.pubs), strconv.Itoa(r.subsCol()),
		strconv.Itoa(c.batch), f(r.seconds(), 6), f(r.rate(), 1),
		f(r.rate()*float64(c.size)/1e6, 3), r.latWhat, "", "", "", "",
		f(mn, 1), f(avg, 1), f(mx, 1), strconv.FormatInt(r.errors, 10),
		f(ccpu, 3), "",
	}
	if len(r.lat) > 0 {
		row[13] = us(percentile(r.lat, 50))
		row[14] = us(percentile(r.lat, 95))
		row[15] = us(percentile(r.lat, 99))
		row[16] = us(r.lat[len(r.lat)-1])
	}
	if scpu >= 0 {
		row[22] = f(scpu, 3)
	}
	return row
}

// subsCol is the subscriber count that took part: 0 where the scenario
// has none.
func (r *result) subsCol() int {
	switch r.cfg.scenario {
	case "pubsub", "sub":
		return r.cfg.subs
	case "req", "reply", "consume":
		return 1
	}
	return 0
}

func (r *result) appendCSV(path string) error {
	st, err := os.Stat(path)
	fresh := err != nil || st.Size() == 0
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	if fresh {
		b.WriteString(strings.Join(csvHeader, ",") + "\n")
	}
	row := r.row()
	for i, v := range row {
		// Labels are free text: keep the file parseable by plain tools.
		row[i] = strings.NewReplacer(",", ";", "\n", " ").Replace(v)
	}
	b.WriteString(strings.Join(row, ",") + "\n")
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func (r *result) report(w io.Writer) {
	c := r.cfg
	row := r.row() // sorts the samples
	fmt.Fprintf(w, "nats %s %s: %d B, %d msgs in %.3f s = %s msg/s, %.2f MB/s",
		c.transport(), c.scenario, c.size, r.msgs, r.seconds(), human(r.rate()),
		r.rate()*float64(c.size)/1e6)
	if r.errors > 0 {
		fmt.Fprintf(w, " (%d lost or failed)", r.errors)
	}
	fmt.Fprintln(w)
	if len(r.lat) > 0 {
		fmt.Fprintf(w, "  latency (%s, %d samples): p50 %s us  p95 %s us  p99 %s us  max %s us\n",
			r.latWhat, len(r.lat), row[13], row[14], row[15], row[16])
	}
	if len(r.clientRates) > 1 {
		mn, avg, mx := r.clientStats()
		fmt.Fprintf(w, "  per client (%d): min %s  avg %s  max %s msg/s\n",
			len(r.clientRates), human(mn), human(avg), human(mx))
	}
	ccpu, scpu := r.cpu()
	if scpu >= 0 && r.msgs > 0 {
		fmt.Fprintf(w, "  cpu: client %.2f s, server %.2f s = %.2f s per million msgs\n",
			ccpu, scpu, (ccpu+scpu)/float64(r.msgs)*1e6)
	} else {
		fmt.Fprintf(w, "  cpu: client %.2f s\n", ccpu)
	}
}

// progress counts handled messages for the progress bar; hot loops add
// to it in steps of progressStep to keep the atomic off the fast path.
var (
	progress      int64
	progressTotal int64
)

const progressStep = 256

func progressAdd(n int64) { atomic.AddInt64(&progress, n) }

// startProgress draws a bar on stderr when it is a terminal (or when
// forced), never into a pipe or a file.
func startProgress(c *config) func() {
	on := c.progress == "on"
	if c.progress == "auto" {
		if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	if !on {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(os.Stderr, "\r%60s\r", "")
				return
			case <-t.C:
			}
			n, total := atomic.LoadInt64(&progress), atomic.LoadInt64(&progressTotal)
			if total <= 0 {
				continue
			}
			frac := float64(n) / float64(total)
			if frac > 1 {
				frac = 1
			}
			bar := strings.Repeat("#", int(frac*30)) + strings.Repeat(".", 30-int(frac*30))
			fmt.Fprintf(os.Stderr, "\r%-8s [%s] %3.0f%% %d/%d", c.scenario, bar, frac*100, n, total)
		}
	}()
	return func() { close(done); <-finished }
}
