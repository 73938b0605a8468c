package ringwal_test

import (
	"log"
	"os"
	"time"

	"github.com/ringwal/ringwal"
	"github.com/ringwal/ringwal/clock"
)

// The examples of one feature each (batches, inspection, expiry) open
// their engine through these two helpers, so that each example's body is
// about its feature. Example and ExampleOpen_durable show the whole
// opening.

// openOnFakeClock opens a memory-only engine with o on a fake clock set to
// the zero time, so that an example's ages and due times print exactly.
// A failure ends the example.
func openOnFakeClock(o ringwal.Options) (*ringwal.Engine, *clock.Fake) {
	fake := clock.NewFake(time.Time{})
	o.Clock = fake
	e, err := ringwal.Open("", o)
	if err != nil {
		log.Fatal(err)
	}
	return e, fake
}

// openInTempDir opens a durable engine with o in a new temporary
// directory. The returned func closes the engine and removes the
// directory. A failure ends the example.
func openInTempDir(o ringwal.Options) (*ringwal.Engine, func()) {
	dir, err := os.MkdirTemp("", "ringwal-example")
	if err != nil {
		log.Fatal(err)
	}
	e, err := ringwal.Open(dir, o)
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return e, func() {
		e.Close()
		os.RemoveAll(dir)
	}
}
