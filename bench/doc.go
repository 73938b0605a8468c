// Package bench holds ringwal's end-to-end benchmarks against peers. It is
// its own Go module (github.com/ringwal/ringwal/bench, with a replace of
// the root to ../), so that the peers — NATS, SQLite, client-go, goqite,
// go-datastructures, River, pgx, asynq, go-redis — never enter the module
// graph of a ringwal user.
//
// The benchmarks live in the _test.go files, one per workload:
//
//	W1  in-memory hand-off             BenchmarkW1/<peer>/<P>P<C>C
//	W2  durable enqueue→consume→ack    BenchmarkW2/<peer>/<size>/<P>P4C
//	W3  retry storm                    BenchmarkW3/<peer>/<P>P<C>C
//	W4  restart with a backlog         BenchmarkW4/<peer>/<pending>
//	W5  latency at a fixed offered load BenchmarkW5/<peer>/<rate>
//
// b.N counts messages (W4: restarts), so ns/op is per message; every
// benchmark also reports msgs/s (W4: ms-to-first). W5 ignores b.N (a run
// is its rate × 2 s; run it with -benchtime 1x) and reports latency
// percentiles in µs. The report command
// (./report) runs them all and writes results/. See README.md.
package bench
