package wal

// Writeback of the tail segment in Write and Buffered modes.
//
// tidwall/wal fsyncs a segment before it switches to the next one
// (segment.go), on the writer, inside the write that fills it. In Fsync
// mode that fsync finds almost nothing dirty. In Write and Buffered
// modes, which never fsync otherwise, it finds the whole segment dirty
// and holds the writer, and every Append waiting for a write(2) waits
// behind it. With 16 MiB segments this (and tidwall/wal's in-memory copy
// of the tail growing by copying: see Options.SegmentSize) was Write
// mode's end-to-end p99 on the 2-core VM of bench/results: 20–50 ms at
// 100k msgs/s offered (W5).
//
// So, as RocksDB's bytes_per_sync does, the writer asks the kernel to
// start writing the tail back every writebackBytes it writes
// (sync_file_range(SYNC_FILE_RANGE_WRITE), which starts the I/O without
// waiting for it), on a goroutine of its own so that the writer never
// waits for it; the switch's fsync then finds about writebackBytes dirty.
// It adds no I/O (every byte is fsynced at the switch anyway, only
// earlier) and promises nothing: it is not an fsync, a failure is ignored
// here, and the switch's fsync, through tidwall/wal's own descriptor,
// still reports it. Elsewhere than Linux it does nothing: the only
// portable call would be an fsync, whose error could not be ignored
// (writer.go's syncLog says why).

// writebackBytes is how much the writer writes to the tail before it
// starts the kernel's writeback of it: a quarter of a segment.
func (l *Log) writebackBytes() int { return max(l.opt.SegmentSize/4, 64<<10) }

// writebackJob is a range of one segment file to write back.
type writebackJob struct {
	path   string
	off, n int64
}

// startWriteback starts the writeback goroutine, in the modes that
// need it. Open calls it before the writer starts.
func (l *Log) startWriteback() {
	if l.opt.Mode == Fsync {
		return
	}
	l.wbJobs = make(chan writebackJob, 1)
	l.wbDone = make(chan struct{})
	go l.writebackLoop(l.wbJobs, l.wbDone)
}

// noteWritten is the writer having written the tail up to l.tailSize:
// once writebackBytes gathered since the last job, it hands the range to
// the writeback goroutine, unless that one is still busy (the range then
// grows until it is free). The writer only, or whoever writes in its
// place (writeBatch's callers; in Fsync mode, which has no writeback,
// stand-ins).
func (l *Log) noteWritten() {
	if l.wbJobs == nil {
		return
	}
	if l.wbIndex != l.tailIndex || l.tailSize < l.wbFrom {
		// A new tail (a switch, or a checkpoint's rewrite of it): from
		// its start.
		l.wbIndex, l.wbFrom = l.tailIndex, 0
	}
	if l.tailSize-l.wbFrom < l.writebackBytes() {
		return
	}
	select {
	case l.wbJobs <- writebackJob{path: l.tailPath(), off: int64(l.wbFrom), n: int64(l.tailSize - l.wbFrom)}:
		l.wbFrom = l.tailSize
	default:
	}
}

// stopWriteback stops the writeback goroutine and waits for it. Writer's
// shutdown only.
func (l *Log) stopWriteback() {
	if l.wbJobs != nil {
		close(l.wbJobs)
		<-l.wbDone
		l.wbJobs = nil
	}
}

// writebackLoop is the writeback goroutine: Open starts it (startWriteback)
// and the writer's shutdown stops it. It opens the segment for each job
// rather than keep a descriptor: a checkpoint may replace or remove the
// file meanwhile, and one open per MiB written costs nothing.
func (l *Log) writebackLoop(jobs <-chan writebackJob, done chan<- struct{}) {
	defer close(done)
	for j := range jobs {
		f, err := openToSync(j.path)
		if err != nil {
			continue // gone (a checkpoint truncated it): nothing to write back
		}
		if writeback(f, j.off, j.n) == nil {
			l.wbRuns.Add(1)
		}
		_ = f.Close()
	}
}
