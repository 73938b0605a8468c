package ring

import "sync/atomic"

type atomicCounter struct{ v atomic.Int64 }

func (c *atomicCounter) add(n int64) { c.v.Add(n) }
func (c *atomicCounter) load() int64 { return c.v.Load() }
