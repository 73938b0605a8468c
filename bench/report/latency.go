package main

// W5's part of the report: the latency table, the figures the issue and
// the seeds set against what was measured, the latency chart, and the
// capacities W5's relative rates are taken from.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// w5Order is the order W5's peers are listed in.
var w5Order = []string{"chan", "ringwal-memory", "ringwal-write", "ringwal-fsync", "jetstream", "jetstream-sync",
	"goqite", "river-sqlite", "river-postgres", "asynq-everysec", "asynq-always"}

// durability says what each W5 peer's acknowledged enqueue survives.
var durability = map[string]string{
	"chan":           "nothing (no queue: the floor)",
	"ringwal-memory": "nothing (memory)",
	"ringwal-write":  "a killed process",
	"ringwal-fsync":  "power loss",
	"jetstream":      "a killed process",
	"jetstream-sync": "power loss",
	"goqite":         "a killed process",
	"river-sqlite":   "power loss",
	"river-postgres": "power loss",
	"asynq-everysec": "a killed process (≤ 1 s to power loss)",
	"asynq-always":   "power loss",
}

// capacities is RINGWAL_BENCH_W5_CAPACITY for the results so far: each
// W2 peer's 128 B 64P4C throughput, and ringwal-memory's and chan's W1
// 4P4C.
func capacities(rs []result) string {
	var kv []string
	for _, r := range rs {
		switch {
		case r.Workload == "W2" && r.Group == "128B" && r.Config == "64P4C":
			kv = append(kv, fmt.Sprintf("%s=%.0f", r.Peer, r.MsgsPerSec))
		case r.Workload == "W1" && r.Peer == "ringwal" && r.Config == "4P4C":
			kv = append(kv, fmt.Sprintf("ringwal-memory=%.0f", r.MsgsPerSec))
		case r.Workload == "W1" && r.Peer == "chan" && r.Config == "4P4C":
			kv = append(kv, fmt.Sprintf("chan=%.0f", r.MsgsPerSec))
		}
	}
	return strings.Join(kv, ",")
}

// latencyRow is one W5 run.
type latencyRow struct {
	Peer, Rate string
	Offered    float64
	r          result
}

func (l latencyRow) m(k string) float64 { return l.r.Metrics[k] }

func (l latencyRow) sustained() bool { return l.m("sustained") == 1 }

// latencyRows are the W5 results, by peer (w5Order) and offered rate.
func latencyRows(rs []result) []latencyRow {
	var out []latencyRow
	for _, r := range rs {
		if r.Workload != "W5" {
			continue
		}
		out = append(out, latencyRow{Peer: r.Peer, Rate: r.Config, Offered: r.Metrics["offered-msgs/s"], r: r})
	}
	rank := func(p string) int {
		if i := slices.Index(w5Order, p); i >= 0 {
			return i
		}
		return -1 // fsync-floor first
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := rank(out[i].Peer), rank(out[j].Peer); a != b {
			return a < b
		}
		return out[i].Offered < out[j].Offered
	})
	return out
}

// us renders a latency in µs.
func us(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f s", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0f ms", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1f ms", v/1e3)
	case v >= 10:
		return fmt.Sprintf("%.0f µs", v)
	}
	return fmt.Sprintf("%.1f µs", v)
}

// find is the W5 row of peer at rate (a rate name: 1k, 10pct, …).
func find(rows []latencyRow, peer, rate string) (latencyRow, bool) {
	for _, l := range rows {
		if l.Peer == peer && l.Rate == rate {
			return l, true
		}
	}
	return latencyRow{}, false
}

func latencyMarkdown(rows []latencyRow, rs []result, ts []*table) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## W5 — latency under a fixed offered load, 128 B, 4 consumers\n\n")
	fmt.Fprintf(&b, "Open-loop producers send message i at start + i/rate whatever the peer answers; every latency is taken from that intended send time (no coordinated omission). *e2e*: intended send → the handler starts; *enqueue*: intended send → the enqueue call returns. HDR histograms (3 significant digits). A rate named *N pct* is N %% of the peer's W2 capacity measured above (128 B, 64P4C; ringwal-memory and chan: W1 4P4C). *Sustained* is no when a send returned over 1 s late: the run then stopped offering, and its percentiles are of a peer that could not keep up. fsync-floor is this machine's write(2)+fsync(2) of 128 B on the same file system, one at a time (its columns are per call); *128B-beside-16-yielders* is the same beside 16 goroutines yielding in a loop, as W5's producers do while they wait for their slots: on 2 vCPUs the thread back from fsync(2) then waits for a CPU, the floor a durable peer meets under this load. chan is no queue at all: a buffered Go channel with 4 goroutines receiving, under the same producers; its tail is what this machine's scheduler (2 vCPUs, shared) costs any in-process peer.\n\n")
	fmt.Fprintf(&b, "| peer | survives | rate | offered | achieved | sustained | e2e p50 | e2e p99 | e2e p99.9 | e2e max | enq p50 | enq p99 | enq p99.9 | enq max |\n")
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range rows {
		if l.Peer == "fsync-floor" {
			fmt.Fprintf(&b, "| fsync-floor | – | %s | – | %s/s | – | %s | %s | %s | %s | – | – | – | – |\n",
				l.Rate, si(l.r.MsgsPerSec), us(l.m("e2e-p50-us")), us(l.m("e2e-p99-us")), us(l.m("e2e-p99.9-us")), us(l.m("e2e-max-us")))
			continue
		}
		sus := "yes"
		if !l.sustained() {
			sus = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s/s | %s/s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			l.Peer, durability[l.Peer], l.Rate, si(l.Offered), si(l.r.MsgsPerSec), sus,
			us(l.m("e2e-p50-us")), us(l.m("e2e-p99-us")), us(l.m("e2e-p99.9-us")), us(l.m("e2e-max-us")),
			us(l.m("enq-p50-us")), us(l.m("enq-p99-us")), us(l.m("enq-p99.9-us")), us(l.m("enq-max-us")))
	}
	fmt.Fprintf(&b, "\n![end-to-end p99 against offered rate](latency.svg)\n\n")
	b.WriteString(figures(rows, ts))
	return b.String()
}

// highestSustained is peer's sustained row at the highest offered rate.
func highestSustained(rows []latencyRow, peer string) (latencyRow, bool) {
	var best latencyRow
	ok := false
	for _, l := range rows {
		if l.Peer == peer && l.sustained() && (!ok || l.Offered > best.Offered) {
			best, ok = l, true
		}
	}
	return best, ok
}

// figures is the table of the figures and the seeds' latency
// targets against what this run measured.
func figures(rows []latencyRow, ts []*table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Figures against their targets (this run)\n\n| figure | target | measured | met |\n|---|---|---|---|\n")
	line := func(fig, target, measured string, met bool, known bool) {
		m := "–"
		if known {
			m = map[bool]string{true: "yes", false: "**no**"}[met]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", fig, target, measured, m)
	}
	fs, fok := find(rows, "fsync-floor", "128B")
	// floor names chan's e2e p99 at rate, the machine's own tail.
	floor := func(rate string) string {
		if c, ok := find(rows, "chan", rate); ok {
			return " (chan, no queue: " + us(c.m("e2e-p99-us")) + ")"
		}
		return ""
	}
	if l, ok := find(rows, "ringwal-memory", "1M"); ok && l.sustained() {
		line("ringwal memory, e2e p99 at 1M msgs/s", "< 5 µs", us(l.m("e2e-p99-us"))+floor("1M"), l.m("e2e-p99-us") < 5, true)
	} else if l, ok := highestSustained(rows, "ringwal-memory"); ok {
		why := "1M not run"
		if _, ran := find(rows, "ringwal-memory", "1M"); ran {
			why = "1M not sustained"
		}
		line("ringwal memory, e2e p99 at the highest sustained rate ("+si(l.Offered)+"/s; "+why+")", "< 5 µs", us(l.m("e2e-p99-us")), l.m("e2e-p99-us") < 5, true)
	}
	if l, ok := find(rows, "ringwal-write", "100k"); ok {
		line("ringwal Write, e2e p99 at 100k msgs/s", "< 100 µs", us(l.m("e2e-p99-us"))+sustainedNote(l)+floor("100k"), l.m("e2e-p99-us") < 100, l.sustained())
	}
	if l, ok := find(rows, "ringwal-fsync", "10k"); ok && fok {
		t := 3 * fs.m("e2e-p50-us")
		beside := ""
		if y, ok := find(rows, "fsync-floor", "128B-beside-16-yielders"); ok {
			beside = " (fsync alone beside 16 goroutines yielding as W5's producers do: p50 " + us(y.m("e2e-p50-us")) + ", p99 " + us(y.m("e2e-p99-us")) + ")"
		}
		line("ringwal Fsync, e2e p99 at 10k msgs/s", fmt.Sprintf("< 3 × fsync latency (p50 %s → %s; p99 %s)", us(fs.m("e2e-p50-us")), us(t), us(fs.m("e2e-p99-us"))),
			us(l.m("e2e-p99-us"))+sustainedNote(l)+beside, l.m("e2e-p99-us") < t, l.sustained())
	}
	if l, ok := find(rows, "ringwal-memory", "100k"); ok {
		line("ring design (seed): < 5 µs p95 per operation; here the enqueue call's p50 / p99 at 100k msgs/s (memory)", "< 5 µs p95",
			us(l.m("enq-p50-us"))+" / "+us(l.m("enq-p99-us")), l.m("enq-p99-us") < 5, true)
	}
	for _, peer := range []string{"ringwal-write", "ringwal-fsync"} {
		if l, ok := highestSustained(rows, peer); ok {
			line("SQLite spec (seed): p95 < 50 ms; here "+peer+"'s e2e p99 at "+si(l.Offered)+" msgs/s (its highest sustained)", "< 50 ms p95", us(l.m("e2e-p99-us")), l.m("e2e-p99-us") < 50_000, true)
		}
	}
	for _, peer := range []string{"ringwal-memory", "ringwal-write", "ringwal-fsync"} {
		if l, ok := find(rows, peer, "10k"); ok {
			line("MQTT plan (seed): p99 < 10 ms at 10k msgs/s; "+peer+" e2e", "< 10 ms", us(l.m("e2e-p99-us"))+sustainedNote(l), l.m("e2e-p99-us") < 10_000, l.sustained())
		}
	}
	// Throughput ratios the issue sets.
	for _, t := range ts {
		if t.Workload != "W2" || t.Group != "128B" {
			continue
		}
		ref, ok := t.Cells[[2]string{"64P4C", "ringwal-fsync"}]
		if !ok {
			break
		}
		for _, p := range []struct {
			peer string
			want float64
		}{{"river-sqlite", 10}, {"river-postgres", 10}, {"asynq-always", 5}} {
			if r, ok := t.Cells[[2]string{"64P4C", p.peer}]; ok && r.MsgsPerSec > 0 {
				x := ref.MsgsPerSec / r.MsgsPerSec
				line(fmt.Sprintf("W2 128 B 64P4C: ringwal-fsync (%s/s) over %s (%s/s)", si(ref.MsgsPerSec), p.peer, si(r.MsgsPerSec)),
					fmt.Sprintf("≥ %.0f×", p.want), ratioText(x)+"×", x >= p.want, true)
			}
		}
	}
	for _, t := range ts {
		if t.Workload != "W4" || len(t.Configs) == 0 {
			continue
		}
		cfg := t.Configs[0]
		ref, ok := t.Cells[[2]string{cfg, "ringwal"}]
		for _, peer := range []string{"river-sqlite", "river-postgres"} {
			if r, ok2 := t.Cells[[2]string{cfg, peer}]; ok && ok2 && r.MsToFirst > 0 {
				x := ref.MsToFirst / r.MsToFirst
				line(fmt.Sprintf("W4 %s: ringwal's time to first delivery (%s) over %s's (%s)", cfg, ms(ref.MsToFirst), peer, ms(r.MsToFirst)),
					"≤ 0.5×", ratioText(x)+"×", x <= 0.5, true)
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

func sustainedNote(l latencyRow) string {
	if l.sustained() {
		return ""
	}
	return " (not sustained)"
}

// latencyChart plots each peer's e2e p99 against the offered rate
// (log-log), the fsync floor's p50 and p99 as horizontal lines.
func latencyChart(rows []latencyRow, m machineInfo) string {
	const w, h = 900, 560
	const px, py, pw, ph = 80, 60, 560, 420
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">W5 — end-to-end p99 latency against offered rate (open loop, log–log; hollow: not sustained)</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s · %s · %d CPUs · %s · shared, noisy machine</text>`+"\n", esc(m.Date), esc(m.CPU), m.NProc, esc(m.GoVersion))
	var xs, ys []float64
	for _, l := range rows {
		if l.Peer != "fsync-floor" {
			xs = append(xs, l.Offered)
		} else {
			ys = append(ys, l.m("e2e-p50-us"))
		}
		ys = append(ys, l.m("e2e-p99-us"))
	}
	xlo, xhi := logBounds(xs)
	ylo, yhi := logBounds(ys)
	xOf := func(v float64) float64 { return px + (math.Log10(v)-xlo)/(xhi-xlo)*pw }
	yOf := func(v float64) float64 { return py + ph - (math.Log10(v)-ylo)/(yhi-ylo)*ph }
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
	for e := xlo; e <= xhi; e++ {
		x := xOf(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", x, py, x, py+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", x, py+ph+14, si(math.Pow(10, e)))
	}
	for e := ylo; e <= yhi; e++ {
		y := yOf(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", px, y, px+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", px-4, y+4, us(math.Pow(10, e)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">offered msgs/s</text>`+"\n", px+pw/2, py+ph+30)
	fmt.Fprintf(&b, `<text x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle" fill="#333">e2e p99 (intended send → handler)</text>`+"\n", py+ph/2, py+ph/2)
	var peers []string
	for _, l := range rows {
		if !slices.Contains(peers, l.Peer) {
			peers = append(peers, l.Peer)
		}
	}
	ly := py
	for _, p := range peers {
		var pts []string
		var dots []string
		for _, l := range rows {
			if l.Peer != p {
				continue
			}
			v := l.m("e2e-p99-us")
			if p == "fsync-floor" {
				lines := []struct {
					k, name string
				}{{"e2e-p50-us", "p50"}, {"e2e-p99-us", "p99"}}
				if l.Rate != "128B" { // beside yielders: its p99 only
					lines = lines[1:]
					lines[0].name = "p99 " + strings.TrimPrefix(l.Rate, "128B-")
				}
				for _, q := range lines {
					y := yOf(l.m(q.k))
					fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000" stroke-dasharray="5,4"/>`+"\n", px, y, px+pw, y)
					fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#000">fsync %s %s</text>`+"\n", px+4, y-3, q.name, us(l.m(q.k)))
				}
				continue
			}
			if v <= 0 || l.Offered <= 0 {
				continue
			}
			x, y := xOf(l.Offered), yOf(v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fill := color(p)
			if !l.sustained() {
				fill = "white"
			}
			dots = append(dots, fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s"/>`, x, y, fill, color(p)))
		}
		if p == "fsync-floor" {
			continue
		}
		width := 1.8
		if strings.HasPrefix(p, "ringwal") {
			width = 3
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"/>`+"\n", strings.Join(pts, " "), color(p), width)
		b.WriteString(strings.Join(dots, "\n") + "\n")
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/>`+"\n", px+pw+20, ly+6, color(p))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", px+pw+40, ly+11, esc(p))
		ly += 18
	}
	b.WriteString("</svg>\n")
	return b.String()
}
