// Command report runs the bench module's workloads (W1–W5) with go test
// -bench -json, prints a table of every peer's throughput and its ratio to
// ringwal and W5's latencies, and writes results/results.md,
// results/chart.svg, results/latency.svg and results/bench.txt (the raw
// benchmark lines, benchstat's format).
//
// Run it from the bench directory:
//
//	go run ./report                       # the full run (about 16 minutes on 2 cores)
//	go run ./report -benchtime 200ms -w4time 1x -short   # a quick look
//	go run ./report -from results/bench.txt              # re-render saved results
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		benchtime = flag.String("benchtime", "1s", "-benchtime for W1, W2 and W3")
		w4time    = flag.String("w4time", "3x", "-benchtime for W4 (restarts)")
		count     = flag.Int("count", 3, "runs per benchmark (W1–W3: separate go test runs); the report takes the median")
		short     = flag.Bool("short", false, "pass -short (W4 restarts with 10,000 pending instead of 1,000,000)")
		only      = flag.String("bench", "", "run only benchmarks matching this -bench pattern (default: all five workloads)")
		out       = flag.String("out", "results", "directory for results.md, chart.svg, latency.svg and bench.txt")
		from      = flag.String("from", "", "parse this saved benchmark output (bench.txt or go test -json) instead of running")
		rev       = flag.String("rev", "", "the repository revision measured (default: git rev-parse --short HEAD)")
		w5        = flag.Bool("w5", true, "run W5 (latency under a fixed offered load) after W1–W4, at 10/50/80 % of the capacities they measured")
	)
	flag.Parse()
	revision = *rev
	runW5 = *w5
	if err := run(*benchtime, *w4time, *count, *short, *only, *out, *from); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

// revision overrides the measured revision (-rev).
var revision string

// runW5 is -w5.
var runW5 bool

type invocation struct {
	pattern, benchtime string
	count              int
	env                []string
}

func run(benchtime, w4time string, count int, short bool, only, out, from string) error {
	var lines []string
	var m machineInfo
	started := time.Now()
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		lines = benchLines(b)
		m = machineFrom(b)
	} else {
		m = machine()
		// W1–W3 run as count separate go test invocations, so that the
		// median's samples are minutes apart rather than back to back (a
		// neighbour's burst of disk or CPU use then spoils one sample, not
		// all of them). W4 runs once with -count, to build its stores once.
		var invs []invocation
		for range count {
			invs = append(invs, invocation{"^BenchmarkW[123]$", benchtime, 1, []string{"RINGWAL_BENCH_W2_FIXED=skip"}})
		}
		// asynq's W2 cells need a fixed count (see w2_test.go).
		fixed := "2000x"
		if short {
			fixed = "100x"
		}
		invs = append(invs, invocation{"^BenchmarkW2$/^asynq", fixed, count, nil})
		invs = append(invs, invocation{"^BenchmarkW4$", w4time, count, nil})
		if only != "" {
			invs = []invocation{{only, benchtime, count, nil}}
		}
		if only == "" && runW5 {
			// W5 runs last, once (-benchtime 1x: a run is its rate ×
			// its duration), told the capacities W1 and W2 just measured.
			invs = append(invs, invocation{"^BenchmarkW5$", "1x", 1, nil})
		}
		for _, inv := range invs {
			args := []string{"test", "-run", "^$", "-bench", inv.pattern, "-benchtime", inv.benchtime,
				"-count", strconv.Itoa(inv.count), "-timeout", "60m", "-json"}
			if short {
				args = append(args, "-short")
			}
			args = append(args, ".")
			env := inv.env
			cmd := strings.Join(append(slices.Clone(env), "go "+strings.Join(quoteArgs(args), " ")), " ")
			if inv.pattern == "^BenchmarkW5$" {
				c := capacities(parse(lines))
				env = append(env, "RINGWAL_BENCH_W5_CAPACITY="+c)
				cmd = "RINGWAL_BENCH_W5_CAPACITY='" + c + "' " + cmd
			}
			m.Commands = append(m.Commands, cmd)
			got, err := goTest(args, env...)
			if err != nil {
				return err
			}
			lines = append(lines, got...)
		}
		m.Took = time.Since(started).Round(time.Second)
	}
	rs := parse(lines)
	if len(rs) == 0 {
		return fmt.Errorf("no benchmark results")
	}
	tables := buildTables(rs)
	lat := latencyRows(rs)
	md := markdown(tables, m) + latencyMarkdown(lat, rs, tables)
	fmt.Print(md)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if from == "" {
		raw := m.header() + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(out, "bench.txt"), []byte(raw), 0o644); err != nil {
			return err
		}
	}
	if len(lat) > 0 {
		if err := os.WriteFile(filepath.Join(out, "latency.svg"), []byte(latencyChart(lat, m)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, "chart.svg"), []byte(chart(tables, m)), 0o644)
}

// header renders m as benchfmt configuration lines ("key: value"), which
// benchstat reads and machineFrom reads back.
func (m machineInfo) header() string {
	var b strings.Builder
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	kv("date", m.Date)
	kv("go", m.GoVersion)
	kv("nproc", strconv.Itoa(m.NProc))
	kv("cpu", m.CPU)
	kv("kernel", m.Kernel)
	kv("commit", m.Commit)
	if m.Took > 0 {
		kv("took", m.Took.String())
	}
	for _, c := range m.Commands {
		kv("command", c)
	}
	return b.String()
}

// machineFrom reads back what header wrote.
func machineFrom(b []byte) machineInfo {
	var m machineInfo
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch k {
		case "date":
			m.Date = v
		case "go":
			m.GoVersion = v
		case "nproc":
			m.NProc, _ = strconv.Atoi(v)
		case "cpu":
			m.CPU = v
		case "kernel":
			m.Kernel = v
		case "commit":
			m.Commit = v
		case "took":
			m.Took, _ = time.ParseDuration(v)
		case "command":
			m.Commands = append(m.Commands, v)
		}
	}
	return m
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$[]* ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}

// goTest runs go test with -json, echoes the benchmark lines to stderr as
// they come, and returns them.
func goTest(args []string, env ...string) ([]string, error) {
	fmt.Fprintln(os.Stderr, "$", strings.Join(env, " "), "go", strings.Join(quoteArgs(args), " "))
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var all bytes.Buffer
	var failed []string
	dec := json.NewDecoder(stdout)
	var pending string
	for {
		var ev struct {
			Action string
			Output string
		}
		if err := dec.Decode(&ev); err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("reading go test -json: %w", err)
			}
			break
		}
		if ev.Action != "output" {
			continue
		}
		all.WriteString(ev.Output)
		// Echo complete lines that matter.
		pending += ev.Output
		for {
			i := strings.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			line := pending[:i]
			pending = pending[i+1:]
			t := strings.TrimSpace(line)
			if resultLine.MatchString(t) || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "panic:") ||
				strings.Contains(t, "_test.go:") || strings.HasPrefix(t, "FAIL") {
				fmt.Fprintln(os.Stderr, line)
			}
			if strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "panic:") {
				failed = append(failed, t)
			}
		}
	}
	werr := cmd.Wait()
	if werr != nil || len(failed) > 0 {
		return nil, fmt.Errorf("go test failed (%v): %s", werr, strings.Join(failed, "; "))
	}
	return benchLines(all.Bytes()), nil
}

var resultLine = regexp.MustCompile(`^Benchmark\S+\s+\d+\s+[\d.e+]+ ns/op`)

// benchLines extracts the benchmark result lines from go test output,
// plain or -json.
func benchLines(b []byte) []string {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		var text strings.Builder
		dec := json.NewDecoder(bytes.NewReader(b))
		for {
			var ev struct{ Action, Output string }
			if dec.Decode(&ev) != nil {
				break
			}
			if ev.Action == "output" {
				text.WriteString(ev.Output)
			}
		}
		b = []byte(text.String())
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if resultLine.MatchString(t) {
			out = append(out, t)
		}
	}
	return out
}

// result is one benchmark's measurements (the median over -count runs).
type result struct {
	Workload, Peer, Group, Config string
	NsOp, MsgsPerSec, MsToFirst   float64
	Runs                          int
	// Metrics holds every reported metric's median by unit (W5's
	// percentiles among them).
	Metrics map[string]float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(lines []string) []result {
	type acc struct {
		r       result
		ns, mps []float64
		metrics map[string][]float64
	}
	byName := map[string]*acc{}
	var order []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
		if len(parts) < 3 {
			continue
		}
		a := byName[name]
		if a == nil {
			a = &acc{r: result{Workload: parts[0], Peer: parts[1], Config: parts[len(parts)-1]}, metrics: map[string][]float64{}}
			if len(parts) == 4 {
				a.r.Group = parts[2]
			}
			byName[name] = a
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			a.metrics[f[i+1]] = append(a.metrics[f[i+1]], v)
			switch f[i+1] {
			case "ns/op":
				a.ns = append(a.ns, v)
			case "msgs/s":
				a.mps = append(a.mps, v)
			}
		}
	}
	var rs []result
	for _, n := range order {
		a := byName[n]
		a.r.NsOp, a.r.MsgsPerSec = median(a.ns), median(a.mps)
		a.r.Runs = len(a.ns)
		a.r.Metrics = map[string]float64{}
		for k, v := range a.metrics {
			a.r.Metrics[k] = median(v)
		}
		if a.r.Workload == "W4" {
			// ns/op is the time to first delivery: the same as the
			// ms-to-first metric, with more digits.
			a.r.MsToFirst = a.r.NsOp / 1e6
		}
		rs = append(rs, a.r)
	}
	return rs
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// table is one workload (and payload group): rows are configurations,
// columns peers.
type table struct {
	Workload, Group string
	Ref             string // the ringwal column the ratios are taken to
	Peers           []string
	Configs         []string
	Cells           map[[2]string]result // (config, peer)
}

func (t *table) title() string {
	s := t.Workload
	if t.Group != "" {
		s += " " + t.Group
	}
	return s
}

var workloadTitles = map[string]string{
	"W1": "in-memory hand-off, 128 B, P producers / P consumers",
	"W2": "durable enqueue → consume → ack, P producers / 4 consumers",
	"W3": "retry storm: 10 % transient failures, backoff 1ms..10ms, P producers / P workers",
	"W4": "restart: open → first delivery with a backlog",
}

// chartTitles shorten the workloadTitles too long for a chart panel.
var chartTitles = map[string]string{
	"W3": "retry storm, 10 % fail, backoff 1–10 ms, P prod. / P workers",
	"W4": "restart: open → first delivery",
}

func chartTitle(workload string) string {
	if s, ok := chartTitles[workload]; ok {
		return s
	}
	return workloadTitles[workload]
}

func refPeer(workload string) string {
	if workload == "W2" {
		return "ringwal-write"
	}
	return "ringwal"
}

func buildTables(rs []result) []*table {
	var ts []*table
	find := func(w, g string) *table {
		for _, t := range ts {
			if t.Workload == w && t.Group == g {
				return t
			}
		}
		t := &table{Workload: w, Group: g, Ref: refPeer(w), Cells: map[[2]string]result{}}
		ts = append(ts, t)
		return t
	}
	for _, r := range rs {
		if r.Workload == "W5" {
			continue // latencyRows
		}
		t := find(r.Workload, r.Group)
		if !slices.Contains(t.Peers, r.Peer) {
			t.Peers = append(t.Peers, r.Peer)
		}
		cfg := r.Config
		if r.Workload == "W4" {
			cfg = "pending " + r.Config
		}
		if !slices.Contains(t.Configs, cfg) {
			t.Configs = append(t.Configs, cfg)
		}
		t.Cells[[2]string{cfg, r.Peer}] = r
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Workload < ts[j].Workload })
	return ts
}

// ratio is the peer's throughput over ringwal's (W1–W3), or ringwal's time
// over the peer's (W4): above 1, the peer is faster.
func ratio(t *table, cfg, peer string) (float64, bool) {
	ref, ok1 := t.Cells[[2]string{cfg, t.Ref}]
	r, ok2 := t.Cells[[2]string{cfg, peer}]
	if !ok1 || !ok2 {
		return 0, false
	}
	if t.Workload == "W4" {
		if r.MsToFirst == 0 {
			return 0, false
		}
		return ref.MsToFirst / r.MsToFirst, true
	}
	if ref.MsgsPerSec == 0 {
		return 0, false
	}
	return r.MsgsPerSec / ref.MsgsPerSec, true
}

func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f µs", v*1000)
}

type machineInfo struct {
	Date, GoVersion, CPU, Kernel, Commit string
	NProc                                int
	Commands                             []string
	Took                                 time.Duration
}

func machine() machineInfo {
	m := machineInfo{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), NProc: runtime.NumCPU()}
	if b, err := exec.Command("go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("nproc").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			m.NProc = n
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Commit = revision
	if m.Commit == "" {
		if b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
			m.Commit = strings.TrimSpace(string(b))
			if b, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", "..").Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
				m.Commit += " plus uncommitted changes"
			}
		}
	}
	return m
}

func markdown(ts []*table, m machineInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ringwal bench results\n\n")
	fmt.Fprintf(&b, "Measured %s on `%s`, %d CPUs (`nproc`), %s, %s", m.Date, m.CPU, m.NProc, m.GoVersion, m.Kernel)
	if m.Commit != "" {
		fmt.Fprintf(&b, ", repository at %s", m.Commit)
	}
	fmt.Fprintf(&b, ".\nA shared, noisy machine: expect ±20 %% between runs; read orders of magnitude, not digits.\n\n")
	if len(m.Commands) > 0 {
		fmt.Fprintf(&b, "Produced by `go run ./report` in `bench/`")
		if m.Took > 0 {
			fmt.Fprintf(&b, " (%v)", m.Took)
		}
		fmt.Fprintf(&b, ", which ran:\n\n```\n%s\n```\n\n", strings.Join(collapse(m.Commands), "\n"))
	}
	fmt.Fprintf(&b, "Cells are throughput in messages per second (W4: time from open to first delivery) and, in brackets, the ratio to ringwal: the peer's throughput over ringwal's, or for W4 ringwal's time over the peer's. **Above 1× the peer is faster, below 1× ringwal is.** W2's reference is ringwal in Write mode, the durability the peers offer; ringwal Fsync is listed too. See the bench README for what each workload does and what is held equal.\n\n")
	for _, t := range ts {
		fmt.Fprintf(&b, "## %s — %s\n\n", t.title(), workloadTitles[t.Workload])
		fmt.Fprintf(&b, "| |")
		for _, p := range t.Peers {
			fmt.Fprintf(&b, " %s |", p)
		}
		fmt.Fprintf(&b, "\n|---|")
		for range t.Peers {
			fmt.Fprintf(&b, "---:|")
		}
		fmt.Fprintf(&b, "\n")
		for _, c := range t.Configs {
			fmt.Fprintf(&b, "| %s |", c)
			for _, p := range t.Peers {
				r, ok := t.Cells[[2]string{c, p}]
				if !ok {
					fmt.Fprintf(&b, " – |")
					continue
				}
				var v string
				if t.Workload == "W4" {
					v = ms(r.MsToFirst)
				} else {
					v = si(r.MsgsPerSec) + "/s"
				}
				if p != t.Ref {
					if x, ok := ratio(t, c, p); ok {
						v += fmt.Sprintf(" (%s×)", ratioText(x))
					}
				}
				fmt.Fprintf(&b, " %s |", v)
			}
			fmt.Fprintf(&b, "\n")
		}
		fmt.Fprintf(&b, "\n")
	}
	fmt.Fprintf(&b, "![throughput against producers](chart.svg)\n\n")
	return b.String()
}

// collapse writes a run of identical commands once, with its count.
func collapse(cmds []string) []string {
	var out []string
	for i := 0; i < len(cmds); {
		j := i
		for j < len(cmds) && cmds[j] == cmds[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s    # %d times", cmds[i], j-i))
		} else {
			out = append(out, cmds[i])
		}
		i = j
	}
	return out
}

func ratioText(x float64) string {
	switch {
	case x >= 10:
		return fmt.Sprintf("%.0f", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2f", x)
	case x >= 0.01:
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.4f", x)
}

// ---- chart ----------------------------------------------------------------
