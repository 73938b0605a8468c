package classify_test

import (
	"fmt"
	"time"

	"github.com/ringwal/ringwal/classify"
)

// A retry schedule written down as "1 s, 2 s, 4 s, 8 s with ±10 % jitter"
// is one policy: four retries after the first delivery, each delay drawn
// within 10 % of the schedule's. Give it to the engine per category with
// Options.Policies.
func ExampleRetryPolicy_proportionalJitter() {
	p := classify.RetryPolicy{
		MaxAttempts:    5, // deliveries: the first and four retries
		Base:           time.Second,
		Multiplier:     2,
		Jitter:         classify.ProportionalJitter,
		JitterFraction: 0.10,
	}
	for attempt := 1; p.ShouldRetry(attempt, 0); attempt++ {
		d := p.Backoff(attempt, 0)
		v := time.Second << (attempt - 1)
		fmt.Printf("after failure %d: %v ±10%%: %v\n", attempt, v, d >= v*9/10 && d <= v*11/10)
	}
	// Output:
	// after failure 1: 1s ±10%: true
	// after failure 2: 2s ±10%: true
	// after failure 3: 4s ±10%: true
	// after failure 4: 8s ±10%: true
}
