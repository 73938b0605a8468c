package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/cwriter"
	"github.com/vbauerster/mpb/v8/decor"
)

// board is the demo's live display of one act: a time bar and a few text
// lines. On a terminal it is drawn with mpb and refreshed in place; on
// anything else (a pipe, a file, CI) it prints a compact line at a fixed
// interval instead, so logs stay readable. Events (a breaker opening, the
// SIGKILL) are printed as lines of their own in both modes.
//
// set, event and finish must be called from one goroutine.
type board struct {
	w     io.Writer
	tty   bool
	total time.Duration
	start time.Time
	width int

	// Terminal mode.
	p       *mpb.Progress
	timeBar *mpb.Bar
	bars    []*mpb.Bar
	mu      sync.Mutex // guards lines, read by mpb's render goroutine
	lines   []string

	// Plain mode.
	every     time.Duration
	lastPrint time.Duration
	compact   string
}

// newBoard starts a board titled title for an act of the given length with
// n text lines. plainEvery is the plain mode's print interval.
func newBoard(w io.Writer, title string, total time.Duration, n int, plainEvery time.Duration) *board {
	b := &board{w: w, tty: isTerminal(w), total: total, start: time.Now(), every: plainEvery, lines: make([]string, n)}
	if !b.tty {
		fmt.Fprintf(w, "%s (%s)\n", title, dur(total))
		return b
	}
	b.width = 100
	if f, ok := w.(*os.File); ok {
		if width, _, err := cwriter.GetSize(int(f.Fd())); err == nil && width > 20 {
			b.width = width - 1
		}
	}
	b.p = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(120*time.Millisecond), mpb.WithWidth(min(b.width, 100)))
	// The time bar is built with no total, which leaves its completion to
	// finish alone: mpb completes a bar built with a total only when its
	// current reaches that total, and ignores SetTotal on it, so an act
	// that ends early (the crash act stops once recovery is checked, well
	// before its length) would leave it running and Wait would never
	// return. Its total is set right after, for the filler.
	b.timeBar = b.p.New(0,
		mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding("-").Rbound("]"),
		mpb.PrependDecorators(decor.Name(title, decor.WC{W: len(title) + 1, C: decor.DindentRight})),
		mpb.AppendDecorators(decor.Any(func(s decor.Statistics) string {
			return fmt.Sprintf(" %5.1fs / %.1fs", float64(s.Current)/1000, total.Seconds())
		})),
	)
	b.timeBar.SetTotal(total.Milliseconds(), false)
	for i := 0; i < n; i++ {
		i := i
		bar := b.p.New(0, mpb.NopStyle(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.lines[i]
		})))
		b.bars = append(b.bars, bar)
	}
	return b
}

// elapsed is the time since the board started.
func (b *board) elapsed() time.Duration { return time.Since(b.start) }

// set replaces the text lines (terminal) and the compact line (plain), and
// prints the compact line if its interval has passed.
func (b *board) set(lines []string, compact string) {
	el := b.elapsed()
	if b.tty {
		b.mu.Lock()
		for i := range b.lines {
			if i < len(lines) {
				b.lines[i] = clip(lines[i], b.width)
			}
		}
		b.mu.Unlock()
		b.timeBar.SetCurrent(min(el, b.total).Milliseconds())
		return
	}
	b.compact = compact
	if el-b.lastPrint >= b.every {
		b.lastPrint = el
		fmt.Fprintf(b.w, "[%5.1fs] %s\n", el.Seconds(), compact)
	}
}

// event prints one line about something that happened.
func (b *board) event(line string) {
	text := fmt.Sprintf("[%5.1fs] %s\n", b.elapsed().Seconds(), line)
	if b.tty {
		_, _ = b.p.Write([]byte(text))
		return
	}
	_, _ = io.WriteString(b.w, text)
}

// finish draws the final state and stops the display; in plain mode it
// prints the compact line unless it is empty. Whether or not the act
// used its whole length, every bar was built with no total, so
// SetTotal(-1, true) completes each where it stands and Wait returns.
func (b *board) finish(lines []string, compact string) {
	if !b.tty {
		if compact != "" {
			fmt.Fprintf(b.w, "[%5.1fs] %s\n", b.elapsed().Seconds(), compact)
		}
		return
	}
	b.set(lines, compact)
	b.timeBar.SetTotal(-1, true)
	for _, bar := range b.bars {
		bar.SetTotal(-1, true)
	}
	b.p.Wait()
}

// clip cuts s to width runes so a line never wraps (which would break the
// in-place redraw).
func clip(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:width-1]), " ") + "…"
}
