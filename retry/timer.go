package retry

import "time"

// Timer waits between attempts: Start arms it for d, C fires once d has
// passed, Stop disarms it. Tests give Do one that fires at once.
type Timer interface {
	Start(d time.Duration)
	Stop()
	C() <-chan time.Time
}

// Clock tells the time for MaxElapsed.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
