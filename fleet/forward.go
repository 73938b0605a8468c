package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/ringwal/ringwal"
)

// Forwarding. Each peer (an owner's Advertise URL) has a queue of calls
// and a few senders; a sender takes every call queued at that moment, up
// to ForwardBatch messages, and sends them as one request, so concurrent
// forwards to one owner share a request: under load the batches grow by
// themselves, as the log's group commit does.

const sendersPerPeer = 4

type fwdCall struct {
	shard int
	msgs  []ringwal.Message
	res   []result
	done  chan struct{}
}

type peer struct {
	node, url string
	calls     chan *fwdCall
}

// peerFor returns node's peer, starting its senders the first time.
func (m *Member) peerFor(node string) (*peer, error) {
	url, ok := m.view.advertise(node)
	if !ok {
		return nil, fmt.Errorf("%w: fleet: member %s is not in the view", errUnreachable, node)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.peers[node]; p != nil && p.url == url {
		return p, nil
	}
	if m.ctx.Err() != nil {
		return nil, ErrClosed
	}
	p := &peer{node: node, url: url, calls: make(chan *fwdCall, 1024)}
	m.peers[node] = p // a replaced peer's senders end with the member
	for range sendersPerPeer {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.send(p) }()
	}
	return p, nil
}

// forward enqueues msgs for shard n on node, the shard's owner.
func (m *Member) forward(ctx context.Context, node string, n int, msgs []ringwal.Message) []result {
	fail := func(err error) []result {
		out := make([]result, len(msgs))
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	p, err := m.peerFor(node)
	if err != nil {
		return fail(err)
	}
	c := &fwdCall{shard: n, msgs: msgs, done: make(chan struct{})}
	select {
	case p.calls <- c:
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-m.ctx.Done():
		return fail(ErrClosed)
	}
	select {
	case <-c.done:
		m.stats.forwarded.Add(uint64(len(msgs)))
		return c.res
	case <-ctx.Done():
		return fail(ctx.Err()) // the request goes on; its outcome is unknown
	case <-m.ctx.Done():
		return fail(ErrClosed)
	}
}

// send is one of p's senders: it runs until the member's ctx ends.
func (m *Member) send(p *peer) {
	for {
		var batch []*fwdCall
		select {
		case <-m.ctx.Done():
			return
		case c := <-p.calls:
			batch = append(batch, c)
		}
		n := len(batch[0].msgs)
	more:
		for n < m.o.ForwardBatch {
			select {
			case c := <-p.calls:
				batch = append(batch, c)
				n += len(c.msgs)
			default:
				break more
			}
		}
		m.post(p, batch)
	}
}

// post sends batch as one request and hands each call its results.
func (m *Member) post(p *peer, batch []*fwdCall) {
	req := wireEnqueue{Groups: make([]wireGroup, len(batch))}
	for i, c := range batch {
		req.Groups[i] = wireGroup{Shard: c.shard, Messages: c.msgs}
	}
	var resp wireEnqueued
	err := m.call(m.ctx, p.url, "/fleet/v1/enqueue", req, &resp)
	if err == nil && len(resp.Groups) != len(batch) {
		err = fmt.Errorf("%w: fleet: %s answered %d groups for %d", errUnreachable, p.node, len(resp.Groups), len(batch))
	}
	m.stats.forwardRequests.Add(1)
	for i, c := range batch {
		c.res = make([]result, len(c.msgs))
		for j := range c.res {
			switch {
			case err != nil:
				c.res[j].Err = err
			case j >= len(resp.Groups[i]):
				c.res[j].Err = fmt.Errorf("%w: fleet: %s answered too few results", errUnreachable, p.node)
			default:
				w := resp.Groups[i][j]
				c.res[j] = result{ID: w.ID, Epoch: w.Epoch, Err: codeErr(w.Code, w.Error, p.node)}
			}
		}
		close(c.done)
	}
}

// call POSTs (or, with a nil body, GETs) path on base and decodes the
// JSON answer into out. A failed call's error wraps the sentinel of its
// code, or errUnreachable when there was no answer to read.
func (m *Member) call(ctx context.Context, base, path string, body, out any) error {
	method := http.MethodGet
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%w: fleet: %w", ringwal.ErrInvalid, err)
		}
		method, rd = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return fmt.Errorf("%w: fleet: %w", errUnreachable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+m.o.Token)
	}
	resp, err := m.o.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: fleet: %w", errUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%w: fleet: reading %s%s: %w", errUnreachable, base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var we wireError
		if json.Unmarshal(b, &we) == nil && we.Code != "" {
			return codeErr(we.Code, we.Error, base)
		}
		return fmt.Errorf("%w: fleet: %s%s: %s", errUnreachable, base, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%w: fleet: decoding %s%s: %w", errUnreachable, base, path, err)
	}
	return nil
}
