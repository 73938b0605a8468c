package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringwal/ringwal"
)

// Members under fault run as child processes: the test binary again,
// with FLEET_CHILD set, so that kill -9, SIGSTOP and SIGCONT hit a whole
// member (its engines, its lease renewals, its flocks) as they would in
// production. A child serves its Handler on its port, runs a consumer
// that appends each delivered payload to its deliveries file (one
// write(2) per delivery, which a SIGKILL keeps), and closes on SIGTERM.

func TestMain(m *testing.M) {
	if os.Getenv("FLEET_CHILD") != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

func childMain() int {
	env := func(k string) string { return os.Getenv("FLEET_CHILD_" + k) }
	ttl, _ := time.ParseDuration(env("TTL"))
	shards, _ := strconv.Atoi(env("SHARDS"))
	cl, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(env("ETCD"), ","), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: etcd:", err)
		return 2
	}
	defer cl.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:"+env("PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: listen:", err)
		return 2
	}
	out, err := os.OpenFile(env("OUT"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: deliveries file:", err)
		return 2
	}
	defer out.Close()
	o := Options{
		Etcd: cl, Cluster: env("CLUSTER"), Node: env("NODE"), Dir: env("DIR"), Shards: shards,
		LeaseTTL: ttl, Token: "secret", Advertise: "http://" + ln.Addr().String(),
		Engine:     ringwal.Options{Durability: ringwal.Write},
		HTTPClient: &http.Client{Timeout: 2 * time.Second},
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	m, err := Join(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: join:", err)
		return 2
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- m.Run(runCtx, 4, func(_ context.Context, d ringwal.Delivery) error {
			_, err := out.Write(append(append([]byte{}, d.Message.Payload...), '\n'))
			return err
		})
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	stopRun()
	<-ran
	err = m.Close()
	_ = srv.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: close:", err)
		return 1
	}
	return 0
}

// child is a member process.
type child struct {
	node, url, out string
	cmd            *exec.Cmd
	exited         chan struct{}
}

type childSpec struct {
	etcd          []string
	cluster, dir  string
	shards        int
	ttl           time.Duration
	logs, outputs string // directories
}

func startChild(t *testing.T, s childSpec, node string) *child {
	t.Helper()
	port := freePort(t)
	c := &child{node: node, url: fmt.Sprintf("http://127.0.0.1:%d", port), out: filepath.Join(s.outputs, node+".delivered"), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), "FLEET_CHILD=1",
		"FLEET_CHILD_ETCD="+strings.Join(s.etcd, ","), "FLEET_CHILD_CLUSTER="+s.cluster, "FLEET_CHILD_NODE="+node,
		"FLEET_CHILD_DIR="+s.dir, "FLEET_CHILD_PORT="+strconv.Itoa(port), "FLEET_CHILD_OUT="+c.out,
		"FLEET_CHILD_TTL="+s.ttl.String(), "FLEET_CHILD_SHARDS="+strconv.Itoa(s.shards))
	logf, err := os.Create(filepath.Join(s.logs, node+".log"))
	require.NoError(t, err)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); logf.Close(); close(c.exited) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
		<-c.exited
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("%s's log (tail):\n%s", node, b)
		}
	})
	return c
}

func (c *child) signal(s syscall.Signal) { _ = c.cmd.Process.Signal(s) }

// stop asks the child to close (a clean leave) and waits for it.
func (c *child) stop(t *testing.T) {
	c.signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not close", c.node)
	}
}

var testClient = &http.Client{Timeout: 2 * time.Second}

func authed(method, url string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer secret")
	return testClient.Do(req)
}

type childStatus struct {
	Node  string `json:"node"`
	Owned []int  `json:"owned"`
	Stats Stats  `json:"stats"`
}

// status asks the child what it serves; ok false if it does not answer.
func (c *child) status() (childStatus, bool) {
	resp, err := authed(http.MethodGet, c.url+"/fleet/v1/status", nil)
	if err != nil {
		return childStatus{}, false
	}
	defer resp.Body.Close()
	var s childStatus
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&s) != nil {
		return childStatus{}, false
	}
	return s, true
}

// cover reports whether cs serve every shard between them, once each,
// and returns who serves what.
func cover(cs []*child, shards int) (map[int]string, bool) {
	by := map[int]string{}
	for _, c := range cs {
		s, ok := c.status()
		if !ok {
			return nil, false
		}
		for _, n := range s.Owned {
			if _, dup := by[n]; dup {
				return by, false
			}
			by[n] = c.node
		}
	}
	return by, len(by) == shards
}

// producer enqueues unique payloads through the live children and keeps
// what was acknowledged, with the epoch that acknowledged it and when the
// answer came.
type producer struct {
	mu      sync.Mutex
	targets []*child
	acked   map[string]ack
	seq     int
	sent    int
}

type ack struct {
	id    ID
	epoch int64
	at    time.Time
}

func newProducer(targets []*child) *producer {
	return &producer{targets: append([]*child{}, targets...), acked: map[string]ack{}}
}

func (p *producer) setTargets(cs []*child) {
	p.mu.Lock()
	p.targets = append([]*child{}, cs...)
	p.mu.Unlock()
}

// once sends one request of n messages to a random target (or to, if set).
func (p *producer) once(to *child, n int) {
	p.mu.Lock()
	if to == nil {
		to = p.targets[rand.IntN(len(p.targets))]
	}
	msgs := make([]ringwal.Message, n)
	for i := range msgs {
		p.seq++
		msgs[i] = ringwal.Message{Key: "k" + strconv.Itoa(p.seq%64), Payload: []byte("p" + strconv.Itoa(p.seq))}
	}
	p.sent += n
	p.mu.Unlock()
	body, _ := json.Marshal(wireEnqueue{Groups: []wireGroup{{Shard: -1, Messages: msgs}}})
	resp, err := authed(http.MethodPost, to.url+"/fleet/v1/enqueue", body)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out wireEnqueued
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Groups) != 1 {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range out.Groups[0] {
		if r.Code == "" && i < len(msgs) {
			p.acked[string(msgs[i].Payload)] = ack{id: r.ID, epoch: r.Epoch, at: now}
		}
	}
}

// run sends until ctx ends, from two goroutines.
func (p *producer) run(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				p.once(nil, 20)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return &wg
}

func (p *producer) ackedSet() map[string]ack {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]ack, len(p.acked))
	for k, v := range p.acked {
		out[k] = v
	}
	return out
}

// delivered reads every child's deliveries: payload -> times delivered.
func delivered(t *testing.T, dir string) map[string]int {
	got := map[string]int{}
	files, err := filepath.Glob(filepath.Join(dir, "*.delivered"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" {
				got[line]++
			}
		}
	}
	return got
}

// lostAndDuplicated is the history's set arithmetic: acknowledged but
// never delivered, and delivered more than once.
func lostAndDuplicated(acked map[string]ack, got map[string]int) (lost []string, dups int) {
	for p := range acked {
		if got[p] == 0 {
			lost = append(lost, p)
		}
	}
	for _, n := range got {
		if n > 1 {
			dups += n - 1
		}
	}
	return lost, dups
}
