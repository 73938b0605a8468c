package ringwal_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringwal/ringwal"
)

// A live engine backed up to a stream, restored into a new directory, and
// opened there with its messages.
func ExampleEngine_Backup() {
	base, _ := os.MkdirTemp("", "ringwal-backup-example")
	defer os.RemoveAll(base)
	e, err := ringwal.Open(filepath.Join(base, "live"), ringwal.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	for _, p := range []string{"a", "b", "c"} {
		if _, err := e.Enqueue(context.Background(), ringwal.Message{Payload: []byte(p)}); err != nil {
			panic(err)
		}
	}

	var backup bytes.Buffer // a file, or an HTTP response, in practice
	info, err := e.Backup(&backup)
	if err != nil {
		panic(err)
	}
	fmt.Println("backed up", info.Messages, "messages")

	if _, err := ringwal.Restore(&backup, filepath.Join(base, "copy")); err != nil {
		panic(err)
	}
	c, err := ringwal.Open(filepath.Join(base, "copy"), ringwal.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	d, _ := c.TryDequeue()
	fmt.Println("the copy holds", c.Stats().Pending+c.Stats().Leased, "messages, the first:", string(d.Message.Payload))
	// Output:
	// backed up 3 messages
	// the copy holds 3 messages, the first: a
}
