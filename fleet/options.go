package fleet

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ringwal/ringwal"
)

// Options configure Join. The zero value of every field but Etcd, Cluster,
// Node, Dir and Advertise is sensible; defaults are filled in one place
// (fill) and checked in another (validate), as the root's Options are.
type Options struct {
	// Etcd is the client the member coordinates through. The member does
	// not close it.
	Etcd *clientv3.Client
	// Cluster is the fleet's name; its keys live under /ringwal/<Cluster>/.
	// 1 to 128 bytes of letters, digits, '.', '_' and '-'.
	Cluster string
	// Node is this member's name, unique in the fleet (as Cluster). A
	// member restarted under the same name is the same member to other
	// members' routing, but a new owner: it wins shards afresh.
	Node string
	// Shards is the number of shards, fixed when the fleet is created and
	// kept in etcd; a member that asks for another count is refused
	// (ErrInvalid). 0 takes the fleet's count, or 16 for a new fleet.
	// At most 1000.
	Shards int
	// Dir holds the shard directories, Dir/shard-NNN, and beside each its
	// owner file Dir/shard-NNN.owner. Every member that may own a shard
	// must see the same files: a shared volume.
	Dir string
	// Engine is each shard engine's options. Durability must be Write or
	// Fsync (Buffered acknowledges before the log writer can ask the
	// fence), and Fence must be nil: the member sets it.
	Engine ringwal.Options
	// LeaseTTL is the member's etcd lease: a member that stops renewing is
	// replaced about this long after its last renewal. Whole seconds (a
	// fraction is rounded up), at least 2 s; 0 = 10 s.
	LeaseTTL time.Duration
	// FenceMargin is how long before its lease could expire a member stops
	// acknowledging: it acknowledges nothing for its shards once
	// LeaseTTL - FenceMargin passed since it sent the last renewal etcd
	// confirmed. 0 = LeaseTTL/5 but at least 250 ms; less than LeaseTTL/2.
	FenceMargin time.Duration
	// Advertise is the URL other members reach this member's Handler at
	// (http or https, with a host).
	Advertise string
	// Token is the bearer token members send each other ("" = none; then
	// anyone who reaches Handler can enqueue).
	Token string
	// HTTPClient forwards to other members; nil = one with a 10 s timeout.
	HTTPClient *http.Client
	// ForwardBatch bounds the messages one forwarded request carries;
	// concurrent forwards to one owner share requests up to it. 0 = 1024.
	ForwardBatch int
	// Logger receives ownership changes and failures; nil discards.
	Logger *slog.Logger

	// onEvent, set by tests, sees every shard opened and closed here.
	onEvent func(event)
}

const (
	defaultShards       = 16
	maxShards           = 1000
	defaultLeaseTTL     = 10 * time.Second
	minLeaseTTL         = 2 * time.Second
	minFenceMargin      = 250 * time.Millisecond
	defaultForwardBatch = 1024
	maxNameLen          = 128
)

// fill sets every zero field to its default. Shards stays 0 here: Join
// takes the fleet's count from etcd (ensureShards).
func (o *Options) fill() {
	if o.LeaseTTL == 0 {
		o.LeaseTTL = defaultLeaseTTL
	}
	if r := o.LeaseTTL % time.Second; r != 0 && o.LeaseTTL > 0 {
		o.LeaseTTL += time.Second - r // etcd grants whole seconds
	}
	if o.FenceMargin == 0 {
		o.FenceMargin = max(o.LeaseTTL/5, minFenceMargin)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
		}}
	}
	if o.ForwardBatch == 0 {
		o.ForwardBatch = defaultForwardBatch
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// validate refuses what cannot work, with an error wrapping ErrInvalid
// that names the field.
func (o *Options) validate() error {
	switch {
	case o.Etcd == nil:
		return invalidf("Options.Etcd is nil")
	case o.Dir == "":
		return invalidf("Options.Dir is empty: shards need directories every member can reach")
	case o.Shards < 0 || o.Shards > maxShards:
		return invalidf("Options.Shards %d is out of range 0 to %d", o.Shards, maxShards)
	case o.LeaseTTL < minLeaseTTL:
		return invalidf("Options.LeaseTTL %v is below %v", o.LeaseTTL, minLeaseTTL)
	case o.FenceMargin < 0 || o.FenceMargin >= o.LeaseTTL/2:
		return invalidf("Options.FenceMargin %v is out of range 0 to LeaseTTL/2 (%v)", o.FenceMargin, o.LeaseTTL/2)
	case o.ForwardBatch < 0:
		return invalidf("Options.ForwardBatch %d is negative", o.ForwardBatch)
	case o.Engine.Durability == ringwal.Buffered:
		return invalidf("Options.Engine.Durability Buffered: a shard acknowledges before its log writer could ask the fence; use Write or Fsync")
	case o.Engine.Fence != nil:
		return invalidf("Options.Engine.Fence is set: the member sets each shard's fence")
	}
	if err := checkName("Options.Cluster", o.Cluster); err != nil {
		return err
	}
	if err := checkName("Options.Node", o.Node); err != nil {
		return err
	}
	u, err := url.Parse(o.Advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidf("Options.Advertise %q is not an http or https URL with a host", o.Advertise)
	}
	return nil
}

// checkName refuses a name that is empty, too long, or holds a byte that
// would change the meaning of an etcd key or a path ('/' above all).
func checkName(field, s string) error {
	if s == "" || len(s) > maxNameLen {
		return invalidf("%s %q must be 1 to %d bytes", field, s, maxNameLen)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}); i >= 0 {
		return invalidf("%s %q holds %q: only letters, digits, '.', '_' and '-'", field, s, s[i])
	}
	return nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: fleet: %s", ringwal.ErrInvalid, fmt.Sprintf(format, args...))
}
