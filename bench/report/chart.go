package main

// The throughput chart (chart.svg): one panel per workload.

import (
	"fmt"
	"math"
	"strings"
)

var palette = map[string]string{
	"ringwal":             "#d62728",
	"ringwal-write":       "#d62728",
	"ringwal-fsync":       "#ff9896",
	"ringwal-batch":       "#a50f15",
	"ringwal-write-batch": "#a50f15",
	"ringwal-fsync-batch": "#fcbba1",
	"chan":                "#1f77b4",
	"workiva-ring":        "#2ca02c",
	"workqueue":           "#9467bd",
	"jetstream":           "#17becf",
	"jetstream-sync":      "#9edae5",
	"goqite":              "#8c564b",
	"sqlite-seed":         "#7f7f7f",
	"ringwal-memory":      "#8b0000",
	"river-sqlite":        "#e377c2",
	"river-postgres":      "#f7b6d2",
	"asynq-everysec":      "#ff7f0e",
	"asynq-always":        "#ffbb78",
	"fsync-floor":         "#000000",
}

func color(p string) string {
	if c, ok := palette[p]; ok {
		return c
	}
	return "#bcbd22"
}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

const (
	panelW, panelH = 400, 320
	cols           = 3
	marginL        = 62
	marginR        = 16
	marginT        = 44
	marginB        = 92
)

func chart(ts []*table, m machineInfo) string {
	n := len(ts)
	rows := (n + cols - 1) / cols
	w, h := cols*panelW, rows*panelH+50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="15" font-weight="bold">ringwal vs peers — throughput against producers (log scale; W4: time to first delivery)</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s · %s · %d CPUs · %s · shared, noisy machine</text>`+"\n", esc(m.Date), esc(m.CPU), m.NProc, esc(m.GoVersion))
	for i, t := range ts {
		x0, y0 := (i%cols)*panelW, 50+(i/cols)*panelH
		if t.Workload == "W4" {
			barPanel(&b, t, x0, y0)
		} else {
			linePanel(&b, t, x0, y0)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func producers(cfg string) string {
	if i := strings.IndexByte(cfg, 'P'); i > 0 {
		return cfg[:i]
	}
	return cfg
}

func logBounds(vals []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v <= 0 {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	lo, hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func linePanel(b *strings.Builder, t *table, x0, y0 int) {
	pw, ph := panelW-marginL-marginR, panelH-marginT-marginB
	px, py := x0+marginL, y0+marginT
	var vals []float64
	for _, r := range t.Cells {
		vals = append(vals, r.MsgsPerSec)
	}
	lo, hi := logBounds(vals)
	yOf := func(v float64) float64 { return float64(py+ph) - (math.Log10(v)-lo)/(hi-lo)*float64(ph) }
	xOf := func(i int) float64 {
		if len(t.Configs) == 1 {
			return float64(px + pw/2)
		}
		return float64(px) + 20 + float64(i)*float64(pw-40)/float64(len(t.Configs)-1)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+10, y0+18, esc(t.title()))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", x0+10, y0+32, esc(shorten(chartTitle(t.Workload), 64)))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
	for e := lo; e <= hi; e++ {
		y := yOf(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", px, y, px+pw, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", px-4, y+4, si(math.Pow(10, e)))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" transform="rotate(-90 %d %d)" text-anchor="middle" fill="#333">msgs/s</text>`+"\n", x0+14, py+ph/2, x0+14, py+ph/2)
	for i, c := range t.Configs {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", xOf(i), py+ph+14, producers(c))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">producers</text>`+"\n", px+pw/2, py+ph+28)
	for _, p := range t.Peers {
		var pts []string
		for i, c := range t.Configs {
			if r, ok := t.Cells[[2]string{c, p}]; ok && r.MsgsPerSec > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(r.MsgsPerSec)))
			}
		}
		width := 1.8
		if strings.HasPrefix(p, "ringwal") {
			width = 3
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"/>`+"\n", strings.Join(pts, " "), color(p), width)
		for _, pt := range pts {
			x, y, _ := strings.Cut(pt, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, color(p))
		}
	}
	legend(b, t.Peers, x0+marginL, py+ph+40)
}

func barPanel(b *strings.Builder, t *table, x0, y0 int) {
	pw, ph := panelW-marginL-marginR, panelH-marginT-marginB
	px, py := x0+marginL, y0+marginT
	cfg := t.Configs[0]
	var vals []float64
	for _, p := range t.Peers {
		vals = append(vals, t.Cells[[2]string{cfg, p}].MsToFirst)
	}
	lo, hi := logBounds(vals)
	lo-- // room for the shortest bar
	xOf := func(v float64) float64 { return float64(px) + (math.Log10(v)-lo)/(hi-lo)*float64(pw) }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0+10, y0+18, esc(t.title()))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", x0+10, y0+32, esc(chartTitle(t.Workload)+", "+cfg))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
	for e := lo; e <= hi; e++ {
		x := xOf(math.Pow(10, e))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e5e5e5"/>`+"\n", x, py, x, py+ph)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", x, py+ph+14, ms(math.Pow(10, e)))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">time from open to first delivery (lower is better)</text>`+"\n", px+pw/2, py+ph+28)
	bh := float64(ph) / float64(len(t.Peers)+1)
	for i, p := range t.Peers {
		v := t.Cells[[2]string{cfg, p}].MsToFirst
		if v <= 0 {
			continue
		}
		y := float64(py) + bh*(float64(i)+0.5)
		fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", px, y, xOf(v)-float64(px), bh*0.7, color(p))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" fill="#000">%s %s</text>`+"\n", px+4, y+bh*0.45, esc(p), ms(v))
	}
}

func legend(b *strings.Builder, peers []string, x, y int) {
	cx, cy := x, y
	for _, p := range peers {
		wd := 22 + 7*len(p)
		if cx+wd > x+panelW-marginL-marginR {
			cx, cy = x, cy+15
		}
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/>`+"\n", cx, cy-4, color(p))
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", cx+16, cy, esc(p))
		cx += wd
	}
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
