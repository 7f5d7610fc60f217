// Package gctest helps tests show that code keeps nothing it should have
// let go: they hold weak pointers to what must be freed and ask how many
// are still reachable once the collector has had its chance.
package gctest

import (
	"runtime"
	"time"
	"weak"
)

// Kept collects until every pointer in ps is gone or d has passed, and
// returns how many are still reachable. Objects can stay reachable a
// little after the code that used them returned (a goroutine finishing
// its work, a session ending in goroutines of its own), so one collection
// right away would not prove anything either way.
func Kept[T any](d time.Duration, ps []weak.Pointer[T]) int {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		runtime.GC()
		kept := 0
		for _, p := range ps {
			if p.Value() != nil {
				kept++
			}
		}
		if kept == 0 || time.Now().After(deadline) {
			return kept
		}
		<-tick.C
	}
}
