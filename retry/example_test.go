package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpledger/mcpledger/retry"
)

// A server busy with the same key answers -31002 with retryAfterMs: Do waits
// at least that long and sends the call again; a failure that is not
// transient stops the loop.
func ExampleDo() {
	busy := retry.ServerError(retry.CodeInProgress, retry.ReasonInProgress, "operation in progress", 20*time.Millisecond)
	policy := &retry.Policy{
		InitialInterval: time.Millisecond,
		OnRetry: func(err error, next time.Duration, attempt int) {
			fmt.Printf("attempt %d: %v (%s), waiting at least 20ms: %v\n",
				attempt, retry.Reason(err), retry.Classify(err), next >= 20*time.Millisecond)
		},
	}
	err := retry.Do(context.Background(), policy, func(ctx context.Context, attempt int) error {
		if attempt < 3 {
			return busy
		}
		fmt.Printf("attempt %d: executed\n", attempt)
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// attempt 1: in_progress (transient), waiting at least 20ms: true
	// attempt 2: in_progress (transient), waiting at least 20ms: true
	// attempt 3: executed
	// err: <nil>
}

func ExampleClassify() {
	keyReused := retry.ServerError(retry.CodeKeyReused, retry.ReasonKeyReused, "key bound to other arguments", 0)
	fmt.Println(retry.Classify(keyReused))
	fmt.Println(retry.Classify(context.DeadlineExceeded))
	fmt.Println(retry.Classify(retry.ServerError(retry.CodeOutcomeUnknown, retry.ReasonOutcomeUnknown, "unknown", 0)))
	// Output:
	// permanent
	// ambiguous
	// unknown
}
