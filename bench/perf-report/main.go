// perf-report — turns bench/compare.sh measurements into the markdown
// tables of docs/performance.md and gnuplot inputs for its charts (bench
// layer). Standard library only; built offline by compare.sh.
//
//	perf-report --csv results.csv --rows rows.tsv --env env.txt \
//	    --md summary.md --plots DIR
//
// results.csv holds one row per run in the shared CSV contract
// (docs/performance.md); rows.tsv lists the compared rows in order:
// id, issue item, title, "yes" when its latency gets table lines, arguments.
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// contractColumns is the CSV column order of docs/performance.md.
var contractColumns = []string{
	"impl", "transport", "label", "scenario", "size", "msgs", "pubs", "subs",
	"batch", "seconds", "msgs_per_s", "mb_per_s", "lat_what", "p50_us",
	"p95_us", "p99_us", "max_us", "client_min_mps", "client_avg_mps",
	"client_max_mps", "errors", "client_cpu_s", "server_cpu_s",
}

type run map[string]string

func (r run) num(col string) (float64, bool) {
	v, err := strconv.ParseFloat(r[col], 64)
	return v, err == nil && r[col] != ""
}

type rowDef struct {
	id, item, title string
	lat             bool
	args            string
}

type chart struct{ name, title string }

// contender names one column of the tables: impl-transport.
type contender struct{ key, title string }

var knownContenders = []contender{
	{"rift-quic", "rift QUIC+TLS 1.3"},
	{"riftd-nats-tcp", "riftd-nats TCP"},
	{"riftd-nats-tls", "riftd-nats TCP+TLS 1.3"},
	{"nats-tcp", "NATS TCP"},
	{"nats-tls", "NATS TCP+TLS 1.3"},
}

// sameClientPairs are the ratio columns of riftd's NATS listener against
// nats-server: the same client (nats-load) over the same transport.
var sameClientPairs = [][2]string{
	{"riftd-nats-tcp", "nats-tcp"},
	{"riftd-nats-tls", "nats-tls"},
}

type stats struct {
	med, min, max float64
	n             int
}

func summarize(vals []float64) (stats, bool) {
	if len(vals) == 0 {
		return stats{}, false
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	st := stats{min: s[0], max: s[len(s)-1], n: len(s)}
	if len(s)%2 == 1 {
		st.med = s[len(s)/2]
	} else {
		st.med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return st, true
}

func readCSV(path string) ([]run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = -1
	var header []string
	var out []run
	for {
		rec, err := rd.Read()
		if err != nil {
			break
		}
		// Every tool writes the header into a fresh file; tolerate repeats.
		if len(rec) > 0 && rec[0] == "impl" {
			header = rec
			continue
		}
		if header == nil {
			// A file begun by a tool that skipped the header: the
			// contract fixes the order.
			header = contractColumns
		}
		r := run{}
		for i, h := range header {
			if i < len(rec) {
				r[h] = rec[i]
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func readRows(path string) ([]rowDef, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []rowDef
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "\t")
		if len(p) < 5 {
			continue
		}
		rows = append(rows, rowDef{p[0], p[1], p[2], p[3] == "yes", p[4]})
	}
	return rows, sc.Err()
}

type report struct {
	charts      []chart // written by plots, linked by markdown
	runs        []run
	rows        []rowDef
	stanRows    []rowDef // stan-*: their own table (stanMarkdown)
	contenders  []contender
	byLabelCont map[string][]run
}

// The columns of the NATS Streaming table: riftd's STAN service (stan-load)
// and its peer, JetStream through nats-load over plain TCP.
const (
	stanKey      = "riftd-stan-tcp"
	stanPeerKey  = "nats-tcp"
	stanTitle    = "riftd STAN TCP"
	stanPeerName = "JetStream TCP"
)

func newReport(runs []run, rows []rowDef) *report {
	rp := &report{runs: runs, byLabelCont: map[string][]run{}}
	labels := map[string]bool{}
	for _, r := range runs {
		labels[r["label"]] = true
	}
	// Rows nobody measured (left out with --rows) stay out of the tables.
	for _, rd := range rows {
		if labels[rd.id] && strings.HasPrefix(rd.id, "stan-") {
			rp.stanRows = append(rp.stanRows, rd)
		} else if labels[rd.id] {
			rp.rows = append(rp.rows, rd)
		}
	}
	seen := map[string]bool{}
	for _, r := range runs {
		if r["impl"] != "rift" && r["impl"] != "nats" && r["impl"] != "riftd-nats" &&
			r["impl"] != "riftd-stan" {
			continue
		}
		k := r["impl"] + "-" + r["transport"]
		rp.byLabelCont[r["label"]+"|"+k] = append(rp.byLabelCont[r["label"]+"|"+k], r)
		// riftd-stan has a table of its own, not a column in the others.
		if r["impl"] != "riftd-stan" {
			seen[k] = true
		}
	}
	// Known contenders always get a column (rift reads n/a until it runs).
	for _, c := range knownContenders {
		rp.contenders = append(rp.contenders, c)
		delete(seen, c.key)
	}
	var extra []string
	for k := range seen {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		rp.contenders = append(rp.contenders, contender{k, k})
	}
	return rp
}

// title is a contender's column title.
func (rp *report) title(key string) string {
	for _, c := range rp.contenders {
		if c.key == key {
			return c.title
		}
	}
	return key
}

func (rp *report) values(label, cont, col string) []float64 {
	var v []float64
	for _, r := range rp.byLabelCont[label+"|"+cont] {
		if x, ok := r.num(col); ok {
			v = append(v, x)
		}
	}
	return v
}

// cpuPerMillion is (client + server CPU seconds) per million messages of
// each run; runs without a server figure count the client only.
func (rp *report) cpuPerMillion(label, cont string) []float64 {
	var v []float64
	for _, r := range rp.byLabelCont[label+"|"+cont] {
		m, ok1 := r.num("msgs")
		c, ok2 := r.num("client_cpu_s")
		if !ok1 || !ok2 || m <= 0 {
			continue
		}
		if s, ok := r.num("server_cpu_s"); ok {
			c += s
		}
		v = append(v, c/m*1e6)
	}
	return v
}

func (rp *report) lost(label, cont string) int64 {
	var n int64
	for _, r := range rp.byLabelCont[label+"|"+cont] {
		e, _ := strconv.ParseInt(r["errors"], 10, 64)
		n += e
	}
	return n
}

func fmtRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0f k", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtUs(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func cell(st stats, ok bool, f func(float64) string) string {
	if !ok {
		return "n/a"
	}
	if st.n == 1 {
		return "**" + f(st.med) + "**"
	}
	return fmt.Sprintf("**%s** (%s–%s)", f(st.med), f(st.min), f(st.max))
}

func ratio(a, b stats, okA, okB bool) string {
	if !okA || !okB || b.med == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a.med/b.med)
}

// metricLine is one table line: a row and the column it reports.
type metricLine struct {
	row   rowDef
	col   string
	unit  string
	title string
	f     func(float64) string
}

func (rp *report) lines() []metricLine {
	var out []metricLine
	for _, rd := range rp.rows {
		out = append(out, metricLine{rd, "msgs_per_s", "msg/s", rd.title, fmtRate})
		if rd.lat {
			what := "round trip"
			if strings.HasPrefix(rd.args, "stream") {
				what = "publish→ack"
			}
			out = append(out,
				metricLine{rd, "p50_us", "µs", rd.title + ": " + what + " p50", fmtUs},
				metricLine{rd, "p99_us", "µs", rd.title + ": " + what + " p99", fmtUs})
		}
	}
	return out
}

func (rp *report) markdown(env []string) string {
	var b strings.Builder
	w := func(format string, a ...interface{}) { fmt.Fprintf(&b, format, a...) }
	rounds := "?"
	for _, e := range env {
		if strings.HasPrefix(e, "rounds: ") {
			rounds = strings.TrimPrefix(e, "rounds: ")
		}
	}
	w("### This run\n\n| | |\n|---|---|\n")
	for _, e := range env {
		if k, v, ok := strings.Cut(e, ": "); ok {
			w("| %s | %s |\n", k, strings.ReplaceAll(v, "|", "\\|"))
		}
	}
	w("\n### Results (median of %s alternating rounds, min–max in brackets)\n\n", rounds)
	w("Throughput rows: ratio > 1 means rift is faster. Latency rows (µs): ratio > 1 means rift is slower.\n\n")
	w("| # | workload | unit |")
	for _, c := range rp.contenders {
		w(" %s |", c.title)
	}
	nats := []contender{}
	for _, c := range rp.contenders {
		if strings.HasPrefix(c.key, "nats-") {
			nats = append(nats, c)
		}
	}
	for _, c := range nats {
		w(" rift / %s |", c.title)
	}
	for _, p := range sameClientPairs {
		w(" %s / %s |", rp.title(p[0]), rp.title(p[1]))
	}
	w("\n|---|---|---|")
	for range rp.contenders {
		w("---|")
	}
	for range nats {
		w("---|")
	}
	for range sameClientPairs {
		w("---|")
	}
	w("\n")
	var notes []string
	for _, ml := range rp.lines() {
		w("| %s | %s | %s |", ml.row.item, ml.title, ml.unit)
		rift, okR := summarize(rp.values(ml.row.id, "rift-quic", ml.col))
		for _, c := range rp.contenders {
			st, ok := summarize(rp.values(ml.row.id, c.key, ml.col))
			mark := ""
			if ml.col == "msgs_per_s" {
				if n := rp.lost(ml.row.id, c.key); n > 0 {
					mark = fmt.Sprintf(" [%d]", len(notes)+1)
					notes = append(notes, fmt.Sprintf("[%d] %s, %s: %d messages lost or failed over all rounds (see runs.log).",
						len(notes)+1, ml.row.id, c.title, n))
				}
			}
			w(" %s%s |", cell(st, ok, ml.f), mark)
		}
		for _, c := range nats {
			st, ok := summarize(rp.values(ml.row.id, c.key, ml.col))
			w(" %s |", ratio(rift, st, okR, ok))
		}
		for _, p := range sameClientPairs {
			a, okA := summarize(rp.values(ml.row.id, p[0], ml.col))
			b, okB := summarize(rp.values(ml.row.id, p[1], ml.col))
			w(" %s |", ratio(a, b, okA, okB))
		}
		w("\n")
	}
	for _, n := range notes {
		w("\n%s\n", n)
	}
	for _, e := range env {
		if strings.HasPrefix(e, "NATS synced rows: ") {
			w("\n%s.\n", e)
		}
	}

	w("\n### CPU seconds per million messages (client + server, median)\n\n| # | workload |")
	for _, c := range rp.contenders {
		w(" %s |", c.title)
	}
	w("\n|---|---|")
	for range rp.contenders {
		w("---|")
	}
	w("\n")
	for _, rd := range rp.rows {
		w("| %s | %s |", rd.item, rd.title)
		for _, c := range rp.contenders {
			st, ok := summarize(rp.cpuPerMillion(rd.id, c.key))
			w(" %s |", cell(stats{med: st.med, n: 1}, ok, func(v float64) string { return fmt.Sprintf("%.2f", v) }))
		}
		w("\n")
	}

	w("\n### Ceilings of this machine, measured in the same run\n\n| ceiling | result |\n|---|---|\n")
	for _, r := range rp.runs {
		switch r["impl"] {
		case "udp":
			v, _ := r.num("msgs_per_s")
			mb, _ := r.num("mb_per_s")
			w("| UDP loopback, %s B datagrams, %s (1 sender → 1 receiver thread) | **%s pkt/s** (%.1f Gbit/s) |\n",
				r["size"], strings.TrimPrefix(r["transport"], "loopback-"), fmtRate(v), mb*8/1e3)
		case "disk":
			v, _ := r.num("msgs_per_s")
			w("| %s B append + fdatasync, one thread, data directory's filesystem | **%.0f ops/s**, p50 %s µs, p99 %s µs |\n",
				r["size"], v, r["p50_us"], r["p99_us"])
		case "wake":
			how := "eventfd in epoll (a post to a loop thread)"
			if r["transport"] == "udp" {
				how = "64 B UDP datagram on loopback, receiver in epoll (one process's loop to another's)"
			}
			p50, _ := r.num("p50_us")
			w("| thread wake-up, %s: ping-pong between two threads | round trip p50 **%s µs** (one hand-off %.1f µs), p99 %s µs |\n",
				how, r["p50_us"], p50/2, r["p99_us"])
		}
	}
	b.WriteString(rp.stanMarkdown())
	if len(rp.charts) > 0 {
		w("\n### Charts\n\n")
		for _, c := range rp.charts {
			w("![%s](perf/%s.svg)\n\n", c.title, c.name)
		}
	}
	return b.String()
}

// ---- gnuplot inputs ----

func (rp *report) present(label string) []contender {
	var out []contender
	for _, c := range rp.contenders {
		if len(rp.byLabelCont[label+"|"+c.key]) > 0 {
			out = append(out, c)
		}
	}
	return out
}

const svgTerm = `set terminal svg size 900,480 dynamic enhanced font "sans,11" background rgb "white"`

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `'`) + `"` }

func median(v []float64) float64 {
	st, ok := summarize(v)
	if !ok {
		return math.NaN()
	}
	return st.med
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// throughputBySize plots the pub-only rows against message size.
func (rp *report) throughputBySize(dir string) error {
	type pt struct {
		size  int
		label string
	}
	var pts []pt
	for _, rd := range rp.rows {
		if !strings.HasPrefix(rd.args, "pub ") {
			continue
		}
		for _, r := range rp.runs {
			if r["label"] == rd.id {
				s, _ := strconv.Atoi(r["size"])
				pts = append(pts, pt{s, rd.id})
				break
			}
		}
	}
	if len(pts) == 0 {
		return nil
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].size < pts[j].size })
	var conts []contender
	for _, c := range rp.contenders {
		for _, p := range pts {
			if len(rp.byLabelCont[p.label+"|"+c.key]) > 0 {
				conts = append(conts, c)
				break
			}
		}
	}
	var d strings.Builder
	d.WriteString("# size")
	for _, c := range conts {
		d.WriteString("\t" + c.key + "_msgs\t" + c.key + "_mb")
	}
	d.WriteString("\n")
	for _, p := range pts {
		d.WriteString(strconv.Itoa(p.size))
		for _, c := range conts {
			d.WriteString("\t" + num(median(rp.values(p.label, c.key, "msgs_per_s"))))
			d.WriteString("\t" + num(median(rp.values(p.label, c.key, "mb_per_s"))))
		}
		d.WriteString("\n")
	}
	var g strings.Builder
	g.WriteString(svgTerm + "\nset output 'throughput-size.svg'\n")
	g.WriteString("set multiplot layout 1,2 title 'Publish only, 1 publisher: throughput against message size (median)'\n")
	g.WriteString("set logscale xy\nset grid\nset key bottom left\nset xlabel 'message size (bytes)'\nset xtics (16, 64, 256, 1024, 4096)\n")
	for panel, unit := range []string{"messages/s", "MB/s"} {
		if panel == 1 {
			g.WriteString("set key top left\n")
		}
		g.WriteString("set ylabel '" + unit + "'\nplot ")
		for i, c := range conts {
			if i > 0 {
				g.WriteString(", ")
			}
			fmt.Fprintf(&g, "'throughput-size.dat' using 1:%d with linespoints lw 2 pt 7 title %s", 2+2*i+panel, quote(c.title))
		}
		g.WriteString("\n")
	}
	g.WriteString("unset multiplot\n")
	if err := os.WriteFile(filepath.Join(dir, "throughput-size.dat"), []byte(d.String()), 0o644); err != nil {
		return err
	}
	rp.charts = append(rp.charts, chart{"throughput-size", "Publish-only throughput against message size"})
	return os.WriteFile(filepath.Join(dir, "throughput-size.gp"), []byte(g.String()), 0o644)
}

// histogram writes a clustered bar chart: one cluster per x label, one bar
// per contender.
func (rp *report) histogram(dir, name, title, ylabel string, log bool, xs []string, conts []contender,
	val func(x int, c contender) float64) error {
	if len(xs) == 0 || len(conts) == 0 {
		return nil
	}
	var d strings.Builder
	d.WriteString("x")
	for _, c := range conts {
		d.WriteString("\t" + quote(c.title))
	}
	d.WriteString("\n")
	for i, x := range xs {
		d.WriteString(quote(x))
		for _, c := range conts {
			d.WriteString("\t" + num(val(i, c)))
		}
		d.WriteString("\n")
	}
	var g strings.Builder
	g.WriteString(svgTerm + "\nset output '" + name + ".svg'\n")
	g.WriteString("set title " + quote(title) + "\nset ylabel " + quote(ylabel) + "\n")
	g.WriteString("set style data histogram\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n")
	g.WriteString("set boxwidth 0.9\nset grid ytics\nset key top left\nset yrange [0:*]\n")
	if log {
		g.WriteString("set logscale y\nset yrange [*:*]\n")
	}
	if len(xs) > 4 {
		g.WriteString("set xtics rotate by -30\n")
	}
	g.WriteString("plot ")
	for i := range conts {
		if i > 0 {
			g.WriteString(", ")
		}
		if i == 0 {
			fmt.Fprintf(&g, "'%s.dat' using %d:xtic(1) title columnheader(%d)", name, i+2, i+2)
		} else {
			fmt.Fprintf(&g, "'' using %d title columnheader(%d)", i+2, i+2)
		}
	}
	g.WriteString("\n")
	if err := os.WriteFile(filepath.Join(dir, name+".dat"), []byte(d.String()), 0o644); err != nil {
		return err
	}
	rp.charts = append(rp.charts, chart{name, title})
	return os.WriteFile(filepath.Join(dir, name+".gp"), []byte(g.String()), 0o644)
}

func (rp *report) plots(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, ext := range []string{"gp", "dat", "svg"} {
		old, _ := filepath.Glob(filepath.Join(dir, "*."+ext))
		for _, f := range old {
			os.Remove(f)
		}
	}
	if err := rp.throughputBySize(dir); err != nil {
		return err
	}
	// Every row's throughput.
	var xs []string
	var ids []string
	conts := map[string]contender{}
	for _, rd := range rp.rows {
		p := rp.present(rd.id)
		if len(p) == 0 {
			continue
		}
		xs = append(xs, rd.id)
		ids = append(ids, rd.id)
		for _, c := range p {
			conts[c.key] = c
		}
	}
	var cl []contender
	for _, c := range rp.contenders {
		if _, ok := conts[c.key]; ok {
			cl = append(cl, c)
		}
	}
	if err := rp.histogram(dir, "throughput-rows", "Throughput per workload (median; messages delivered, acked or sent per second)",
		"messages/s (log scale)", true, xs, cl, func(i int, c contender) float64 {
			return median(rp.values(ids[i], c.key, "msgs_per_s"))
		}); err != nil {
		return err
	}
	// Latency percentiles of the latency rows.
	pcts := []string{"p50_us", "p95_us", "p99_us", "max_us"}
	for _, rd := range rp.rows {
		if !rd.lat {
			continue
		}
		p := rp.present(rd.id)
		what := "round trip"
		if strings.HasPrefix(rd.args, "stream") {
			what = "publish → stored ack"
		}
		err := rp.histogram(dir, "latency-"+rd.id, rd.title+" — "+what+" latency (median of rounds)",
			"microseconds (log scale)", true, []string{"p50", "p95", "p99", "max"}, p,
			func(i int, c contender) float64 { return median(rp.values(rd.id, c.key, pcts[i])) })
		if err != nil {
			return err
		}
	}
	return nil
}

func main() {
	csvPath := flag.String("csv", "", "results CSV")
	rowsPath := flag.String("rows", "", "rows.tsv from compare.sh")
	envPath := flag.String("env", "", "env.txt from compare.sh")
	mdPath := flag.String("md", "", "markdown output")
	plotDir := flag.String("plots", "", "directory for gnuplot .gp/.dat files")
	flag.Parse()
	runs, err := readCSV(*csvPath)
	if err == nil && len(runs) == 0 {
		err = fmt.Errorf("%s: no measurements", *csvPath)
	}
	var rows []rowDef
	if err == nil {
		rows, err = readRows(*rowsPath)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "perf-report: %v\n", err)
		os.Exit(1)
	}
	var env []string
	if b, err := os.ReadFile(*envPath); err == nil {
		env = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	rp := newReport(runs, rows)
	if *plotDir != "" {
		if err := rp.plots(*plotDir); err != nil {
			fmt.Fprintf(os.Stderr, "perf-report: %v\n", err)
			os.Exit(1)
		}
	}
	if err := os.WriteFile(*mdPath, []byte(rp.markdown(env)), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "perf-report: %v\n", err)
		os.Exit(1)
	}
}

// fsyncCeiling is the median fdatasync ceiling (ops/s) of the run.
func (rp *report) fsyncCeiling() (stats, bool) {
	var v []float64
	for _, r := range rp.runs {
		if x, ok := r.num("msgs_per_s"); ok && r["impl"] == "disk" {
			v = append(v, x)
		}
	}
	return summarize(v)
}

// stanMarkdown is the NATS Streaming table: riftd's STAN service against
// JetStream and against the fdatasync ceiling, and CPU per million.
func (rp *report) stanMarkdown() string {
	if len(rp.stanRows) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...interface{}) { fmt.Fprintf(&b, format, a...) }
	ceil, okC := rp.fsyncCeiling()
	w("\n### NATS Streaming: riftd's STAN service against JetStream (synced file stores)\n\n")
	w("Throughput: ratio > 1 means riftd STAN is faster; against the fdatasync ceiling, > 1 means more messages than fdatasync calls per second (group commit). Latency (µs): ratio > 1 means riftd STAN is slower.\n\n")
	w("| # | workload | unit | %s | %s | %s / %s | %s / fdatasync | CPU s/M %s | CPU s/M %s |\n",
		stanTitle, stanPeerName, stanTitle, stanPeerName, stanTitle, stanTitle, stanPeerName)
	w("|---|---|---|---|---|---|---|---|---|\n")
	var notes []string
	cpu := func(id, key string) string {
		st, ok := summarize(rp.cpuPerMillion(id, key))
		return cell(stats{med: st.med, n: 1}, ok, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	}
	for _, rd := range rp.stanRows {
		lines := []metricLine{{rd, "msgs_per_s", "msg/s", rd.title, fmtRate}}
		if rd.lat {
			lines = append(lines,
				metricLine{rd, "p50_us", "µs", rd.title + ": publish→ack p50", fmtUs},
				metricLine{rd, "p99_us", "µs", rd.title + ": publish→ack p99", fmtUs})
		}
		for i, ml := range lines {
			a, okA := summarize(rp.values(rd.id, stanKey, ml.col))
			p, okP := summarize(rp.values(rd.id, stanPeerKey, ml.col))
			marks := [2]string{}
			if i == 0 {
				for j, key := range []string{stanKey, stanPeerKey} {
					if n := rp.lost(rd.id, key); n > 0 {
						marks[j] = fmt.Sprintf(" [%d]", len(notes)+1)
						notes = append(notes, fmt.Sprintf("[%d] %s, %s: %d messages lost or failed over all rounds (see runs.log).",
							len(notes)+1, rd.id, []string{stanTitle, stanPeerName}[j], n))
					}
				}
			}
			vsCeil, cpuA, cpuP := "", "", ""
			if i == 0 {
				vsCeil = ratio(a, ceil, okA, okC)
				cpuA, cpuP = cpu(rd.id, stanKey), cpu(rd.id, stanPeerKey)
			}
			w("| %s | %s | %s | %s%s | %s%s | %s | %s | %s | %s |\n", rd.item, ml.title, ml.unit,
				cell(a, okA, ml.f), marks[0], cell(p, okP, ml.f), marks[1], ratio(a, p, okA, okP), vsCeil, cpuA, cpuP)
		}
	}
	for _, n := range notes {
		w("\n%s\n", n)
	}
	return b.String()
}
