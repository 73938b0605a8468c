// Package servers finds and starts the database servers some bench peers
// need: PostgreSQL (River's riverpgxv5 peer) and Redis (asynq's peers).
// Each runs from a temporary directory on a free loopback port, started by
// the benchmark process itself; when a server's binaries are absent, Start
// returns an error wrapping ErrNotInstalled that says how to install them,
// and the benchmark skips that peer.
package servers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// ErrNotInstalled is wrapped by Start functions whose server binaries are
// not on this machine.
var ErrNotInstalled = errors.New("not installed")

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPong waits until the Redis server at addr answers PING with PONG
// (polling every 2 ms: W4 times a restart through this wait).
func waitPong(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = ping(addr); err == nil {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("redis at %s not ready after %v: %w", addr, d, err)
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if string(buf[:n]) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// Postgres is a running PostgreSQL cluster in a temporary directory.
type Postgres struct {
	Port int
	dir  string
	bin  string
	user *user.User // non-nil when the server runs as another user (we are root)
}

// URL is a connection URL for database db on p (trust authentication, no TLS).
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// pgBin finds the directory holding initdb and pg_ctl: Debian's
// /usr/lib/postgresql/<version>/bin (the newest), else $PATH.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("postgresql: initdb and pg_ctl %w (apt-get install postgresql)", ErrNotInstalled)
}

// command runs name from p's bin directory, as p.user when set (PostgreSQL
// refuses to run as root).
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if p.user != nil {
		return exec.Command("runuser", append([]string{"-u", p.user.Username, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// StartPostgres initialises a cluster in a new temporary directory and
// starts it on a free loopback port with the server's default durability
// (fsync on, synchronous_commit on) and max_connections 200. When the
// process runs as root, the cluster belongs to and runs as the user
// nobody. Stop it with Stop.
func StartPostgres() (*Postgres, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ringwal-bench-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("postgresql must run as a non-root user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		p.user = u
	}
	fail := func(what string, err error, out []byte) (*Postgres, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("postgresql %s: %w: %s", what, err, out)
	}
	data := filepath.Join(dir, "data")
	if out, err := p.command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return fail("initdb", err, out)
	}
	if p.Port, err = freePort(); err != nil {
		return fail("port", err, nil)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", p.Port, dir)
	if out, err := p.command("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return fail("start", err, append(out, log...))
	}
	return p, nil
}

// Stop stops the server (fast shutdown) and removes its directory.
func (p *Postgres) Stop() error {
	out, err := p.command("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	os.RemoveAll(p.dir)
	if err != nil {
		return fmt.Errorf("postgresql stop: %w: %s", err, out)
	}
	return nil
}

// Redis is a running redis-server.
type Redis struct {
	Addr string
	Dir  string
	cmd  *exec.Cmd
}

// RedisBinary reports redis-server's path, or an error wrapping
// ErrNotInstalled.
func RedisBinary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server %w (apt-get install redis-server)", ErrNotInstalled)
	}
	return p, nil
}

// StartRedis starts redis-server on a free loopback port with its data in
// dir (a new temporary directory when dir is ""): the append-only file on,
// synced as appendfsync says ("everysec" or "always"), RDB snapshots off.
// A server started on the directory of a stopped one loads its
// append-only file before it accepts connections.
func StartRedis(dir, appendfsync string) (*Redis, error) {
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ringwal-bench-redis-"); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", appendfsync, "--save", "", "--daemonize", "no",
		"--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	r := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, cmd: cmd}
	// Redis listens while it loads its append-only file, answering
	// -LOADING until it is done: wait for a PONG.
	if err := waitPong(r.Addr, 5*time.Minute); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Stop stops the server (SIGTERM: it flushes its append-only file) and
// waits for it; the directory stays (RemoveAll it, or start on it again).
func (r *Redis) Stop() error {
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(time.Minute):
		r.cmd.Process.Kill()
		return <-done
	}
}
